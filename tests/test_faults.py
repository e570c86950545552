"""The runtime under faults: out of device memory at an allocation or a submission (eager,
batched, in a graph replay), a kernel that hangs or outlasts the wait timeout, a device
lost mid-submission, processes filling one disk cache at once, and corrupt cache entries.

Faults come from `vksycl.runtime.faults` at the engine's boundary with Kompute. A lost
device stays lost, and a hung kernel runs on, until its process ends: those run in
processes of their own (tests/fault_child.py), each of which must also end in time."""

from __future__ import annotations

import ctypes
import dataclasses
import importlib.util
import json
import logging
import os
import pickle
import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import vksycl as sycl
from vksycl.compiler import disk_cache
from vksycl.compiler import kernel as kernel_cache
from vksycl.ext.oneapi import experimental as syclexp
from vksycl.kernels import plans as launch_cache
from vksycl.runtime import faults
from vksycl.runtime.glsl import compile_glsl

ROOT = Path(__file__).resolve().parents[1]
CHILD = Path(__file__).with_name("fault_child.py")
_spec = importlib.util.spec_from_file_location("fault_child", CHILD)
child = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(child)

N = child.N
# larger than the allocator's small chunks: a Vulkan allocation of its own
BIG = (40 << 20) + 4096
# work-items of the xorshift kernel keeping lavapipe busy for a fifth of a second, so
# that the launches after it wait in a batch
BUSY = 4096
PATTERN = np.random.default_rng(11).integers(0, 256, 4096, dtype=np.uint8)


def raises(call, code: sycl.errc) -> sycl.exception:
    with pytest.raises(sycl.exception) as info:
        call()
    assert info.value.code() is code, info.value
    return info.value


# -- out of device memory --------------------------------------------------------------------


def test_a_fault_counts_the_calls_of_its_kind_and_fails_the_nth(q):
    with pytest.raises(ValueError), faults.inject("launch"):
        pass
    sycl.usm_release_cached(q)
    with faults.inject("allocate", at=2, times=None) as fault:
        first = sycl.malloc_device(BIG, np.uint8, q)
        assert (fault.calls, fault.fired) == (1, 0)
        raises(lambda: sycl.malloc_device(BIG + 4096, np.uint8, q), sycl.errc.memory_allocation)
    assert fault.fired == fault.calls - 1 >= 1  # the second, and a retry if any
    assert not faults.armed
    sycl.free(first, q)


def test_out_of_memory_at_an_allocation_amid_eager_launches(q, usm):
    """The allocation raises errc.memory_allocation; the launches around it run, and no
    other memory changes."""
    keep = usm.of(PATTERN, kind="device")
    x = usm.of(np.zeros(N, np.uint32))
    sycl.usm_release_cached(q)  # nothing cached: the allocation asks Vulkan
    before = sycl.usm_memory_stats(q)
    child.step(q, x, 1)
    child.step(q, x, 2)
    with faults.inject("allocate", times=None) as fault:
        err = raises(lambda: sycl.malloc_device(BIG, np.uint8, q), sycl.errc.memory_allocation)
    child.step(q, x, 3)
    q.wait()
    assert "ErrorOutOfDeviceMemory" in str(err) and fault.fired == fault.calls >= 1
    assert sycl.usm_memory_stats(q) == before
    assert np.array_equal(usm.read(x, N), child.steps([1, 2, 3]))
    assert np.array_equal(usm.read(keep, PATTERN.size), PATTERN)
    p = sycl.malloc_device(BIG, np.uint8, q)  # allocations succeed again
    q.memset(p, 7, BIG).wait()
    tail = np.empty(64, np.uint8)
    q.memcpy(tail, p + (BIG - 64), 64).wait()
    assert np.all(tail == 7)
    sycl.free(p, q)


def test_a_failed_allocation_is_retried_once_the_cache_is_released(q, usm):
    keep = usm.of(PATTERN, kind="device")
    sycl.usm_release_cached(q)
    big = sycl.malloc_device(BIG, np.uint8, q)
    sycl.free(big, q)
    q.wait()
    cached = sycl.usm_memory_stats(q)["cached"]  # with blocks earlier tests' memory pins
    assert cached >= BIG
    with faults.inject("allocate") as fault:  # the next Vulkan allocation fails, once
        p = sycl.malloc_device(2 * BIG, np.uint8, q)
    assert (fault.calls, fault.fired) == (2, 1)  # the retry, after the cache went back
    assert sycl.usm_memory_stats(q)["cached"] <= cached - BIG
    q.memset(p, 5, 2 * BIG).wait()
    tail = np.empty(64, np.uint8)
    q.memcpy(tail, p + (2 * BIG - 64), 64).wait()
    assert np.all(tail == 5)
    assert np.array_equal(usm.read(keep, PATTERN.size), PATTERN)
    sycl.free(p, q)


def test_out_of_memory_submitting_a_launch_raises_to_it(q, usm):
    x = usm.of(np.zeros(N, np.uint32))
    keep = usm.of(PATTERN, kind="device")
    child.step(q, x, 1).wait()  # an idle device: the next launch is submitted at once
    with faults.inject("submit") as fault:
        raises(lambda: child.step(q, x, 2), sycl.errc.memory_allocation)
    assert fault.fired == 1
    for k in (3, 4):
        child.step(q, x, k).wait()  # its sequence serves again
    assert np.array_equal(usm.read(x, N), child.steps([1, 3, 4]))
    assert np.array_equal(usm.read(keep, PATTERN.size), PATTERN)


def test_out_of_memory_in_the_middle_of_a_staged_copy(q, usm):
    """A copy from numpy to device memory goes through staging windows, each a
    submission: the second one fails. The copy raises errc.memory_allocation, and the
    same copy again moves every byte."""
    keep = usm.of(PATTERN, kind="device")
    host = np.random.default_rng(5).integers(0, 256, BIG, dtype=np.uint8)
    dev = sycl.malloc_device(BIG, np.uint8, q)
    q.wait()
    with faults.inject("submit", at=2) as fault:
        raises(lambda: q.memcpy(dev, host, BIG), sycl.errc.memory_allocation)
    assert fault.fired == 1
    q.memcpy(dev, host, BIG).wait()
    back = np.empty(BIG, np.uint8)
    q.memcpy(back, dev, BIG).wait()
    assert np.array_equal(back, host)
    assert np.array_equal(usm.read(keep, PATTERN.size), PATTERN)
    sycl.free(dev, q)


def test_out_of_memory_submitting_a_batch_of_eager_launches(usm):
    reports: list = []
    q = sycl.queue(async_handler=reports.extend)
    x = usm.of(np.zeros(N, np.uint32), q=q)
    out = usm.of(np.zeros(1, np.uint32), q=q)
    keep = usm.of(PATTERN, kind="device", q=q)
    child.step(q, x, 1).wait()
    child.busy_kernel.busy(q, out, BUSY)  # the device is busy: the steps wait in a batch
    with faults.inject("submit") as fault:
        events = [child.step(q, x, k) for k in (2, 3, 4)]
        q.wait()  # sends the batch, which the device refuses
    assert fault.fired == 1
    q.wait_and_throw()
    assert [e.code() for e in reports] == [sycl.errc.memory_allocation]
    assert "could not be submitted" in str(reports[0])
    for e in events:
        e.wait_and_throw()  # reported once, through the handler
    assert np.array_equal(usm.read(x, N), child.steps([1]))  # nothing of the batch ran
    child.busy_kernel.busy(q, out, BUSY)
    for k in (5, 6):
        child.step(q, x, k)  # batched again
    q.wait_and_throw()
    assert len(reports) == 1
    assert np.array_equal(usm.read(x, N), child.steps([1, 5, 6]))
    assert usm.read(out)[0] == child.busy_kernel.xorshift(child.busy_kernel.rounds(q))
    assert np.array_equal(usm.read(keep, PATTERN.size), PATTERN)


def test_out_of_memory_in_the_middle_of_a_graph_replay(q, usm):
    """A graph of kernel, host task, kernel: the second segment's submission fails in
    three replays. Each reports errc.memory_allocation; the first segment ran, the second
    did not, and later replays run whole."""
    a = usm.of(np.zeros(N, np.int32))
    b = usm.of(np.zeros(N, np.int32))
    keep = usm.of(PATTERN, kind="device")
    hosts: list[int] = []

    def inc(i):
        a[i] = a[i] + 1

    def acc(i):
        b[i] = b[i] + 2 * a[i] + i

    g = syclexp.command_graph(q)
    dep = syclexp.property.node.depends_on
    n0 = g.add(lambda h: h.parallel_for(sycl.range(N), inc))
    n1 = g.add(lambda h: h.host_task(lambda: hosts.append(1)), [dep(n0)])
    g.add(lambda h: h.parallel_for(sycl.range(N), acc), [dep(n1)])
    exe = g.finalize()
    ran = [True, False, False, False, True, True, True, True]
    for whole in ran:
        if whole:
            q.ext_oneapi_graph(exe).wait_and_throw()
            continue
        with faults.inject("submit", at=2) as fault:
            e = q.ext_oneapi_graph(exe)
            e.wait()
        assert fault.fired == 1
        raises(e.wait_and_throw, sycl.errc.memory_allocation)
    i = np.arange(N)
    want_a, want_b = np.zeros(N, np.int64), np.zeros(N, np.int64)
    for whole in ran:
        want_a += 1
        if whole:
            want_b += 2 * want_a + i
    assert len(hosts) == len(ran)
    assert np.array_equal(usm.read(a, N), want_a)
    assert np.array_equal(usm.read(b, N), want_b)
    assert np.array_equal(usm.read(keep, PATTERN.size), PATTERN)

    # a graph of GPU work alone runs in the submitting thread: its error is raised there
    g2 = syclexp.command_graph(q)
    g2.add(lambda h: h.parallel_for(sycl.range(N), inc))
    exe2 = g2.finalize()
    with faults.inject("submit"):
        raises(lambda: q.ext_oneapi_graph(exe2), sycl.errc.memory_allocation)
    q.ext_oneapi_graph(exe2).wait()
    assert np.array_equal(usm.read(a, N), want_a + 1)


# -- hangs, timeouts and lost devices: in processes of their own ------------------------------


def run_child(*args: str, timeout: float, **env: str) -> tuple[dict, float]:
    """Runs tests/fault_child.py; returns what it printed and how long it took. It must
    end by itself, in time, with status 0."""
    environ = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep +
                   os.environ.get("PYTHONPATH", ""), **env)
    started = time.monotonic()
    # -P: not the tests folder first on the path (its spirv_gen/ would shadow the package)
    done = subprocess.run([sys.executable, "-P", str(CHILD), *args], env=environ,
                          capture_output=True, text=True, timeout=timeout)
    took = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1]), took


def test_a_hung_kernel_times_out_and_the_process_still_ends():
    """A kernel that would run for over ten minutes: the wait raises errc.runtime naming
    it after VKSYCL_WAIT_TIMEOUT_S, and the process ends within seconds, on lavapipe with
    the kernel still running (its device's objects are never torn down; a GPU driver
    holding the process until its kernels end has the kernel released first)."""
    seen, took = run_child("hang", timeout=90, VKSYCL_WAIT_TIMEOUT_S="0.5")
    assert seen["wait"]["code"] == "runtime"
    message = seen["wait"]["message"]
    assert "kernel hang did not complete within 0.5 s" in message
    assert "VKSYCL_WAIT_TIMEOUT_S" in message
    assert 0.5 <= seen["waited_s"] < 10
    assert seen["queue_wait"]["code"] == "runtime"
    assert seen["kept"]
    assert took < 60


def test_a_long_kernel_outlasts_the_timeout_and_then_completes():
    """A timed-out wait loses nothing: waiting again finds the kernel's result, and the
    queue goes on."""
    seen, _ = run_child("long", timeout=120, VKSYCL_WAIT_TIMEOUT_S="0.2")
    assert seen["count"] >= 1
    first = seen["timeouts"][0]
    assert first["code"] == "runtime" and "kernel spin did not complete within 0.2 s" in \
        first["message"]
    assert seen["result"] and seen["after"]


@pytest.mark.parametrize("where", ["wait", "submit", "launch"])
def test_a_lost_device_fails_pending_and_later_commands(where):
    """The device is lost at a blocking wait, at a batch's submission or at a launch's own
    submission: that call raises errc.runtime; the commands in flight and in the batch
    fail (their waits return at once, the queue's handler hears of them), every later
    command raises, queue.wait raises, memory no command touched is intact, and the
    process ends."""
    window = "0" if where == "wait" else "100"  # "wait": no batch, no background waiter
    seen, took = run_child("lost", where, timeout=90, VKSYCL_BATCH_WINDOW_US=window)
    assert seen["fired"] == 1
    assert seen["lost"]["code"] == "runtime"
    assert "the device was lost" in seen["lost"]["message"]
    assert "ErrorDeviceLost" in seen["lost"]["message"]
    assert seen["pending_wait_s"] < 1
    for call in ("wait_and_throw", "queue_wait", "later_launch", "later_memcpy"):
        assert seen[call]["code"] == "runtime", call
        assert "the device was lost" in seen[call]["message"], call
    if where != "launch":  # a long kernel and a step were in flight
        assert len(seen["handler"]) == 2
        assert all(code == "runtime" and "the device was lost" in message
                   for code, message in seen["handler"])
    assert seen["kept"]
    assert took < 60


def test_the_wait_timeout_setting_is_checked(monkeypatch):
    from vksycl import config

    monkeypatch.setenv("VKSYCL_WAIT_TIMEOUT_S", "2.5")
    assert config.wait_timeout_s() == 2.5
    for bad in ("soon", "-1", "nan", "inf"):
        monkeypatch.setenv("VKSYCL_WAIT_TIMEOUT_S", bad)
        raises(config.wait_timeout_s, sycl.errc.invalid)


# -- the disk cache --------------------------------------------------------------------------

_IN_CREATE, _IN_MODIFY, _IN_CLOSE_WRITE = 0x100, 0x2, 0x8
_IN_MOVED_FROM, _IN_MOVED_TO, _IN_DELETE = 0x40, 0x80, 0x200


class FolderEvents:
    """What happens to the files of a folder, from Linux's inotify: (event, name)."""

    def __init__(self, folder: Path) -> None:
        self._libc = ctypes.CDLL(None, use_errno=True)
        self._fd = self._libc.inotify_init1(os.O_NONBLOCK)
        mask = (_IN_CREATE | _IN_MODIFY | _IN_CLOSE_WRITE | _IN_MOVED_FROM | _IN_MOVED_TO |
                _IN_DELETE)
        assert self._fd >= 0 and self._libc.inotify_add_watch(
            self._fd, str(folder).encode(), mask) >= 0, ctypes.get_errno()
        self.events: list[tuple[int, str]] = []

    def read(self) -> list[tuple[int, str]]:
        while True:
            try:
                data = os.read(self._fd, 1 << 20)
            except BlockingIOError:
                return self.events
            at = 0
            while at < len(data):
                _, mask, _, size = struct.unpack_from("iIII", data, at)
                name = data[at + 16: at + 16 + size].rstrip(b"\0").decode()
                self.events.append((mask, name))
                at += 16 + size

    def close(self) -> None:
        os.close(self._fd)


@pytest.mark.skipif(sys.platform != "linux", reason="watches the folder with inotify")
def test_processes_compiling_the_same_kernels_at_once_share_one_valid_cache(tmp_path):
    """Three processes compile the same four kernels into one fresh cache at the same
    moment: each gets correct results, each entry appears only whole (moved into place,
    never written or removed under its name), no temporary file is left, and a fourth
    process loads all four from the cache."""
    cache = tmp_path / "cache"
    (cache / "kernels").mkdir(parents=True)
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    watch = FolderEvents(cache / "kernels")
    env = dict(os.environ, VKSYCL_CACHE_DIR=str(cache),
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    procs = 3
    running = [subprocess.Popen([sys.executable, "-P", str(CHILD), "compile", str(barrier),
                                 str(procs)], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True) for _ in range(procs)]
    seen = []
    for p in running:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        seen.append(json.loads(out.strip().splitlines()[-1]))
    events = watch.read()
    watch.close()
    kernels = {"bits", "collatz", "harmonic", "poly"}
    for s in seen:
        assert all(s["ok"].values()), s
        assert s["warnings"] == []
    # each process compiles what it did not find in the cache; they started at once, so
    # some kernel was compiled by more than one
    compiled = [name for s in seen for name in s["compiled"]]
    assert set(compiled) == kernels and len(compiled) > len(kernels)
    entries = sorted(p.name for p in (cache / "kernels").iterdir())
    assert len(entries) == 4 and all(name.endswith(".kc") for name in entries)
    under_own_name = [(mask, name) for mask, name in events if name.endswith(".kc") and
                      mask != _IN_MOVED_TO]
    assert under_own_name == []
    temporaries = [name for mask, name in events if mask == _IN_CREATE]
    assert len(temporaries) == len(set(temporaries)) == len(compiled)  # one per writer
    assert all(name.endswith(".tmp") for name in temporaries)
    for name in entries:
        assert disk_cache.read(cache / "kernels" / name) is not None

    again = subprocess.run([sys.executable, "-P", str(CHILD), "compile", str(barrier), "0"],
                           env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    last = json.loads(again.stdout.strip().splitlines()[-1])
    assert last["compiled"] == [] and all(last["ok"].values()) and last["warnings"] == []


def _truncated(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _random_bytes(path: Path) -> None:
    path.write_bytes(np.random.default_rng(1).integers(0, 256, 301, np.uint8).tobytes())


def _garbage_of_its_length(path: Path) -> None:
    size = path.stat().st_size
    path.write_bytes(np.random.default_rng(2).integers(0, 256, size, np.uint8).tobytes())


def _rewritten(path: Path, change) -> None:
    """The entry's record changed, under a checksum that matches it."""
    ck = pickle.loads(disk_cache.read(path))
    disk_cache.write(path, change(ck))


def _invalid_spirv(path: Path) -> None:
    # without its last word (OpFunctionEnd) the module is not valid SPIR-V
    _rewritten(path, lambda ck: pickle.dumps(dataclasses.replace(ck, binary=ck.binary[:-4])))


def _record_that_does_not_load(path: Path) -> None:
    _rewritten(path, lambda ck: b"\x80\x05 not a pickle")


def _record_of_another_shape(path: Path) -> None:
    _rewritten(path, lambda ck: pickle.dumps(dataclasses.replace(ck, args="slots")))


CORRUPTIONS = {
    "truncated": (_truncated, "shorter than its header|payload where its header says"),
    "random bytes": (_random_bytes, "not an entry of this cache format"),
    "garbage of its length": (_garbage_of_its_length, "not an entry of this cache format"),
    "invalid SPIR-V": (_invalid_spirv, "its SPIR-V does not validate"),
    "record that does not load": (_record_that_does_not_load, "its record does not load"),
    "record of another shape": (_record_of_another_shape, "its args is not a list"),
}


def forget_compiled_kernels(monkeypatch) -> None:
    """Empties the kernel caches in memory, as in a new process: only the disk cache
    knows the kernels compiled so far."""
    for module, name in ((kernel_cache, "_MEMORY"), (launch_cache, "_PREPARED"),
                         (launch_cache, "_LAST"), (launch_cache, "_PLANS")):
        monkeypatch.setattr(module, name, {})
    monkeypatch.setattr(launch_cache._LATEST, "entry", (None, None, None))


@pytest.mark.parametrize("corruption", list(CORRUPTIONS))
def test_a_corrupt_cache_entry_is_discarded_and_compiled_again(corruption, q, usm, tmp_path,
                                                               monkeypatch, caplog):
    """The runtime finds the corruption, says so in a warning, compiles again (never
    handing the entry's SPIR-V to the driver), runs the kernel correctly and leaves a
    valid entry."""
    corrupt, why = CORRUPTIONS[corruption]
    monkeypatch.setenv("VKSYCL_CACHE_DIR", str(tmp_path))
    compiles: list[str] = []
    original = kernel_cache.compile_kernel
    monkeypatch.setattr(kernel_cache, "compile_kernel",
                        lambda *a: compiles.append(a[1].name) or original(*a))
    out = usm.of(np.zeros(64, np.int32))

    def cached_kernel(i):
        out[i] = i * i + 3

    def run() -> np.ndarray:
        forget_compiled_kernels(monkeypatch)
        usm.write(out, np.zeros(64, np.int32))
        q.parallel_for(sycl.range(64), cached_kernel).wait()
        return usm.read(out, 64)

    expected = np.arange(64) ** 2 + 3
    assert np.array_equal(run(), expected)
    [entry] = (tmp_path / "kernels").glob("*.kc")
    corrupt(entry)
    with caplog.at_level(logging.WARNING, logger="vksycl.compiler"):
        assert np.array_equal(run(), expected)
    warnings = [r.getMessage() for r in caplog.records if r.name == "vksycl.compiler"]
    assert len(warnings) == 1 and "corrupt kernel cache entry" in warnings[0]
    assert any(reason in warnings[0] for reason in why.split("|")), warnings[0]
    assert compiles == ["cached_kernel", "cached_kernel"]  # compiled again
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="vksycl.compiler"):
        assert np.array_equal(run(), expected)  # from the rewritten entry
    assert compiles == ["cached_kernel", "cached_kernel"] and caplog.records == []


GLSL_DOUBLE = """#version 450
layout(local_size_x = 8) in;
layout(std430, binding = 0) buffer V { float v[]; };
void main() { v[gl_GlobalInvocationID.x] *= 2.0; }
"""


def test_a_corrupt_glsl_cache_entry_is_compiled_again(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("VKSYCL_CACHE_DIR", str(tmp_path))
    spirv = compile_glsl(GLSL_DOUBLE)
    [entry] = (tmp_path / "glsl").glob("*.spv")
    entry.write_bytes(spirv[: len(spirv) // 2])
    with caplog.at_level(logging.WARNING, logger="vksycl.glsl"):
        assert compile_glsl(GLSL_DOUBLE) == spirv
    assert ["corrupt GLSL cache entry" in r.getMessage() for r in caplog.records] == [True]
    assert entry.read_bytes() == spirv
