"""Debugging kernels on lavapipe: `print`, `syclexp.printf` and `assert` in device code.

Printed lines are written to sys.stdout by the host once the command completes, so
pytest's `capsys` sees them; a failed assertion is the `errc.runtime` error of the next
wait."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import vksycl as sycl
from vksycl.ext.oneapi import experimental as syclexp
from vksycl.ext.oneapi import this_work_item
from vksycl.kernels.launch import compiled

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve()


def line_of(marker: str) -> int:
    lines = HERE.read_text().splitlines()
    found = [n for n, text in enumerate(lines, 1)
             if f"# {marker}" in text and "line_of" not in text]
    assert len(found) == 1, marker
    return found[0]


def run_python(tmp_path: Path, code: str, *flags: str, env: dict | None = None
               ) -> subprocess.CompletedProcess:
    """Runs a program from a file (kernels need their source) in a new process."""
    script = tmp_path / "program.py"
    script.write_text(textwrap.dedent(code))
    environ = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p), **(env or {})}
    return subprocess.run([sys.executable, *flags, str(script)], capture_output=True,
                          text=True, timeout=300, env=environ)


# -- print ------------------------------------------------------------------------------

def test_many_work_items_print_their_values(q, mem, capsys):
    n = 1000
    x = mem.of(np.arange(n, dtype=np.float32) * 0.5)

    def body(i):
        print("item", i[0], x[i])

    q.parallel_for(sycl.range(n), body).wait()
    lines = capsys.readouterr().out.splitlines()
    assert sorted(lines) == sorted(f"item {k} {np.float32(k * 0.5)}" for k in range(n))


def test_lines_of_one_work_item_keep_its_order(q, mem, capsys):
    n = 256
    x = mem.of(np.arange(n, dtype=np.int32))

    def body(i):
        print("first", x[i])
        for k in range(3):
            print("loop", x[i], k)
        print("last", x[i])

    q.parallel_for(sycl.range(n), body).wait()
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 5 * n
    for item in range(n):
        mine = [t for t in lines if t.split()[1] == str(item)]
        assert mine == [f"first {item}", f"loop {item} 0", f"loop {item} 1",
                        f"loop {item} 2", f"last {item}"]


def test_format_specs_sep_end_and_types(q, mem, capsys):
    f = mem.of(np.array([3.14159], np.float32))
    d = mem.of(np.array([2.0 / 3.0], np.float64))
    n = mem.of(np.array([42], np.int32))
    big = mem.of(np.array([-(3 << 40)], np.int64))
    small = mem.of(np.array([200], np.uint8))

    def body():
        print(f"f={f[0]:.3f} e={f[0]:.2e} g={f[0]:g} n={n[0]:5d}| x={n[0]:#x} "
              f"p={n[0]:+05d} pct={f[0]:.1%}")
        print(f"d={d[0]:.10f} big={big[0]} u8={small[0]} {small[0]:08b}")
        print(n[0] > 40, n[0] < 40, f[0], d[0], sep=", ", end=";\n")
        print("no newline", end="")
        print(f"{n[0]:>6}|{n[0]:<6}|{n[0]:^6}|")

    q.single_task(body).wait()
    assert capsys.readouterr().out.splitlines() == [
        "f=3.142 e=3.14e+00 g=3.14159 n=   42| x=0x2a p=+0042 pct=314.2%",
        f"d=0.6666666667 big={-(3 << 40)} u8=200 11001000",
        f"True, False, {np.float32(3.14159)!s}, {2.0 / 3.0};",
        "no newline    42|42    |  42  |",
    ]


def test_printf_takes_c_formats(q, mem, capsys):
    n = mem.of(np.array([255, -7], np.int32))
    f = mem.of(np.array([1.5], np.float32))
    big = mem.of(np.array([1 << 40], np.uint64))

    def body():
        syclexp.printf("%d %5d|%-4d|%x %X %o %c\n", n[0], n[1], n[1], n[0], n[0], n[0], 65)
        syclexp.printf("%.3f %e %g %s %lu %% done\n", f[0], f[0], f[0], "str", big[0])

    q.single_task(body).wait()
    assert capsys.readouterr().out.splitlines() == [
        "255    -7|-7  |ff FF 377 A",
        f"1.500 1.500000e+00 1.5 str {1 << 40} % done",
    ]


def helper_prints(v):
    print("helper", v)


def test_device_functions_print(q, mem, capsys):
    x = mem.of(np.arange(4, dtype=np.int16))

    def body(i):
        helper_prints(x[i] * 2)

    q.parallel_for(sycl.range(4), body).wait()
    assert sorted(capsys.readouterr().out.splitlines()) == [f"helper {2 * k}" for k in range(4)]


def test_host_printf_formats_as_c(capsys):
    syclexp.printf("%3d|%.2f|%s\n", 7, 0.125, "ok")
    assert capsys.readouterr().out == "  7|0.12|ok\n"


def test_output_comes_before_a_dependent_host_task(q, mem, capsys):
    x = mem.of(np.arange(2, dtype=np.int32))
    seen = []

    def body(i):
        print("device", x[i])

    e = q.parallel_for(sycl.range(2), body)

    def cgf(h):
        h.depends_on(e)
        h.host_task(lambda: seen.append(capsys.readouterr().out))

    q.submit(cgf).wait()
    assert sorted(seen[0].splitlines()) == ["device 0", "device 1"]


def test_overflow_reports_lost_lines_and_the_buffer_starts_over(tmp_path):
    # 256 bytes: 20 header words, 44 record words, 22 lines of one value
    proc = run_python(tmp_path, """
        import warnings
        import numpy as np
        import vksycl as sycl
        q = sycl.queue()
        x = sycl.malloc_shared(100, np.int32, q)
        x[:] = np.arange(100)
        def body(i):
            print(x[i])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            q.parallel_for(sycl.range(100), body).wait()
        print("warned:", [str(w.message) for w in caught])
        q.parallel_for(sycl.range(20), body).wait()
        """, env={"VKSYCL_PRINT_BUFFER": "256"})
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    first, warned, second = out[:22], out[22], out[23:]
    assert len(set(first)) == 22 and set(first) <= {str(k) for k in range(100)}
    assert "[vksycl] 78 lines lost: the print buffer is full" in proc.stderr
    assert "78 lines lost" in warned
    assert sorted(second, key=int) == [str(k) for k in range(20)]


def test_graph_replays_print_each_time(ordered_q, mem, capsys):
    q = ordered_q
    x = mem.of(np.zeros(4, np.int32))

    def bump(i):
        x[i] = x[i] + 1
        print("bump", i[0], x[i])

    g = syclexp.command_graph(q)
    g.begin_recording(q)
    q.parallel_for(sycl.range(4), bump)
    g.end_recording(q)
    exe = g.finalize()
    for _ in range(3):
        q.ext_oneapi_graph(exe).wait()
    lines = capsys.readouterr().out.splitlines()
    assert sorted(lines) == sorted(f"bump {k} {r}" for k in range(4) for r in (1, 2, 3))
    for k in range(4):
        assert [t for t in lines if t.startswith(f"bump {k} ")] == \
            [f"bump {k} {r}" for r in (1, 2, 3)]


def test_fused_kernels_print(ordered_q, mem, capsys):
    q = ordered_q
    n = 64
    x = mem.of(np.arange(n, dtype=np.float32))
    y = mem.zeros(n, np.float32)

    def scale(i):
        y[i] = x[i] * 2
        print(f"scale {i[0]} {y[i]:.1f}")

    def shift(i):
        y[i] = y[i] + 1
        print(f"shift {i[0]} {y[i]:.1f}")

    g = syclexp.command_graph(q)
    g.begin_recording(q)
    q.parallel_for(sycl.range(n), scale)
    q.parallel_for(sycl.range(n), shift)
    g.end_recording(q)
    exe = g.finalize([syclexp.property.graph.perform_fusion()])
    assert exe.fusion_report().groups == [[0, 1]]
    q.ext_oneapi_graph(exe).wait()
    lines = capsys.readouterr().out.splitlines()
    assert sorted(lines) == sorted([f"scale {k} {2.0 * k:.1f}" for k in range(n)] +
                                   [f"shift {k} {2.0 * k + 1:.1f}" for k in range(n)])
    for k in range(n):
        assert [t for t in lines if t.split()[1] == str(k)] == \
            [f"scale {k} {2.0 * k:.1f}", f"shift {k} {2.0 * k + 1:.1f}"]
    np.testing.assert_array_equal(mem.view(y, n), np.arange(n) * 2 + 1)


@syclexp.nd_range_kernel(1)
def ff_checked(start: sycl.float32, ptr: sycl.ptr[sycl.float32], limit: sycl.int32):
    i = this_work_item.get_nd_item(1).get_global_linear_id()
    ptr[i] = start + sycl.float32(i)
    print(f"ff {i} {ptr[i]:.1f}")
    assert i < limit, "past the limit"  # ASSERT-FF


def test_free_function_kernels_print_and_assert(ordered_q, mem, capsys):
    q = ordered_q
    p = mem.zeros(8, np.float32)
    launch = sycl.nd_range(sycl.range(8), sycl.range(4))
    syclexp.nd_launch(q, launch, ff_checked, np.float32(1), p, np.int32(8))
    q.wait()
    assert sorted(capsys.readouterr().out.splitlines()) == \
        [f"ff {k} {k + 1:.1f}" for k in range(8)]
    syclexp.nd_launch(q, launch, ff_checked, np.float32(1), p, np.int32(5))
    with pytest.raises(sycl.exception) as ex:
        q.wait()
    assert ex.value.code() == sycl.errc.runtime
    message = str(ex.value)
    assert f"{HERE}:{line_of('ASSERT-FF')}" in message
    assert "past the limit" in message and "3 work-items failed" in message
    assert "work-item 5" in message or "work-item 6" in message or "work-item 7" in message


# -- assert -----------------------------------------------------------------------------

def test_a_passing_assertion_is_silent(q, mem):
    x = mem.of(np.arange(16, dtype=np.int32))
    y = mem.zeros(16, np.int32)

    def body(i):
        assert x[i] < 16, "in range"
        y[i] = x[i] * 3

    q.parallel_for(sycl.range(16), body).wait()
    np.testing.assert_array_equal(mem.view(y, 16), np.arange(16) * 3)


def test_a_failing_assertion_raises_at_the_wait_and_the_queue_goes_on(q, mem):
    x = mem.of(np.arange(100, dtype=np.int32))
    y = mem.zeros(100, np.int32)

    def body(i):
        assert x[i] != 37, "found 37"  # ASSERT-37
        y[i] = 1

    with pytest.raises(sycl.exception) as ex:
        q.parallel_for(sycl.range(100), body).wait()
    assert ex.value.code() == sycl.errc.runtime
    message = str(ex.value)
    assert f"{HERE}:{line_of('ASSERT-37')}:" in message
    assert "found 37" in message and "work-item 37" in message
    assert "1 work-item failed" in message
    # the queue stays usable, and the failure is reported once
    q.parallel_for(sycl.range(100), body_ok(y)).wait()
    np.testing.assert_array_equal(mem.view(y, 100), np.full(100, 2))


def body_ok(y):
    def body(i):
        assert y[i] >= 0
        y[i] = 2
    return body


def test_assertion_in_an_nd_range_kernel_names_the_work_item(q, mem):
    x = mem.zeros(64, np.int32)

    def body(it):
        gid = it.get_global_id(0)
        x[gid] = gid
        assert it.get_local_id(0) < 15  # ASSERT-ND

    with pytest.raises(sycl.exception) as ex:
        q.parallel_for(sycl.nd_range(sycl.range(64), sycl.range(16)), body).wait()
    message = str(ex.value)
    assert f"{HERE}:{line_of('ASSERT-ND')}:" in message
    assert "assert it.get_local_id(0) < 15" in message and "4 work-items failed" in message
    failing = int(message.split("work-item ")[1].split(";")[0])
    assert failing % 16 == 15
    np.testing.assert_array_equal(mem.view(x, 64), np.arange(64))


def test_assertion_in_a_2d_kernel_names_both_ids(q, mem):
    def body(i):
        assert i[0] != 2 or i[1] != 3, "corner"

    with pytest.raises(sycl.exception) as ex:
        q.parallel_for(sycl.range(4, 5), body).wait()
    assert "work-item (2, 3)" in str(ex.value)


def test_the_event_wait_raises_too(q, mem):
    never = mem.zeros(1, np.int32)

    def body():
        assert never[0] == 1, "always"

    e = q.single_task(body)
    with pytest.raises(sycl.exception) as ex:
        e.wait()
    assert "always" in str(ex.value) and "the single_task" in str(ex.value)
    q.wait()  # reported once


def test_python_O_drops_assertions(tmp_path):
    proc = run_python(tmp_path, """
        import numpy as np
        import vksycl as sycl
        q = sycl.queue()
        y = sycl.malloc_shared(4, np.int32, q)
        def body(i):
            assert i[0] > 100, "never"
            y[i] = 7
        q.parallel_for(sycl.range(4), body).wait()
        print(np.asarray(y)[:4].tolist())
        """, "-O")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[7, 7, 7, 7]"


# -- what a kernel without them pays, and errors -----------------------------------------

def test_kernels_that_neither_print_nor_assert_take_no_debug_argument(q, mem):
    y = mem.zeros(4, np.int32)

    def plain(i):
        y[i] = 1

    def printing(i):
        y[i] = 1
        print(i[0])

    ck = compiled(q.get_device(), plain, sycl.range(4))
    assert not ck.debug_records and all(a.kind != "debug" for a in ck.args)
    ck2 = compiled(q.get_device(), printing, sycl.range(4))
    assert [a.kind for a in ck2.args].count("debug") == 1 and len(ck2.debug_records) == 1
    assert ck2.push_size == ck.push_size + 8


def bad_spec(y):
    def body(i):
        print(f"{y[i]:.3d}")  # BAD-SPEC
    return body


def bad_value(y):
    def body(i):
        print(y)  # BAD-VALUE
    return body


def bad_printf(y):
    def body(i):
        syclexp.printf("%d %d\n", y[i])  # BAD-PRINTF
    return body


@pytest.mark.parametrize("factory,marker,words", [
    (bad_spec, "BAD-SPEC", "format spec '.3d'"),
    (bad_value, "BAD-VALUE", "cannot print a pointer"),
    (bad_printf, "BAD-PRINTF", "more conversions than the 1 values"),
])
def test_bad_prints_are_build_errors_at_their_line(q, mem, factory, marker, words):
    y = mem.zeros(4, np.int32)
    with pytest.raises(sycl.exception) as ex:
        compiled(q.get_device(), factory(y), sycl.range(4))
    assert ex.value.code() == sycl.errc.build
    assert f"{HERE}:{line_of(marker)}:" in str(ex.value) and words in str(ex.value)
