"""What a SYCL programmer porting code tries first, end to end on the default device:
the API as DESIGN.md spells it, every USM kind in kernels, dependencies, odd and large
ranges, and the errors users cause."""

import numpy as np
import pytest

import vksycl as sycl
from vksycl.ext.oneapi import experimental as syclexp


def _raises(code: sycl.errc, fn, *args, **kwargs) -> str:
    with pytest.raises(sycl.exception) as err:
        fn(*args, **kwargs)
    assert err.value.code() is code, str(err.value)
    return str(err.value)


# -- kernels that bind no buffer --------------------------------------------------------------

def test_nd_range_kernel_with_an_empty_body_runs(ordered_q):
    out = sycl.malloc_shared(1024, sycl.int32, ordered_q)

    def write(i):
        out[i] = i * 3

    ordered_q.parallel_for(sycl.range(1024), write)
    e = ordered_q.parallel_for(sycl.nd_range((1024,), (64,)), lambda it: ...)
    ordered_q.parallel_for(sycl.range(1024), lambda i: None)
    ordered_q.single_task(lambda: None)
    ordered_q.wait()
    assert e.get_info(sycl.info.event.command_execution_status) is \
        sycl.info.event_command_status.complete
    assert np.array_equal(np.asarray(out), np.arange(1024) * 3)
    sycl.free(out, ordered_q)


def test_kernel_using_only_work_group_memory_runs(q):
    def body(it):
        tile = syclexp.work_group_memory(sycl.int32, (64,))
        tile[it.get_local_id(0)] = it.get_local_id(0)
        sycl.group_barrier(it.get_group())

    e = q.parallel_for(sycl.nd_range((256,), (64,)), body)
    e.wait_and_throw()
    assert e.get_info(sycl.info.event.command_execution_status) is \
        sycl.info.event_command_status.complete
