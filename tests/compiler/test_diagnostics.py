"""Unsupported constructs are build errors naming the construct, the file and the line
(found here by the marker comment on the offending line)."""

from __future__ import annotations

import numpy as np
import pytest

import vksycl as sycl
from vksycl.ext.oneapi import experimental as syclexp


def marker_line(marker: str) -> int:
    with open(__file__) as f:
        lines = [n for n, text in enumerate(f, 1) if text.rstrip().endswith(f"# {marker}")]
    assert len(lines) == 1, marker
    return lines[0]


def build_error(q, body, launch=None) -> str:
    with pytest.raises(sycl.exception) as info:
        if launch is None:
            q.parallel_for(sycl.range(4), body).wait()
        else:
            q.parallel_for(launch, body).wait()
    assert info.value.code() == sycl.errc.build
    return str(info.value)


def recurse(n):
    if n <= 0:
        return 0
    return recurse(n - 1) + 1  # E:recursion


def ping(n):
    return pong(n - 1)


def pong(n):
    return ping(n) if n > 0 else 0  # E:mutual


def gen(n):
    yield n


def k_try(out):
    def body(i):
        try:  # E:try
            out[i] = 1
        except ValueError:
            out[i] = 2
    return body


def k_raise(out):
    def body(i):
        if i > 2:
            raise ValueError("no")  # E:raise
        out[i] = 1
    return body


def k_with(out):
    def body(i):
        with open("x"):  # E:with
            out[i] = 1
    return body


def k_list(out):
    def body(i):
        xs = [1, 2, 3]  # E:list
        out[i] = xs[0]
    return body


def k_dict(out):
    def body(i):
        out[i] = {"a": 1}["a"]  # E:dict
    return body


def k_comprehension(out):
    def body(i):
        out[i] = sum([k for k in range(3)])  # E:listcomp
    return body


def k_generator_call(out):
    def body(i):
        out[i] = gen(i)  # E:generator
    return body


def k_recursion(out):
    def body(i):
        out[i] = recurse(i)
    return body


def k_mutual(out):
    def body(i):
        out[i] = ping(i)
    return body


def k_string(out):
    def body(i):
        s = "hello"  # E:string
        out[i] = len(s)
    return body


def k_print(out):
    def body(i):
        print(out)  # E:print
        out[i] = 0
    return body


def k_undefined(out):
    def body(i):
        out[i] = undefined_name + 1  # noqa: F821  # E:undefined
    return body


def k_numpy_array(out):
    host = np.zeros(4)

    def body(i):
        out[i] = host[i]  # E:ndarray
    return body


def k_pointer_in_memory(out, ptrs):
    def body(i):
        ptrs[i] = out  # E:store-pointer
    return body


def k_pointer_switch(out):
    def body(i):
        first, second = np.zeros(4, np.int32), np.zeros(4, np.int32)
        p = first
        if i > 1:
            p = second  # E:pointer-switch
        p[0] = 1
        out[i] = first[0]
    return body


def k_lambda(out):
    def body(i):
        f = lambda x: x + 1  # E:lambda
        out[i] = f(i)
    return body


def k_nested_def(out):
    def body(i):
        def inner(x):  # E:nested-def
            return x
        out[i] = inner(i)
    return body


def k_bad_float_bitop(out):
    def body(i):
        out[i] = 1.5 * i & 3  # E:float-bitop
    return body


def k_nd_query_in_range(out):
    def body(it):
        out[it.get_id(0)] = it.get_local_id(0)  # E:nd-only
    return body


def k_global_stmt(out):
    def body(i):
        global GLOBAL_X  # E:global
        out[i] = 1
    return body


def k_while_else(out):
    def body(i):
        k = 0
        while k < 3:  # E:while-else
            k += 1
        else:
            k = 5
        out[i] = k
    return body


def k_assert(out):
    def body(i):
        assert i >= 0, out  # E:assert
        out[i] = 1
    return body


def k_wrong_arity(out):
    def body(i):
        out[i] = min_of_two(i)  # E:arity
    return body


def min_of_two(a, b):
    return min(a, b)


def k_return_value(out):
    def body(i):
        out[i] = 1
        return 5  # E:kernel-return
    return body


CASES = [
    (k_try, "E:try", "try/except"), (k_raise, "E:raise", "raise"), (k_with, "E:with", "with"),
    (k_list, "E:list", "a list"), (k_dict, "E:dict", "a dict"),
    (k_comprehension, "E:listcomp", "list comprehension"),
    (k_generator_call, "E:generator", "generator"), (k_recursion, "E:recursion", "recursion"),
    (k_mutual, "E:mutual", "recursion"), (k_string, "E:string", "strings"),
    (k_print, "E:print", "cannot print a pointer"), (k_undefined, "E:undefined", "undefined_name"),
    (k_numpy_array, "E:ndarray", "numpy array"), (k_lambda, "E:lambda", "lambda"),
    (k_nested_def, "E:nested-def", "nested function"),
    (k_bad_float_bitop, "E:float-bitop", "integers"),
    (k_nd_query_in_range, "E:nd-only", "nd_range"), (k_global_stmt, "E:global", "global"),
    (k_while_else, "E:while-else", "while ... else"), (k_assert, "E:assert", "assertion's message"),
    (k_wrong_arity, "E:arity", "missing argument"),
    (k_return_value, "E:kernel-return", "cannot return a value"),
]


@pytest.mark.parametrize("factory,marker,words", CASES, ids=[c[1] for c in CASES])
def test_unsupported_construct_reports_its_line(q, mem, factory, marker, words):
    out = mem.zeros(4, np.int32)
    message = build_error(q, factory(out))
    assert f"{__file__}:{marker_line(marker)}:" in message, message
    assert words in message, message


def test_pointers_are_not_integers_and_private_arrays_are_not_switched(q, mem):
    # USM pointers are stored where memory holds pointers (tests/compiler/test_pointers.py)
    out = mem.zeros(4, np.int32)
    ptrs = mem.zeros(4, np.int64)
    message = build_error(q, k_pointer_in_memory(out, ptrs))
    assert f":{marker_line('E:store-pointer')}:" in message and "pointer" in message
    message = build_error(q, k_pointer_switch(out))
    assert f":{marker_line('E:pointer-switch')}:" in message and "same memory" in message


def test_column_is_reported(q, mem):
    out = mem.zeros(4, np.int32)
    message = build_error(q, k_print(out))
    line = marker_line("E:print")
    with open(__file__) as f:
        text = f.readlines()[line - 1]
    assert f":{line}:{text.index('print') + 1}:" in message


WORDS_PER_ROW = 4


def k_local_sized_by_captures(out, words: int):
    def body(it):
        tile = syclexp.work_group_memory(sycl.int32, (words * 2,))  # E:captured-size
        tile[it.get_local_id(0)] = 1
        out[it.get_global_id(0)] = tile[it.get_local_id(0)]
    return body


def k_local_sized_by_constants(out, words: int):
    def body(it):
        tile = syclexp.work_group_memory(sycl.int32, (WORDS_PER_ROW * 2,))
        big = syclexp.work_group_memory(sycl.int32, (words,))
        tile[it.get_local_id(0)] = 1
        big[it.get_local_id(0)] = 2
        out[it.get_global_id(0)] = tile[it.get_local_id(0)] + big[it.get_local_id(0)]
    return body


def test_sizes_must_be_constants_and_the_error_says_which_are(q, mem):
    """A local array sized by an expression of captured numbers (kernel arguments) is a
    build error at its line that says what is constant; module constants, expressions of
    them, and a captured number as it is build and run."""
    out = mem.zeros(4, np.int32)
    launch = sycl.nd_range((4,), (4,))
    message = build_error(q, k_local_sized_by_captures(out, 8), launch)
    assert f"{__file__}:{marker_line('E:captured-size')}:" in message, message
    assert "compute it outside the kernel" in message, message
    q.parallel_for(launch, k_local_sized_by_constants(out, 8)).wait()
    assert list(mem.view(out, 4)) == [3] * 4
