"""Kernels the graph fusion tests record: elementwise chains, nd_range kernels with
work-group memory and barriers, neighbour reads, gathers, atomics, device_globals and
virtual calls."""

from __future__ import annotations

import vksycl as sycl
from vksycl.ext.oneapi import experimental as syclexp
from vksycl.ext.oneapi import this_work_item

scale_by = syclexp.device_global(sycl.float32)


def scale(src, dst, s):
    def k(item):
        i = item.get_id(0)
        dst[i] = src[i] * s
    return k


def add(a, b, out):
    def k(item):
        i = item.get_id(0)
        out[i] = a[i] + b[i]
    return k


def axpb(x, a, b):
    def k(item):
        i = item.get_id(0)
        x[i] = x[i] * a + b
    return k


def early_exit(src, dst, limit):
    def k(item):
        i = item.get_id(0)
        if i >= limit:
            return
        dst[i] = src[i] + 1.0
    return k


def neighbour(src, dst):
    def k(item):
        i = item.get_id(0)
        dst[i] = src[i + 1]
    return k


def gather(src, idx, dst):
    def k(item):
        i = item.get_id(0)
        dst[i] = src[idx[i]]
    return k


def count(counter, dst):
    def k(item):
        i = item.get_id(0)
        sycl.atomic_ref(counter).fetch_add(1)
        dst[i] = 1.0
    return k


def tile_reverse(src, dst, wg):
    """nd_range: each work-group reverses its tile through work-group memory."""
    tile = syclexp.work_group_memory(sycl.float32, wg)

    def k(it):
        lid = it.get_local_id(0)
        tile[lid] = src[it.get_global_id(0)]
        sycl.group_barrier(it.get_group())
        dst[it.get_global_id(0)] = tile[it.get_local_range(0) - 1 - lid]
    return k


def nd_scale(src, dst, s):
    def k(it):
        i = it.get_global_id(0)
        dst[i] = src[i] * s
    return k


def group_mirror(src, dst):
    """Reads the element of the mirrored work-item in its own work-group."""
    def k(it):
        g = it.get_group(0)
        wg = it.get_local_range(0)
        dst[it.get_global_id(0)] = src[g * wg + wg - 1 - it.get_local_id(0)] + 1.0
    return k


def with_global(src, dst):
    def k(item):
        i = item.get_id(0)
        dst[i] = src[i] * scale_by.get()
    return k


@sycl.struct
class Shape:
    side: sycl.float32

    @syclexp.indirectly_callable()
    def area(self):
        return self.side * self.side


@sycl.struct
class Circle(Shape):
    @syclexp.indirectly_callable()
    def area(self):
        return self.side * self.side * sycl.float32(3.0)


def virtual_scale(obj, src, dst):
    def k(item):
        i = item.get_id(0)
        dst[i] = src[i] * Shape.at(obj).area()
    return k


@syclexp.nd_range_kernel(1)
def free_scale(src: sycl.ptr[sycl.float32], dst: sycl.ptr[sycl.float32], s: sycl.float32):
    i = this_work_item.get_nd_item(1).get_global_linear_id()
    dst[i] = src[i] * s


@syclexp.nd_range_kernel(1)
def free_accumulate(src: sycl.ptr[sycl.float32], acc: sycl.ptr[sycl.float32],
                    s: sycl.float32):
    i = this_work_item.get_nd_item(1).get_global_linear_id()
    acc[i] = acc[i] + src[i] * s


@syclexp.nd_range_kernel(1)
def free_spin(dst: sycl.ptr[sycl.float32], work: sycl.int32):
    i = this_work_item.get_nd_item(1).get_global_linear_id()
    v = dst[i]
    for _ in range(work):
        v = v * sycl.float32(0.5) + sycl.float32(1.0)
    dst[i] = v
