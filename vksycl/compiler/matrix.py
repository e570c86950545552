"""`sycl_ext_oneapi_matrix` as host objects: `joint_matrix` and the functions over it, which
kernels call and the frontend recognises (`matrix_code` lowers them).

A joint_matrix is a tile held by a whole sub-group: every work-item of the sub-group makes
the same calls with the same arguments. On a device with cooperative matrices the tile is a
SPIR-V cooperative matrix (tensor cores on NVIDIA); elsewhere each work-item holds the
whole tile, so one kernel runs, with the same results, on every Vulkan device.
"""

from __future__ import annotations

import enum

from .device import device_only


class use(enum.Enum):
    """The role of a matrix in `joint_matrix_mad(sg, d, a, b, c)`: d = a * b + c."""

    a = "a"
    b = "b"
    accumulator = "accumulator"


class layout(enum.Enum):
    """How a tile lies in memory. A and B matrices carry theirs in their type; an
    accumulator's (`dynamic`) is given where it is loaded or stored."""

    row_major = 0
    col_major = 1
    dynamic = 3


joint_matrix = device_only(
    "joint_matrix",
    "`joint_matrix(sg, dtype, use, rows, cols[, layout])`: a tile held by the whole sub-"
    "group `sg`; `use` is `use.a`, `use.b` or `use.accumulator`.")
joint_matrix_fill = device_only(
    "joint_matrix_fill",
    "`joint_matrix_fill(sg, m, value)`: sets every element of the tile `m` to `value`.")
joint_matrix_load = device_only(
    "joint_matrix_load",
    "`joint_matrix_load(sg, m, src, stride[, layout])`: loads the tile from a USM "
    "pointer, local memory or an accessor, rows `stride` elements apart (the layout is "
    "given for accumulators).")
joint_matrix_store = device_only(
    "joint_matrix_store",
    "`joint_matrix_store(sg, m, dst, stride, layout)`: stores the tile, rows `stride` "
    "elements apart.")
joint_matrix_mad = device_only(
    "joint_matrix_mad",
    "`joint_matrix_mad(sg, d, a, b, c)`: `d = a @ b + c` over tiles.")
joint_matrix_apply = device_only(
    "joint_matrix_apply",
    "`joint_matrix_apply(sg, m, fn)`: replaces each element `x` of the tile by `fn(x)` (a"
    " function or a lambda).")
joint_matrix_copy = device_only(
    "joint_matrix_copy",
    "`joint_matrix_copy(sg, src, dst)`: copies a tile into another, converting its "
    "elements.")

FUNCTIONS = frozenset(f.__name__ for f in (
    joint_matrix, joint_matrix_fill, joint_matrix_load, joint_matrix_store, joint_matrix_mad,
    joint_matrix_apply, joint_matrix_copy))

__all__ = ["joint_matrix", "joint_matrix_apply", "joint_matrix_copy", "joint_matrix_fill",
           "joint_matrix_load", "joint_matrix_mad", "joint_matrix_store", "layout", "use"]
