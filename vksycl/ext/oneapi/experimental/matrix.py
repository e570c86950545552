"""`sycl::ext::oneapi::experimental::matrix` (sycl_ext_oneapi_matrix): re-exports only."""

from ....compiler.matrix import (
    joint_matrix,
    joint_matrix_apply,
    joint_matrix_copy,
    joint_matrix_fill,
    joint_matrix_load,
    joint_matrix_mad,
    joint_matrix_store,
    layout,
    use,
)
from ....info import combination, matrix_type

__all__ = ["combination", "joint_matrix", "joint_matrix_apply", "joint_matrix_copy",
           "joint_matrix_fill", "joint_matrix_load", "joint_matrix_mad", "joint_matrix_store",
           "layout", "matrix_type", "use"]
