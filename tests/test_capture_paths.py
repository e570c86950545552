"""A launch reads each capture path again (`self.x`, `cfg.scale`, a global, an argument's
attribute) through a getter `compiler/captures.path_getter` builds once: in C
(`native/capture_path.c`) where vksycl's native module is built, else a Python closure.
Both must read the same values and fail with the same exceptions, and kernels reading
such paths must see the values they hold at each launch."""

from __future__ import annotations

import types

import numpy as np
import pytest

import vksycl as sycl
from vksycl import _native
from vksycl.compiler import captures

READERS = [pytest.param(_native.CapturePath, id="native"),
           pytest.param(captures._PythonCapturePath, id="python")]

SCALE = 3.0


class Config:
    def __init__(self) -> None:
        self.scale = 2.0
        self.inner = types.SimpleNamespace(offset=5)


@pytest.fixture(params=READERS)
def reader(request, monkeypatch):
    """Each implementation in turn, as the one `path_getter` builds."""
    monkeypatch.setattr(captures, "CapturePath", request.param)
    return request.param


def _getter(reader, path: tuple, pyfn):
    get = captures.path_getter(path, pyfn)
    assert type(get) is reader
    return get


def test_path_getter_builds_native_getters():
    cfg = Config()

    def kernel(i):
        return cfg.scale

    get = captures.path_getter(("cell", "cfg", "scale"), kernel)
    assert type(get) is _native.CapturePath and get(kernel, ()) == 2.0


def test_every_root_reads_the_value_it_holds_now(reader):
    cfg = Config()
    helper_scale = 7

    def helper():
        return helper_scale

    def kernel(i, arg):
        return cfg.scale + SCALE + helper() + arg

    class Sim:
        def __init__(self) -> None:
            self.cfg = Config()

        def step(self, i):
            return self.cfg.scale

    sim = Sim()
    cell = _getter(reader, ("cell", "cfg", "scale"), kernel)
    deep = _getter(reader, ("cell", "cfg", "inner", "offset"), kernel)
    whole = _getter(reader, ("cell", "cfg"), kernel)
    glob = _getter(reader, ("global", __name__, "SCALE"), kernel)
    other = _getter(reader, ("global", "numpy", "pi"), kernel)
    param = _getter(reader, ("param", 1, "real"), kernel)
    fncell = _getter(reader, ("fncell", ("cell", "helper"), "helper_scale"), kernel)
    selfs = _getter(reader, ("self", "cfg", "scale"), sim.step)
    assert cell(kernel, ()) == 2.0 and deep(kernel, ()) == 5 and whole(kernel, ()) is cfg
    assert glob(kernel, ()) == 3.0 and other(kernel, ()) == np.pi
    assert param(kernel, (0, 4.5)) == 4.5 and param(kernel, [0, 2j]) == 0.0
    assert fncell(kernel, ()) == 7 and selfs(sim.step, ()) == 2.0
    cfg.scale, cfg.inner.offset, helper_scale = 9.0, 6, 8  # read afresh at each call
    sim.cfg.scale = 1.5
    cfg2 = Config()
    assert cell(kernel, ()) == 9.0 and deep(kernel, ()) == 6 and fncell(kernel, ()) == 8
    assert selfs(sim.step, ()) == 1.5 and whole(kernel, ()) is not cfg2
    cell_of_method = _getter(reader, ("cell", "cfg", "scale"), kernel)
    assert cell_of_method(types.MethodType(kernel, sim), ()) == 9.0


def test_failures_are_the_same_exceptions(reader):
    cfg = Config()

    def kernel(i):
        return cfg.scale

    def no_cells(i):
        return i

    cell = _getter(reader, ("cell", "cfg", "missing"), kernel)
    with pytest.raises(AttributeError, match="missing"):
        cell(kernel, ())
    with pytest.raises(TypeError):  # no closure at all
        _getter(reader, ("cell", "cfg"), kernel)(no_cells, ())
    with pytest.raises(AttributeError, match="__self__"):
        _getter(reader, ("self", "x"), kernel)(kernel, ())
    with pytest.raises(KeyError, match="NOT_A_GLOBAL"):
        _getter(reader, ("global", __name__, "NOT_A_GLOBAL"), kernel)(kernel, ())
    with pytest.raises(KeyError, match="no_such_module"):
        _getter(reader, ("global", "no_such_module", "x"), kernel)(kernel, ())
    with pytest.raises(IndexError):
        _getter(reader, ("param", 3), kernel)(kernel, (1,))
    emptied = types.FunctionType(kernel.__code__, globals(), "emptied", None,
                                 (types.CellType(),))
    with pytest.raises(ValueError, match="empty"):
        _getter(reader, ("cell", "cfg"), kernel)(emptied, ())


@pytest.mark.parametrize("reader", [p.values[0] for p in READERS])
def test_bad_construction_is_refused(reader):
    with pytest.raises(ValueError, match="no root elsewhere"):
        reader("elsewhere", 0, None, (), None)
    with pytest.raises(ValueError, match="no root cell at -1"):
        reader("cell", -1, None, (), None)
    with pytest.raises(TypeError, match="attribute names"):
        reader("self", 0, None, (1,), None)
    with pytest.raises(TypeError, match="another kind"):
        reader("module", 0, "numpy", (), None)
    with pytest.raises(TypeError, match="another kind"):
        reader("fncell", 0, "x", (), None)
    get = reader("self", 0, None, (), None)
    with pytest.raises(TypeError):
        get(1)


class Particles:
    """A kernel method reading its object's attributes, as simulations are written."""

    def __init__(self, q: sycl.queue, n: int) -> None:
        self.x = sycl.malloc_device(n, sycl.float32, q)
        self.dt = 0.5
        self.params = types.SimpleNamespace(gain=2.0)

    def step(self, i):
        self.x[i] = self.x[i] * self.params.gain + self.dt


def test_kernels_see_attributes_as_they_are_at_each_launch(q):
    n = 64
    p = Particles(q, n)
    q.fill(p.x, np.float32(1.0), n).wait()
    expected = np.ones(n, np.float32)
    for k in range(6):  # new values, repeats and a rebound object in turn
        if k == 2:
            p.dt = 0.25
        if k == 4:
            p.params = types.SimpleNamespace(gain=1.0)
        q.parallel_for(sycl.range(n), p.step)
        expected = expected * np.float32(p.params.gain) + np.float32(p.dt)
    q.wait()
    got = np.zeros(n, np.float32)
    q.memcpy(got, p.x, n * 4).wait()
    sycl.free(p.x, q)
    np.testing.assert_array_equal(got, expected)
