"""Eager commands submitted while the device is busy share one submission (a batch).
Order, dependencies, host tasks, events, profiling and errors are what they are without
batching; these tests hold the device busy with a long kernel so that what follows is
batched, and check every result."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import textwrap
import threading
import time
import weakref
from pathlib import Path

import numpy as np
import pytest

import vksycl as sycl
from vksycl import info
from vksycl.ext.oneapi import experimental as syclexp
from vksycl.runtime import engine, faults

sys.path.append(str(Path(__file__).parent))  # the busy kernel beside this file
import busy_kernel
from busy_kernel import xorshift

status = info.event.command_execution_status
S = info.event_command_status
# the busy kernel's work-items: tens of milliseconds on lavapipe, far longer than the host
# takes to submit what each test puts behind it
BUSY = 4096
N = 256


def submissions(q: sycl.queue) -> int:
    """vkQueueSubmit calls so far on the queue's device."""
    return q._scheduler.engine.submissions


def busy(q: sycl.queue, out: sycl.ptr, items: int = BUSY, deps=None,
         rounds: int | None = None) -> sycl.event:
    return busy_kernel.busy(q, out, items, deps, rounds)


def step(q: sycl.queue, x: sycl.ptr, k: int, deps=None) -> sycl.event:
    """x = x * 3 + k, element-wise: the order of two steps changes the result."""
    kk = np.uint32(k)

    def body(i):
        x[i] = x[i] * sycl.uint32(3) + kk + sycl.uint32(i)
    return q.parallel_for(sycl.range(N), body, depends_on=deps)


def expected_steps(ks, start=None) -> np.ndarray:
    x = np.zeros(N, np.uint32) if start is None else start.copy()
    i = np.arange(N, dtype=np.uint32)
    with np.errstate(over="ignore"):
        for k in ks:
            x = x * np.uint32(3) + np.uint32(k) + i
    return x


@pytest.fixture
def flag(q):
    f = sycl.malloc_shared(4, sycl.uint32, q)
    np.asarray(f)[:] = 0
    yield f
    q.wait()
    sycl.free(f, q)


def test_busy_kernel_computes_its_xorshift(q, flag):
    busy(q, flag, 64, rounds=busy_kernel.CPU_ROUNDS).wait()
    assert int(np.asarray(flag)[0]) == xorshift(busy_kernel.CPU_ROUNDS)


def test_in_order_commands_behind_a_busy_device_share_one_submission(ordered_q, flag):
    q = ordered_q
    x = sycl.malloc_device(N, sycl.uint32, q)
    q.memset(x, 0, 4 * N).wait()
    before = submissions(q)
    busy(q, flag)
    ks = list(range(100))
    for k in ks:
        step(q, x, k)
    out = np.zeros(N, np.uint32)
    q.memcpy(out, x, 4 * N).wait()
    assert np.array_equal(out, expected_steps(ks))
    # the busy kernel, then one or two batches (the copy's own part may follow)
    assert submissions(q) - before <= 4, submissions(q) - before
    sycl.free(x, q)


def test_out_of_order_dependency_chains_in_one_batch(q, flag):
    chains = [sycl.malloc_device(N, sycl.uint32, q) for _ in range(4)]
    for x in chains:
        q.memset(x, 0, 4 * N)
    q.wait()
    before = submissions(q)
    busy(q, flag)
    last = [None] * len(chains)
    for r in range(30):
        for c, x in enumerate(chains):  # the chains interleave; each is ordered by events
            last[c] = step(q, x, 7 * c + r, deps=last[c])
    for c, x in enumerate(chains):
        out = np.zeros(N, np.uint32)
        q.memcpy(out, x, 4 * N, depends_on=last[c]).wait()
        assert np.array_equal(out, expected_steps([7 * c + r for r in range(30)])), c
    assert submissions(q) - before <= 8
    for x in chains:
        sycl.free(x, q)


def test_host_tasks_between_batched_kernels(ordered_q, flag):
    q = ordered_q
    x = sycl.malloc_shared(N, sycl.uint32, q)
    np.asarray(x)[:] = 0
    seen = []

    def host():
        view = np.asarray(x)[:N]
        seen.append(view.copy())  # the kernels before it are done
        view *= 2

    busy(q, flag)
    step(q, x, 1)
    step(q, x, 2)
    q.submit(lambda h: h.host_task(host))
    step(q, x, 3)
    q.wait()
    first = expected_steps([1, 2])
    assert np.array_equal(seen[0], first)
    assert np.array_equal(np.asarray(x)[:N], expected_steps([3], first * np.uint32(2)))
    sycl.free(x, q)


def test_eight_threads_submit_kernels_and_copies(q, flag):
    """Four threads share the out-of-order queue (ordering their own work by events), four
    have in-order queues of their own; one holds the device busy now and then so that
    the others' work is batched. Every intermediate result is checked."""
    threads, rounds = 8, 24
    own = [sycl.queue(property_list=[sycl.property.queue.in_order()]) for _ in range(4)]
    errors: list[BaseException] = []

    def worker(t: int) -> None:
        tq = q if t < 4 else own[t - 4]
        x = sycl.malloc_device(N, sycl.uint32, tq)
        y = sycl.malloc_device(N, sycl.uint32, tq)
        spin = sycl.malloc_device(1, sycl.uint32, tq)
        host = np.zeros(N, np.uint32)
        try:
            e = tq.memset(x, 0, 4 * N)
            ks: list[int] = []
            for r in range(rounds):
                if t == 0 and r % 8 == 0:
                    e = busy(tq, spin, BUSY // 4, deps=e)
                e = step(tq, x, 100 * t + r, deps=e)
                ks.append(100 * t + r)
                e = tq.memcpy(y, x, 4 * N, e)           # device to device
                if r % 6 == 5:
                    tq.memcpy(host, y, 4 * N, e).wait()  # and back to the host
                    assert np.array_equal(host, expected_steps(ks)), (t, r)
        except BaseException as err:  # reported below
            errors.append(err)
        finally:
            tq.wait()
            for p in (x, y, spin):
                sycl.free(p, tq)

    pool = [threading.Thread(target=worker, args=(t,)) for t in range(threads)]
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    assert errors == []


def test_event_status_moves_through_a_batch(q, flag):
    x = sycl.malloc_device(N, sycl.uint32, q)
    q.memset(x, 0, 4 * N).wait()
    e0 = busy(q, flag)
    e1 = step(q, x, 5, deps=e0)
    assert e0.get_info(status) == S.running
    # e1 waits in the open batch: submitted, not on the device yet; asking sends it
    assert e1.get_info(status) == S.submitted
    assert e1.get_info(status) == S.running
    e1.wait()
    assert e0.get_info(status) == S.complete
    assert e1.get_info(status) == S.complete
    sycl.free(x, q)


def test_queue_wait_sends_its_open_batch_before_waiting_for_earlier_work(ordered_q, flag,
                                                                         monkeypatch):
    """`q.wait()` hands the open batch to the device at once, to run right behind the busy
    kernel, rather than when its waits reach the batch."""
    from vksycl.runtime.submission import Submission

    q = ordered_q
    x = sycl.malloc_device(N, sycl.uint32, q)
    q.memset(x, 0, 4 * N).wait()
    busy(q, flag)
    steps = [step(q, x, k) for k in range(3)]
    batch = steps[-1]._submission
    assert not batch.submitted
    sent_when_waiting = []
    real_wait = Submission.wait

    def wait(self, spin=True):
        sent_when_waiting.append(batch.submitted)
        return real_wait(self, spin)

    monkeypatch.setattr(Submission, "wait", wait)
    q.wait()
    assert sent_when_waiting and all(sent_when_waiting)
    out = np.zeros(N, np.uint32)
    q.memcpy(out, x, 4 * N).wait()
    assert np.array_equal(out, expected_steps(range(3)))
    sycl.free(x, q)


def test_a_wait_forgets_only_what_it_waited_for(q, flag, monkeypatch):
    """`q.wait()` forgets the commands it found, and only those: one submitted by another
    thread while it waited stays for the next wait."""
    from vksycl.runtime.submission import Part, Submission

    x = sycl.malloc_device(N, sycl.uint32, q)
    q.memset(x, 0, 4 * N).wait()
    waiting = threading.Event()
    for kind in (Submission, Part):
        real = kind.wait

        def wait(self, spin=True, real=real):
            waiting.set()
            return real(self, spin)
        monkeypatch.setattr(kind, "wait", wait)
    first = busy(q, flag)
    waiter = threading.Thread(target=q.wait)
    waiter.start()
    assert waiting.wait(30)
    later = step(q, x, 5)
    waiter.join(60)
    assert not waiter.is_alive() and first.is_complete()
    # what is kept of it: its work, which a wait waits for
    assert later._submission is not None
    assert [w is later._submission for w in q._outstanding] == [True]
    q.wait()
    assert q._outstanding == []
    out = np.zeros(N, np.uint32)
    q.memcpy(out, x, 4 * N).wait()
    np.testing.assert_array_equal(out, expected_steps([5]))
    sycl.free(x, q)


def test_a_batch_runs_when_the_device_idles_with_no_queue_call(q, flag):
    """A program that submits while the device is busy and then only polls memory sees
    its commands run: the engine submits the batch once the work before it is done."""
    done = sycl.malloc_shared(1, sycl.uint32, q)
    np.asarray(done)[0] = 0

    def mark():
        done[0] = sycl.uint32(42)
    busy(q, flag)
    e = q.single_task(mark)
    assert e.is_complete() is False
    deadline = time.monotonic() + 20
    while np.asarray(done)[0] != 42 and time.monotonic() < deadline:
        time.sleep(0.001)
    assert np.asarray(done)[0] == 42
    q.wait()
    sycl.free(done, q)


def test_profiling_timestamps_are_ordered_per_command_in_a_batch(flag):
    q = sycl.queue(property_list=[sycl.property.queue.in_order(),
                                  sycl.property.queue.enable_profiling()])
    x = sycl.malloc_device(N, sycl.uint32, q)
    q.memset(x, 0, 4 * N).wait()
    before = submissions(q)
    events = [busy(q, flag, BUSY // 2)] + [step(q, x, k) for k in range(12)]
    q.wait()
    assert submissions(q) - before <= 3  # the busy kernel, then the steps batched
    prof = info.event_profiling
    times = [(e.get_profiling_info(prof.command_submit), e.get_profiling_info(prof.command_start),
              e.get_profiling_info(prof.command_end)) for e in events]
    for submit, start, end in times:
        assert submit <= start < end
    for (_, _, end), (_, start, _) in itertools.pairwise(times):
        assert end <= start
    busy_time = times[0][2] - times[0][1]
    assert busy_time > 10 * max(end - start for _, start, end in times[1:])
    out = np.zeros(N, np.uint32)
    q.memcpy(out, x, 4 * N).wait()
    assert np.array_equal(out, expected_steps(range(12)))
    sycl.free(x, q)


def test_a_batch_that_fails_to_submit_reports_to_each_queue_and_event(flag):
    reports: dict[str, list] = {"a": [], "b": []}
    qa = sycl.queue(async_handler=lambda errs: reports["a"].extend(errs))
    qb = sycl.queue(async_handler=lambda errs: reports["b"].extend(errs))
    x = sycl.malloc_shared(N, sycl.uint32, qa)
    y = sycl.malloc_shared(N, sycl.uint32, qa)
    np.asarray(x)[:] = 0
    np.asarray(y)[:] = 0
    busy(qa, flag)
    ea = step(qa, x, 1)
    eb = step(qb, y, 2)
    batch = ea._submission.batch
    assert eb._submission.batch is batch and not batch.submitted
    # the batch's submission fails as the driver's would when out of memory
    with faults.inject("submit", "ErrorOutOfHostMemory") as fault, \
            pytest.raises(sycl.exception) as err:
        ea.wait_and_throw()  # waiting sends the batch, which fails
    assert fault.fired == 1
    assert err.value.code() == sycl.errc.memory_allocation
    assert "could not be submitted" in str(err.value) and "OutOfHostMemory" in str(err.value)
    qa.wait_and_throw()
    assert reports["a"] == []  # reported once: through the event
    qb.wait_and_throw()
    assert len(reports["b"]) == 1
    assert reports["b"][0].code() == sycl.errc.memory_allocation
    eb.wait_and_throw()  # its queue's handler had it already
    assert np.all(np.asarray(x)[:N] == 0) and np.all(np.asarray(y)[:N] == 0)  # nothing ran
    step(qa, x, 1).wait()  # the next commands run as usual
    assert np.array_equal(np.asarray(x)[:N], expected_steps([1]))
    qa.wait()
    sycl.free(x, qa)
    sycl.free(y, qa)


def test_errors_of_commands_among_batched_ones_reach_their_event_and_handler(flag):
    reports: list = []
    q = sycl.queue(property_list=[sycl.property.queue.in_order()],
                   async_handler=reports.extend)
    x = sycl.malloc_shared(N, sycl.uint32, q)
    gone = sycl.malloc_device(N, sycl.uint32, q)
    np.asarray(x)[:] = 0
    sycl.free(gone, q)
    busy(q, flag)
    step(q, x, 1)

    def fails():
        raise ValueError("host task failed")
    bad = q.submit(lambda h: h.host_task(fails))
    step(q, x, 2)
    with pytest.raises(sycl.exception) as err:
        step(q, gone, 3)  # checked before anything is enqueued: raised to the caller
    assert err.value.code() == sycl.errc.invalid
    step(q, x, 4)
    q.wait()
    with pytest.raises(ValueError, match="host task failed"):
        bad.wait_and_throw()
    q.throw_asynchronous()
    assert reports == []  # the event reported it; the handler does not see it twice
    assert np.array_equal(np.asarray(x)[:N], expected_steps([1, 2, 4]))

    bad = q.submit(lambda h: h.host_task(fails))
    step(q, x, 5)
    q.wait_and_throw()
    assert len(reports) == 1 and isinstance(reports[0], ValueError)
    assert np.array_equal(np.asarray(x)[:N], expected_steps([1, 2, 4, 5]))
    sycl.free(x, q)


def test_a_zero_window_submits_every_command_at_once(tmp_path):
    script = textwrap.dedent("""
        import numpy as np
        import vksycl as sycl
        q = sycl.queue(property_list=[sycl.property.queue.in_order()])
        x = sycl.malloc_shared(64, sycl.uint32, q)
        np.asarray(x)[:] = 0
        def body(i):
            x[i] = x[i] + sycl.uint32(1)
        q.parallel_for(sycl.range(64), body).wait()
        engine = q._scheduler.engine
        before = engine.submissions
        for _ in range(50):
            q.parallel_for(sycl.range(64), body)
        q.wait()
        assert np.all(np.asarray(x)[:64] == 51)
        print(engine.submissions - before)
    """)
    path = tmp_path / "zero_window.py"  # kernels are compiled from their source file
    path.write_text(script)
    env = dict(os.environ, VKSYCL_BATCH_WINDOW_US="0")
    out = subprocess.run([sys.executable, str(path)], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[-1] == "50"


def test_batch_window_setting(monkeypatch):
    from vksycl import config

    monkeypatch.setenv("VKSYCL_BATCH_WINDOW_US", "250")
    assert config.batch_window_s() == pytest.approx(250e-6)
    monkeypatch.setenv("VKSYCL_BATCH_WINDOW_US", "-3")  # no negative window
    assert config.batch_window_s() == 0.0
    monkeypatch.setenv("VKSYCL_BATCH_WINDOW_US", "100us")
    with pytest.raises(sycl.exception) as err:
        config.batch_window_s()
    assert err.value.code() == sycl.errc.invalid and "'100us'" in str(err.value)


# x = x * 3 + k + i, as `step` computes it, in GLSL: a kernel with a descriptor binding,
# whose launches over other memory share its pipeline with a descriptor set each
GLSL_STEP = """#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer X { uint x[]; };
layout(push_constant) uniform Args { uint k; } args;
void main() {
    uint i = gl_GlobalInvocationID.x;
    x[i] = x[i] * 3u + args.k + i;
}
"""


def test_each_batched_launch_binds_its_own_pipeline_memory_and_arguments(ordered_q, flag):
    """One command buffer records, in turn, a kernel over one allocation twice running
    with other push constants, the same kernel over another allocation (the same
    pipeline, another descriptor set) and a Python kernel with a new number each launch
    (another pipeline, its argument ring): a dispatch binds only what differs from the one
    recorded before it, and each reads its own pipeline, memory and arguments."""
    q = ordered_q
    bundle = syclexp.build(syclexp.create_kernel_bundle_from_source(
        q.get_context(), syclexp.source_language.glsl, GLSL_STEP))
    k = bundle.ext_oneapi_get_kernel("main")
    a, b, c = (sycl.malloc_device(N, sycl.uint32, q) for _ in range(3))
    for x in (a, b, c):
        q.memset(x, 0, 4 * N)
    q.wait()

    def glsl_step(x, value):
        q.submit(lambda h: (h.set_args(x, np.uint32(value)),
                            h.parallel_for(sycl.nd_range((N,), (64,)), k)))
    before = submissions(q)
    busy(q, flag)
    rounds = range(30)
    for r in rounds:
        glsl_step(a, r)
        glsl_step(a, r + 1000)
        glsl_step(b, 7 * r)
        step(q, c, r)
    for x, ks in ((a, [v for r in rounds for v in (r, r + 1000)]),
                  (b, [7 * r for r in rounds]), (c, list(rounds))):
        out = np.zeros(N, np.uint32)
        q.memcpy(out, x, 4 * N).wait()
        assert np.array_equal(out, expected_steps(ks))
    # the busy kernel, then a few batches: the launches shared command buffers
    assert submissions(q) - before <= 6, submissions(q) - before
    for x in (a, b, c):
        sycl.free(x, q)


def test_a_graph_replay_between_batched_commands_keeps_their_order(ordered_q, flag):
    from vksycl.ext.oneapi import experimental as syclexp

    q = ordered_q
    x = sycl.malloc_device(N, sycl.uint32, q)
    q.memset(x, 0, 4 * N).wait()
    g = syclexp.command_graph(q)
    with g.recording(q):
        step(q, x, 10)
        step(q, x, 11)
    exe = g.finalize()
    busy(q, flag)
    step(q, x, 1)            # batched behind the busy kernel
    q.ext_oneapi_graph(exe)  # sends the batch, then its own recorded work
    step(q, x, 2)
    q.ext_oneapi_graph(exe)
    step(q, x, 3)
    out = np.zeros(N, np.uint32)
    q.memcpy(out, x, 4 * N).wait()
    assert np.array_equal(out, expected_steps([1, 10, 11, 2, 10, 11, 3]))
    sycl.free(x, q)


def test_profiled_and_plain_commands_alternate_behind_a_busy_device(flag):
    props = [sycl.property.queue.in_order()]
    plain = sycl.queue(property_list=props)
    timed = sycl.queue(plain.get_context(), plain.get_device(),
                       property_list=[*props, sycl.property.queue.enable_profiling()])
    x = sycl.malloc_device(N, sycl.uint32, plain)
    plain.memset(x, 0, 4 * N).wait()
    busy(plain, flag)
    last = None
    events = []
    for k in range(10):  # one device queue: each switch sends the open batch
        q = timed if k % 2 else plain
        last = step(q, x, k, deps=last)
        if q is timed:
            events.append(last)
    out = np.zeros(N, np.uint32)
    plain.memcpy(out, x, 4 * N, last).wait()
    assert np.array_equal(out, expected_steps(range(10)))
    prof = info.event_profiling
    spans = [(e.get_profiling_info(prof.command_start), e.get_profiling_info(prof.command_end))
             for e in events]
    for (s0, e0), (s1, _) in itertools.pairwise(spans):
        assert s0 < e0 <= s1
    sycl.free(x, plain)


def test_finished_submissions_are_forgotten_once_the_submission_reaching_the_limit_went_out(
        q, monkeypatch):
    """Launches waited for one by one: the engine forgets the finished submissions it
    tracks all at once when the one that reaches the limit was handed to the device, so
    no launch's `vkQueueSubmit` waits behind that, and none is tracked past the limit."""
    eng = q._scheduler.engine
    limit = engine._MAX_IN_FLIGHT
    tracked_at_submission: list[int] = []
    submit = engine.kp.Sequence.eval_async

    def counted(seq, *rest):
        tracked_at_submission.append(len(eng._in_flight))
        return submit(seq, *rest)

    x = sycl.malloc_device(N, np.uint32, q)
    q.memset(x, 0, N * 4).wait()
    eng.synchronize()
    monkeypatch.setattr(engine.kp.Sequence, "eval_async", counted)
    for k in range(3 * limit):
        step(q, x, k).wait()
        assert len(eng._in_flight) < limit
    assert max(tracked_at_submission) == limit - 1  # never trimmed before a submission
    out = np.zeros(N, np.uint32)
    q.memcpy(out, x, N * 4).wait()
    np.testing.assert_array_equal(out, expected_steps(range(3 * limit)))
    sycl.free(x, q)


@pytest.mark.parametrize("in_order", [False, True])
def test_launches_batched_together_are_kept_as_one_and_dropped_events_go(q, flag, in_order):
    """While launches join one batch, the queue keeps that batch's first part for `wait`
    and none of their events: an event its caller dropped is freed at once (none waits
    for the cyclic collector), and `q.wait()` still waits for every launch."""
    if in_order:
        q = sycl.queue(q.get_device(), property_list=[sycl.property.queue.in_order()])
    x = sycl.malloc_device(N, sycl.uint32, q)
    q.memset(x, 0, 4 * N)
    q.wait()
    before = submissions(q)
    first = busy(q, flag)
    alive = []
    ks = list(range(1, 41))
    for k in ks:
        e = step(q, x, k)
        alive.append(weakref.ref(e))
        del e
    # all 40 joined the batch opened behind the busy kernel
    assert submissions(q) - before <= 2
    kept = list(q._outstanding)  # the busy kernel's submission, and the batch's part
    assert len(kept) == 2 and all(type(w) is not sycl.event for w in kept)
    assert sum(r() is not None for r in alive) <= 1  # an in-order queue's last
    q.wait()
    assert first.is_complete() and q._outstanding == []
    out = np.zeros(N, np.uint32)
    q.memcpy(out, x, 4 * N).wait()
    sycl.free(x, q)
    np.testing.assert_array_equal(out, expected_steps(ks))


def test_a_wait_finding_its_work_done_leaves_the_next_wait_blocking(q, monkeypatch):
    """After a wait longer than the poll could cover, the next wait blocks at once. A wait
    for earlier work the device finished meanwhile tells nothing of how long the device
    takes, and leaves that as it was (before, it made the next long wait poll, taking a
    core from a CPU device's work)."""
    engine = q._scheduler.engine
    monkeypatch.setattr(engine, "batch_window_s", 0.0)  # each command on its own
    x = sycl.malloc_device(N, sycl.uint32, q)
    out = sycl.malloc_device(BUSY, sycl.uint32, q)
    try:
        q.fill(x, np.uint32(0), N).wait()
        first = step(q, x, 1)
        long = busy(q, out, deps=[first])
        long.wait()
        waited = engine.last_wait_s
        assert waited > 2 * engine.spin_wait_s
        assert not first._submission.finished  # done on the device, not yet known here
        first.wait()
        assert engine.last_wait_s == waited
        got = np.zeros(N, np.uint32)
        q.memcpy(got, x, 4 * N).wait()
        np.testing.assert_array_equal(got, expected_steps([1]))
    finally:
        sycl.free(x, q)
        sycl.free(out, q)
