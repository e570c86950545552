"""if_device / if_host (seed 002): one function serving host and device, run on the
device (lavapipe here) and in plain Python, and what the compiler keeps and drops."""

from __future__ import annotations

import importlib.util
import linecache
import os
import sys
import textwrap

import numpy as np
import pytest

import vksycl as sycl
from vksycl.compiler import kernel as kernel_cache
from vksycl.compiler.module import KernelSpec
from vksycl.ext.oneapi import experimental as syclexp
from vksycl.ext.oneapi import this_work_item
from vksycl.kernels import cache_keys
from vksycl.kernels.launch import compiled

LOG_PATH = ""  # set by a test: only host bodies name it
HOST_CALLS = 0


@pytest.fixture
def shared(mem):
    """Shared USM holding values: shared(values)."""
    return mem.of


def view(p, n):
    return np.asarray(p)[:n].copy()


# -- the seed's table: each form, on each side ---------------------------------------------

def table(p):
    """Slots: if_device alone (0), if_host alone (1), if_device(2).otherwise(3),
    if_host(4).otherwise(5); += would show a function called twice."""
    def d0():
        p[0] += 1

    def h1():
        p[1] += 1

    def d2():
        p[2] += 1

    def o3():
        p[3] += 1

    def h4():
        p[4] += 1

    def o5():
        p[5] += 1

    syclexp.if_device(d0)
    syclexp.if_host(h1)
    syclexp.if_device(d2).otherwise(o3)
    syclexp.if_host(h4).otherwise(o5)


ON_DEVICE = [1, 0, 1, 0, 0, 1]
ON_HOST = [0, 1, 0, 1, 1, 0]


def test_eight_way_table_on_host_and_device(q, shared):
    host = np.zeros(6, np.int32)
    table(host)
    assert host.tolist() == ON_HOST

    p = shared(np.zeros(6, np.int32))

    def k():
        table(p)

    q.single_task(k).wait()
    assert view(p, 6).tolist() == ON_DEVICE


def test_host_helper_follows_the_seed():
    calls = []
    h = syclexp.if_device(lambda: calls.append("device"))
    assert h.make_call is True
    assert h.otherwise(lambda: calls.append("otherwise")) is None
    h = syclexp.if_host(lambda: calls.append("host"))
    assert h.make_call is False
    h.otherwise(lambda: calls.append("never"))
    assert calls == ["otherwise", "host"]
    with pytest.raises(sycl.exception) as ex:
        syclexp.if_host(3)
    assert ex.value.code() == sycl.errc.invalid


# -- one function, both sides ------------------------------------------------------------

def side(p, i):
    """Returns 10 + i on the device and -i on the host; writes p[i] on each side."""
    r = 0

    def on_device():
        nonlocal r
        r = 10 + i
        p[i] = p[i] * 2.0

    def on_host():
        nonlocal r
        r = -i
        p[i] = p[i] + 100.0

    syclexp.if_device(on_device).otherwise(on_host)
    return r


def test_device_function_used_from_kernel_and_host(q, shared):
    n = 16
    data = np.arange(n, dtype=np.float32)
    p = shared(data)
    got = shared(np.zeros(n, np.int32))

    def k(i):
        got[i] = side(p, i)

    q.parallel_for(sycl.range(n), k).wait()
    assert view(got, n).tolist() == [10 + i for i in range(n)]
    assert np.array_equal(view(p, n), data * 2)

    host = data.copy()
    assert [side(host, i) for i in range(n)] == [-i for i in range(n)]
    assert np.array_equal(host, data + 100)


def log_event(p, i):
    """A host body doing what device code may not: a dict, print, open, try."""
    def on_host():
        counts = {"event": int(p[i])}
        try:
            with open(LOG_PATH, "a") as f:
                f.write(f"{counts}\n")
        except OSError as ex:
            raise RuntimeError("no log") from ex
        print("logged", counts)
        global HOST_CALLS
        HOST_CALLS += 1

    syclexp.if_host(on_host).otherwise(lambda: store(p, i, 5))
    syclexp.if_host(lambda: print("HOST_ONLY_SENTINEL", 123456.75, {"k": [1, 2]}))


def store(p, i, v):
    p[i] = v


def test_host_body_with_any_python_compiles_and_runs(q, shared, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "LOG_PATH", str(tmp_path / "log.txt"))
    p = shared(np.arange(4, dtype=np.int32))

    def k(i):
        log_event(p, i)

    q.parallel_for(sycl.range(4), k).wait()
    assert view(p, 4).tolist() == [5, 5, 5, 5]
    assert not (tmp_path / "log.txt").exists()  # no host body ran for the kernel

    host = np.arange(3, dtype=np.int32)
    before = HOST_CALLS
    for i in range(3):
        log_event(host, i)
    assert before + 3 == HOST_CALLS
    assert (tmp_path / "log.txt").read_text().splitlines() == [
        "{'event': 0}", "{'event': 1}", "{'event': 2}"]
    assert "logged {'event': 2}" in capsys.readouterr().out
    assert host.tolist() == [0, 1, 2]


def test_disassembly_has_no_trace_of_host_bodies(q, shared):
    p = shared(np.zeros(4, np.float32))

    def k(i):
        syclexp.if_device(lambda: store(p, i, 4242.5)).otherwise(
            lambda: print("HOST_ONLY_SENTINEL", 987654.25, host_helper_never_compiled(p)))
        log_event(p, i)

    ck = compiled(q.get_device(), k, sycl.range(4))
    asm = ck.spirv_asm()
    assert "4242.5" in asm  # the device body is there
    for trace in ("HOST_ONLY_SENTINEL", "987654", "123456", "host_helper_never_compiled",
                  "OpString", "log.txt"):
        assert trace not in asm, trace
    # the device function holds only the otherwise branch: one store of 5, no host body
    assert [a["path"][1] for a in ck.reflection()["args"] if a["kind"] == "ptr"] == ["p"]
    q.parallel_for(sycl.range(4), k).wait()
    assert view(p, 4).tolist() == [5.0] * 4


def test_device_body_costs_nothing(q, shared):
    p = shared(np.ones(4, np.float32))

    def with_markers(i):
        def on_device():
            p[i] = p[i] * 2.0 + 1.0

        syclexp.if_device(on_device).otherwise(lambda: print("host", i))

    def written_in_place(i):
        p[i] = p[i] * 2.0 + 1.0

    dev = q.get_device()
    a = compiled(dev, with_markers, sycl.range(4)).spirv_asm()
    b = compiled(dev, written_in_place, sycl.range(4)).spirv_asm()
    assert a.replace("with_markers", "K") == b.replace("written_in_place", "K")


def host_helper_never_compiled(p):
    return {"x": open}  # not device code: compiling it would fail


# -- device-only constructs in device bodies ---------------------------------------------

def test_atomics_barriers_and_nd_item_queries_inside_if_device(q, shared):
    wg, groups = 8, 4
    n = wg * groups
    src = shared(np.arange(n, dtype=np.int32))
    dst = shared(np.zeros(n, np.int32))
    counter = shared(np.zeros(1, np.int32))
    tile = syclexp.work_group_memory(sycl.int32, wg)

    def k(it):
        def on_device():
            lid = it.get_local_id(0)
            tile[lid] = src[it.get_global_id(0)]
            sycl.group_barrier(it.get_group())
            dst[it.get_global_id(0)] = tile[it.get_local_range(0) - 1 - lid] + \
                100 * it.get_group(0)
            sycl.atomic_ref(counter).fetch_add(1)

        syclexp.if_host(lambda: print("never on the device")).otherwise(on_device)

    q.parallel_for(sycl.nd_range((n,), (wg,)), k).wait()
    expect = [g * wg + (wg - 1 - j) + 100 * g for g in range(groups) for j in range(wg)]
    assert view(dst, n).tolist() == expect
    assert view(counter, 1).tolist() == [n]


# -- nesting, chaining, depth, loops, early returns ---------------------------------------

def level3(p, i, j):
    def inner():
        p[i] += j

    syclexp.if_host(lambda: print("level3 host")).otherwise(inner)


def level2(p, i):
    for j in range(1, 4):  # inside a loop, several calls deep
        syclexp.if_device(lambda: level3(p, i, j))  # noqa: B023 (called at once)


def level1(p, i):
    level2(p, i)


def test_nested_chained_deep_and_in_loops(q, shared):
    n = 8
    out = shared(np.zeros(n, np.int32))
    deep = shared(np.zeros(n, np.int32))

    def k(i):
        acc = 0

        def outer():
            nonlocal acc
            for j in range(4):
                def middle():
                    nonlocal acc
                    acc += j  # noqa: B023 (a body rebinding a variable two scopes out)

                syclexp.if_device(middle)
                syclexp.if_host(lambda: print(j)).otherwise(  # noqa: B023
                    lambda: syclexp.if_device(lambda: store(out, i, 0)))
            syclexp.if_device(lambda: syclexp.if_host(lambda: print("dropped")))

        syclexp.if_device(outer).otherwise(lambda: print("host"))
        out[i] = out[i] + acc * 10 + i
        level1(deep, i)

    q.parallel_for(sycl.range(n), k).wait()
    assert view(out, n).tolist() == [60 + i for i in range(n)]
    assert view(deep, n).tolist() == [6] * n

    host = np.zeros(n, np.int32)
    level1(host, 0)  # on the host: the device bodies never run
    assert host.tolist() == [0] * n


def early(p, i, limit):
    """A device body that returns from inside loops and branches."""
    total = 0

    def body():
        nonlocal total
        if i == 0:
            total = -1
            return
        for a in range(10):
            for b in range(10):
                if a * 10 + b >= limit + i:
                    return
                total += b
            total += 1000
        total = -2

    syclexp.if_device(body)
    p[i] = total


def early_reference(i, limit):
    if i == 0:
        return -1
    total = 0
    for a in range(10):
        for b in range(10):
            if a * 10 + b >= limit + i:
                return total
            total += b
        total += 1000
    return -2


def test_return_in_device_body_leaves_only_the_body(q, shared):
    n, limit = 12, 17
    out = shared(np.zeros(n, np.int32))

    def k(i):
        early(out, i, limit)

    q.parallel_for(sycl.range(n), k).wait()
    assert view(out, n).tolist() == [early_reference(i, limit) for i in range(n)]


@syclexp.nd_range_kernel(1)
def triple(ptr: sycl.ptr[sycl.int32]):
    i = this_work_item.get_nd_item(1).get_global_linear_id()

    def on_device():
        ptr[i] = i * 3

    syclexp.if_host(lambda: print(ptr)).otherwise(on_device)


def test_free_function_kernel(q, shared):
    p = shared(np.zeros(8, np.int32))
    syclexp.nd_launch(q, sycl.nd_range((8,), (4,)), syclexp.kernel_function(triple), p)
    q.wait()
    assert view(p, 8).tolist() == [3 * i for i in range(8)]


# -- diagnostics ---------------------------------------------------------------------------

def build_error(q, fn, launch=None):
    with pytest.raises(sycl.exception) as ex:
        compiled(q.get_device(), fn, launch or sycl.range(4))
    assert ex.value.code() == sycl.errc.build
    return str(ex.value)


def test_device_bodies_are_still_checked(q, shared):
    p = shared(np.zeros(4, np.int32))

    def prints(i):
        syclexp.if_device(lambda: print(p))

    assert "cannot print a pointer" in build_error(q, prints)

    def takes_args(i):
        def body(x):
            p[x] = 1

        syclexp.if_device(body)

    msg = build_error(q, takes_args)
    assert "takes arguments" in msg and f"{__file__}:" in msg

    def called(i):
        def body():
            p[i] = 1

        body()

    assert "nested function definition is not supported" in build_error(q, called)

    def nonlocal_outside(i):
        nonlocal p

    assert "nonlocal" in build_error(q, nonlocal_outside)


# -- caches ----------------------------------------------------------------------------------

MODULE = """
import vksycl as sycl
from vksycl.ext.oneapi import experimental as syclexp

COUNTER = 0


def make(p):
    def k(i):
        def on_device():
            p[i] = {device}

        def on_host():
            global COUNTER
            COUNTER += 1
            print({host!r}, open, {{}})

        syclexp.if_device(on_device).otherwise(on_host)
        syclexp.if_host(lambda: print({host!r}))
    return k
"""


def load(tmp_path, name, device, host):
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(MODULE.format(device=device, host=host)))
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_cache_keys_follow_device_bodies_only(q, shared, tmp_path):
    p = shared(np.zeros(4, np.int32))
    spec = KernelSpec("k", "range", 1, (128,))

    def key(mod):
        return kernel_cache.disk_key(mod.make(p), spec)

    versions = iter(range(1, 10))

    def key_of(device, host):
        """The key of a variant written to one file (its path is part of every key), each
        with a modification time of its own, as caches of sources compare them."""
        mod = load(tmp_path, "ifd", device, host)
        stamp = next(versions) * 10**9
        os.utime(tmp_path / "ifd.py", ns=(stamp, stamp))
        linecache.checkcache()
        return key(mod)

    first = key_of(7, "a")
    assert key_of(7, "a much longer host message") == first
    assert key_of(8, "a") != first
    base = load(tmp_path, "ifd_base", 7, "a")
    first = key(base)
    base.COUNTER = 1000  # only a host body names it
    assert key(base) == first
    base.COUNTER = 0

    k = base.make(p)
    # a global only a host body names is no part of the memory key
    assert "COUNTER" not in cache_keys.global_names(k)
    base.COUNTER = 41
    q.parallel_for(sycl.range(4), k).wait()
    assert view(p, 4).tolist() == [7] * 4
    k(0)  # on the host: the host bodies run
    assert base.COUNTER == 42
