"""`sycl::ext::oneapi`: `this_work_item` (free function queries) and the experimental
namespace (`from vksycl.ext.oneapi import experimental as syclexp`)."""

from ...compiler import this_work_item
from . import experimental

__all__ = ["experimental", "this_work_item"]
