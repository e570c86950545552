"""`sycl.range`, `sycl.id` and `sycl.nd_range` are made in C (`native/interned.c`, in
`vksycl._native`): equal arguments give the very object made before, which repeated
launches recognise by identity. Where that module cannot load, Python classes stand in.
Both must behave alike, and the public classes must be built on the native ones wherever
they load."""

from __future__ import annotations

import copy
import pickle
import subprocess
import sys
from typing import Any

import numpy as np
import pytest

import vksycl as sycl
from vksycl import _native, ranges

NATIVE_INDEX = _native.IndexBase
NATIVE_ND_RANGE = _native.NdRangeBase


def _index_class(base: Any) -> type:
    """A range class on `base`, its own cache, sized as sycl.range is."""
    return type("range", (base,), {"what": "range", "_made": {},
                                   "_sizes": ranges._Index.__dict__["_sizes"]})


def _nd_range_class(base: Any) -> type:
    """An nd_range class on `base`, its own cache, defined as sycl.nd_range is."""
    return type("nd_range", (base,), {
        "__slots__": ("_global", "_local", "_offset"), "_made": {},
        "_define": sycl.nd_range._define, "get_global_range": sycl.nd_range.get_global_range,
        "get_local_range": sycl.nd_range.get_local_range})


INDEX_BASES = [pytest.param(NATIVE_INDEX, id="native"),
               pytest.param(ranges._InternedIndex, id="python")]
ND_RANGE_BASES = [pytest.param(NATIVE_ND_RANGE, id="native"),
                  pytest.param(ranges._InternedNdRange, id="python")]


def test_public_classes_are_built_on_the_native_constructors():
    assert NATIVE_INDEX is not None and NATIVE_INDEX.__module__ == "vksycl._native"
    assert sycl.range.__mro__[2] is NATIVE_INDEX and sycl.id.__mro__[2] is NATIVE_INDEX
    assert sycl.nd_range.__mro__[1] is NATIVE_ND_RANGE
    assert not hasattr(sycl.nd_range((8,), (4,)), "__dict__")  # slots only


@pytest.mark.parametrize("base", INDEX_BASES)
def test_equal_sizes_give_the_very_object_in_every_spelling(base):
    r = _index_class(base)
    a = r(4, 2)
    assert tuple(a) == (4, 2) and type(a) is r
    for spelling in [(4, 2)], [np.int64(4), np.uint8(2)], [4.0, 2], [(np.int32(4), 2.0)]:
        assert r(*spelling) is a
    assert r(4, 2) is a  # found by the values as they came, now
    assert r(4) is not a and r(4) == (4,)


@pytest.mark.parametrize("base", INDEX_BASES)
def test_a_list_among_the_values_makes_an_equal_object_that_is_never_kept(base):
    r = _index_class(base)
    made = r([4, 2])
    assert made == (4, 2) and type(made) is r
    assert r._made == {}  # a list cannot be a key
    assert r(4, 2) is not made and r(4, 2) is r((4, 2))


@pytest.mark.parametrize("base", INDEX_BASES)
@pytest.mark.parametrize(("values", "message"), [
    ((-1,), "a range cannot be negative: (-1,)"),
    ((1, 2, 3, 4), "a range has 1 to 3 dimensions, got 4"),
    (("3",), "a range takes integer sizes, got str '3'"),
    ((2.5,), "a range takes integer sizes, got float 2.5"),
    (([1, -2],), "a range cannot be negative: (1, -2)"),
])
def test_bad_sizes_raise_and_keep_nothing(base, values, message):
    r = _index_class(base)
    with pytest.raises(sycl.exception) as info:
        r(*values)
    assert info.value.code() == sycl.errc.invalid and message in str(info.value)
    assert r._made == {}


def test_keywords_are_refused():
    with pytest.raises(TypeError, match="no keyword arguments"):
        sycl.range(n=3)


@pytest.mark.parametrize("base", INDEX_BASES)
def test_a_full_cache_starts_again_and_objects_stay_equal(base):
    r = _index_class(base)
    first = r(1)
    for n in range(2, 400):  # two keys each: the values as they came and the sizes
        r(n, 1)
    assert len(r._made) <= ranges._MOST_MADE
    again = r(1)
    assert again == first
    assert r(1) is again


@pytest.mark.parametrize("base", INDEX_BASES)
def test_a_found_object_gains_no_references(base):
    r = _index_class(base)
    kept = r(8, 8)
    assert r((8, 8)) is kept  # a key of its own from now on
    made = r._made
    before = sys.getrefcount(kept), sys.getrefcount(made)
    for _ in range(1000):
        r(8, 8)
        r((8, 8))
        r([8, 8])
    assert (sys.getrefcount(kept), sys.getrefcount(made)) == before


def test_pickled_and_copied_indices_come_back_as_the_same_objects():
    for made in sycl.range(4, 2), sycl.id(1, 2, 3):
        assert pickle.loads(pickle.dumps(made)) is made
        assert copy.copy(made) is made and copy.deepcopy(made) is made


@pytest.mark.parametrize("base", ND_RANGE_BASES)
def test_equal_nd_range_arguments_give_the_very_object(base):
    nd = _nd_range_class(base)
    a = nd((64,), (16,))
    assert a.get_global_range() == (64,) and a.get_local_range() == (16,)
    assert a.get_global_range() is sycl.range(64)
    assert nd((64,), (16,)) is a
    assert nd((64,), (16,), None) is a
    assert nd(global_range=(64,), local_range=(16,)) is a
    assert nd((64,), local_range=(16,), offset=None) is a
    assert nd((64,), (16,), (0,)) is not a  # another key, an equal nd_range
    assert nd((64,), (32,)) is not a


@pytest.mark.parametrize("base", ND_RANGE_BASES)
def test_nd_range_of_lists_is_made_and_never_kept(base):
    nd = _nd_range_class(base)
    a = nd([64], [16])
    assert a.get_global_range() == (64,) and nd._made == {}


@pytest.mark.parametrize("base", ND_RANGE_BASES)
def test_a_bad_nd_range_raises_and_keeps_nothing(base):
    nd = _nd_range_class(base)
    with pytest.raises(sycl.exception, match="not a multiple of the local range") as info:
        nd((64,), (30,))
    assert info.value.code() == sycl.errc.nd_range
    with pytest.raises(sycl.exception, match="different dimensions"):
        nd((64, 2), (16,))
    with pytest.raises(TypeError):
        nd((64,), (16,), None, 1)
    assert nd._made == {}


@pytest.mark.parametrize("base", ND_RANGE_BASES)
def test_a_found_nd_range_gains_no_references(base):
    nd = _nd_range_class(base)
    kept = nd((64,), (16,))
    made = nd._made
    before = sys.getrefcount(kept), sys.getrefcount(made)
    for _ in range(1000):
        nd((64,), (16,))
        nd([64], [16])
    assert (sys.getrefcount(kept), sys.getrefcount(made)) == before


def test_nd_ranges_pickle_copy_and_compare():
    a = sycl.nd_range(sycl.range(8, 4), sycl.range(4, 2), sycl.id(1, 1))
    for back in pickle.loads(pickle.dumps(a)), copy.deepcopy(a):
        assert back == a and hash(back) == hash(a)
        assert back.get_offset() is sycl.id(1, 1)
    assert type(sycl.nd_range.__new__(sycl.nd_range)) is sycl.nd_range  # unpickling's


def test_launches_over_interned_ranges_compute_the_same(q):
    """Ranges and nd_ranges from the native constructors launch as before: each spelling
    of the same range finds the same plan, and each launch adds its value."""
    x = sycl.malloc_device(64, sycl.int32, q)
    q.fill(x, np.int32(0), 64).wait()

    def body(i):
        x[i] += 1

    def nd_body(it):
        x[it.get_global_id(0)] += 2

    for launch in (sycl.range(64), 64, (64,), sycl.range(np.int64(64))):
        q.parallel_for(launch, body)
    for launch in (sycl.nd_range(sycl.range(64), sycl.range(16)), sycl.nd_range((64,), (16,))):
        q.parallel_for(launch, nd_body)
    q.wait()
    got = np.zeros(64, np.int32)
    q.memcpy(got, x, 64 * 4).wait()
    sycl.free(x, q)
    assert (got == 8).all()


NO_NATIVE = '''
import importlib.abc, sys

class NoNative(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "vksycl._native":
            raise ImportError("not built")

sys.meta_path.insert(0, NoNative())
import numpy as np
import vksycl as sycl
from vksycl.compiler import captures

q = sycl.queue()
x = sycl.malloc_device(64, sycl.float32, q)
q.fill(x, np.float32(0), 64).wait()

class Sim:
    def __init__(self):
        self.x, self.dt = x, 0.5

    def step(self, i):
        self.x[i] += self.dt

def nd(it):
    x[it.get_global_id(0)] += 1.0

sim = Sim()
for k in range(4):
    sim.dt = 0.25 * (k + 1)
    q.parallel_for(sycl.range(64), sim.step)
    q.parallel_for(sycl.nd_range((64,), (16,)), nd).wait()
q.wait()
out = np.zeros(64, np.float32)
q.memcpy(out, x, 256).wait()
print(sycl.range.__mro__[2].__name__, sycl.event.__mro__[1].__name__,
      captures.CapturePath.__name__, sycl.range(64) is sycl.range((64,)), float(out.min()),
      float(out.max()))
'''


def test_a_checkout_without_the_native_module_launches_through_the_stand_ins(tmp_path):
    """Where vksycl._native was not built, ranges, events and capture paths fall back to
    their Python stand-ins, and launches compute the same."""
    script = tmp_path / "no_native.py"  # kernels are read from their file
    script.write_text(NO_NATIVE)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    # 0.25 + 0.5 + 0.75 + 1.0 from the method, 4 x 1.0 from the nd_range kernel
    assert proc.stdout.split() == ["_InternedIndex", "_EventFields", "_PythonCapturePath",
                                   "True", "6.5", "6.5"]
