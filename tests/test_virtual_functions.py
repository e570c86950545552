"""sycl_ext_oneapi_virtual_functions on lavapipe: polymorphic structs in USM, virtual calls
dispatched on the stored type, sets of virtual methods, and every diagnostic and exception
the spec lists. Several tests port the scenarios of DPC++'s e2e VirtualFunctions tests."""

from __future__ import annotations

import abc
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

HERE = "test_virtual_functions.py"


def _usm(q, n, t):
    p = sycl.malloc_shared(n, t, q)
    np.asarray(p).view(np.uint8)[:] = 0
    return p


# -- the spec's example: a base and a derived class --------------------------------------------

@sycl.struct
class Base:
    @syclexp.indirectly_callable()
    def get_random_number(self):
        return 4

    def get_host_random_number(self):  # not a device function: never compiled
        raise RuntimeError("not implemented")


@sycl.struct
class Derived(Base):
    @syclexp.indirectly_callable()
    def get_random_number(self):
        return 221


def test_spec_example_local_value_and_object_in_memory(q):
    obj = _usm(q, 1, syclexp.storage_for(Derived))
    result = _usm(q, 1, sycl.int32)
    props = [syclexp.assume_indirect_calls]

    def construct():
        Derived.construct_at(obj)

    def local_call():
        b = Base()
        result[0] = b.get_random_number()

    def virtual_call():
        result[0] = Base.at(obj).get_random_number()

    q.single_task(construct).wait()
    q.single_task(local_call, properties=props).wait()
    assert result[0] == 4
    q.single_task(virtual_call, properties=props).wait()
    assert result[0] == 221


def test_layout_tag_first_then_base_fields_then_own():
    assert Rect.__vksycl_struct__.fields[0][0] == "_vtag"
    assert [n for n, _ in Rect.__vksycl_struct__.fields] == ["_vtag", "scale", "w", "h"]
    assert Rect.dtype.names[:2] == Circle.dtype.names[:2] == ("_vtag", "scale")
    store = syclexp.storage_for(Rect, Circle, Square, Dbl)
    sizes = [c.dtype.itemsize for c in (Rect, Circle, Square, Dbl)]
    assert np.dtype(store.dtype).itemsize == max(sizes) == Rect.dtype.itemsize == 16
    assert Dbl.dtype.itemsize == 12 and Circle.dtype.itemsize == 12
    assert syclexp.storage_for(Rect, Circle, Square, Dbl) is store  # one type per classes

    @sycl.struct
    class Narrow:
        x: sycl.int8

        @syclexp.indirectly_callable()
        def f(self):
            return self.x

    @sycl.struct
    class Wide(Narrow):
        d: sycl.float64

    assert Narrow.dtype.itemsize == 8 and Wide.dtype.itemsize == 16
    assert Wide.dtype.fields["d"][1] == 8  # the double after the tag and the byte, aligned
    wide = np.dtype(syclexp.storage_for(Narrow, Wide).dtype)
    assert wide.itemsize == 16 and all(wide.fields[n][0] == np.uint64 for n in wide.names)
    assert Rect._vtag != Circle._vtag != 0
    assert Rect(scale=1, w=2, h=3)._vtag == Rect._vtag


# -- several derived types in one array ---------------------------------------------------------

@sycl.struct
class Shape:
    scale: sycl.float32

    @syclexp.indirectly_callable()
    def area(self):
        return sycl.float32(0)


def twice(x):
    return x * 2


@sycl.struct
class Rect(Shape):
    w: sycl.float32
    h: sycl.float32

    @syclexp.indirectly_callable()
    def area(self):
        return self.scale * self.w * self.h


@sycl.struct
class Circle(Shape):
    r: sycl.float32

    def squared(self):  # a plain method, called from an overrider
        return self.r * self.r

    @syclexp.indirectly_callable()
    def area(self):
        return self.scale * 3 * self.squared()


@sycl.struct
class Square(Rect):  # two levels: Square -> Rect -> Shape
    @syclexp.indirectly_callable()
    def area(self):
        return twice(Rect.area(self))  # a device function, and the base's method


@sycl.struct
class Dbl(Shape):
    k: sycl.int32

    @syclexp.indirectly_callable()
    def area(self):
        return self.k  # an int: the call's type is the overriders' common one


def _build(q, n):
    store = _usm(q, n, syclexp.storage_for(Rect, Circle, Square))

    def build(i):
        if i % 3 == 0:
            Rect.construct_at(store + i, scale=1.0, w=sycl.float32(i), h=2.0)
        elif i % 3 == 1:
            Circle.construct_at(store + i, scale=0.5, r=sycl.float32(i))
        else:
            Square.construct_at(store + i, scale=1.0, w=sycl.float32(i), h=sycl.float32(i))

    q.parallel_for(sycl.range(n), build).wait()
    return store


def _expected(n):
    i = np.arange(n, dtype=np.float32)
    return np.select([i % 3 == 0, i % 3 == 1], [i * 2, np.float32(0.5) * 3 * i * i],
                     2 * i * i).astype(np.float32)


def test_several_derived_types_in_one_array(q):
    n = 1000
    store = _build(q, n)
    out = _usm(q, n, sycl.float32)

    def use(i):
        out[i] = Shape.at(store + i).area()

    q.parallel_for(sycl.range(n), use, properties=[syclexp.assume_indirect_calls]).wait()
    np.testing.assert_allclose(np.asarray(out), _expected(n), rtol=1e-6)


def test_objects_as_locals_fields_and_loops(q):
    n = 30
    store = _build(q, n)
    out = _usm(q, 3, sycl.float32)

    def use():
        total = sycl.float32(0)
        for i in range(n):
            s = Shape.at(store + i)  # a variable in a loop
            total += s.area() * s.scale
        out[0] = total
        r = Rect.at(store + 3)  # a static type lower in the hierarchy
        out[1] = r.area() + r.w
        local = Square(scale=2.0, w=3.0, h=1.0)  # a local value: a static call
        out[2] = local.area()

    q.single_task(use, properties=[syclexp.assume_indirect_calls]).wait()
    scale = np.where(np.arange(n) % 3 == 1, 0.5, 1.0)
    assert np.asarray(out)[0] == pytest.approx((_expected(n) * scale).sum(), rel=1e-5)
    assert np.asarray(out)[1] == pytest.approx(6 + 3)
    assert np.asarray(out)[2] == pytest.approx(12)


def test_fields_written_through_objects(q):
    store = _build(q, 3)

    def grow():
        s = Shape.at(store + 1)
        s.scale = s.scale * 4
        c = Circle.at(store + 1)
        c.r += 1.0

    q.single_task(grow).wait()  # no virtual call: no property needed
    circle = np.asarray(store)[1:2].view(np.uint8)[: Circle.dtype.itemsize].view(Circle.dtype)
    assert circle["scale"][0] == 2.0 and circle["r"][0] == 2.0
    assert circle["_vtag"][0] == Circle._vtag


def test_overriders_returning_int_and_float_promote(q):
    store = _usm(q, 2, syclexp.storage_for(Rect, Dbl))
    out = _usm(q, 2, sycl.float32)

    def build():
        Rect.construct_at(store, scale=1.0, w=1.5, h=3.0)
        Dbl.construct_at(store + 1, scale=1.0, k=7)

    def use(i):
        out[i] = Shape.at(store + i).area()

    q.single_task(build).wait()
    q.parallel_for(sycl.range(2), use, properties=[syclexp.assume_indirect_calls]).wait()
    np.testing.assert_array_equal(np.asarray(out), [4.5, 7.0])


def test_unconstructed_memory_calls_nothing_and_gives_zero(q):
    store = _usm(q, 2, syclexp.storage_for(Rect))
    out = _usm(q, 2, sycl.float32)
    np.asarray(out)[:] = 5

    def use(i):
        out[i] = Shape.at(store + i).area()

    q.parallel_for(sycl.range(2), use, properties=[syclexp.assume_indirect_calls]).wait()
    np.testing.assert_array_equal(np.asarray(out), [0, 0])


# -- two levels of inheritance with an abstract base (DPC++'s more-complex-hierarchy) ------------

@sycl.struct
class AbstractOp:
    @syclexp.indirectly_callable()
    @abc.abstractmethod
    def apply_op(self, data): ...


@sycl.struct
class IncrementOp(AbstractOp):
    @syclexp.indirectly_callable()
    def apply_op(self, data):
        self.increment(data)  # a virtual call inside an overrider

    @syclexp.indirectly_callable()
    @abc.abstractmethod
    def increment(self, data): ...


@sycl.struct
class IncrementBy1(IncrementOp):
    @syclexp.indirectly_callable()
    def increment(self, data):
        data[0] += 1


@sycl.struct
class IncrementBy2(IncrementOp):
    @syclexp.indirectly_callable()
    def increment(self, data):
        data[0] += 2


@sycl.struct
class IncrementBy4(IncrementOp):
    @syclexp.indirectly_callable()
    def increment(self, data):
        data[0] += 4


@sycl.struct
class IncrementBy8(IncrementOp):
    @syclexp.indirectly_callable()
    def increment(self, data):
        data[0] += 8


def apply(data, obj):
    obj.apply_op(data)


@pytest.mark.parametrize("case", range(4))
def test_more_complex_hierarchy(q, case):
    classes = (IncrementBy1, IncrementBy2, IncrementBy4, IncrementBy8)
    store = _usm(q, 1, syclexp.storage_for(*classes))
    data = _usm(q, 1, sycl.int32)
    data[0] = 42

    def kernel():
        if case == 0:
            IncrementBy1.construct_at(store)
        elif case == 1:
            IncrementBy2.construct_at(store)
        elif case == 2:
            IncrementBy4.construct_at(store)
        else:
            IncrementBy8.construct_at(store)
        apply(data, AbstractOp.at(store))

    q.single_task(kernel, properties=[syclexp.assume_indirect_calls]).wait()
    assert data[0] == 42 + (1, 2, 4, 8)[case]


# -- overriders missing at some levels (DPC++'s missing-overrides) -------------------------------

@sycl.struct
class Op:
    @syclexp.indirectly_callable()
    def increment(self, data):
        pass

    @syclexp.indirectly_callable()
    def multiply(self, data):
        pass

    @syclexp.indirectly_callable()
    def subtract(self, data):
        pass


@sycl.struct
class IncBy1(Op):
    @syclexp.indirectly_callable()
    def increment(self, data):
        data[0] += 1


@sycl.struct
class IncBy1SubBy2(IncBy1):
    @syclexp.indirectly_callable()
    def subtract(self, data):
        data[0] -= 2


@sycl.struct
class MulBy2(Op):
    @syclexp.indirectly_callable()
    def multiply(self, data):
        data[0] *= 2


@sycl.struct
class MulBy2IncBy8(MulBy2):
    @syclexp.indirectly_callable()
    def increment(self, data):
        data[0] += 8


@sycl.struct
class SubBy4(Op):
    @syclexp.indirectly_callable()
    def subtract(self, data):
        data[0] -= 4


@sycl.struct
class SubBy4MulBy4(SubBy4):
    @syclexp.indirectly_callable()
    def multiply(self, data):
        data[0] *= 4


def apply_all(data, obj):
    obj.increment(data)
    obj.subtract(data)
    obj.multiply(data)


OPS = (IncBy1, IncBy1SubBy2, MulBy2, MulBy2IncBy8, SubBy4, SubBy4MulBy4)


def test_missing_overrides_use_the_nearest_base(q):
    store = _usm(q, len(OPS), syclexp.storage_for(*OPS))
    data = _usm(q, len(OPS), sycl.int32)
    np.asarray(data)[:] = 42

    def kernel(i):
        if i == 0:
            IncBy1.construct_at(store + i)
        elif i == 1:
            IncBy1SubBy2.construct_at(store + i)
        elif i == 2:
            MulBy2.construct_at(store + i)
        elif i == 3:
            MulBy2IncBy8.construct_at(store + i)
        elif i == 4:
            SubBy4.construct_at(store + i)
        else:
            SubBy4MulBy4.construct_at(store + i)
        apply_all(data + i, Op.at(store + i))

    q.parallel_for(sycl.range(len(OPS)), kernel,
                   properties=[syclexp.assume_indirect_calls]).wait()
    want = []
    for cls in OPS:  # the same methods on host objects
        host = np.array([42], np.int32)
        apply_all(host, cls())
        want.append(host[0])
    assert want == [43, 41, 84, 100, 38, 152]
    np.testing.assert_array_equal(np.asarray(data), want)


# -- work-items calling different overriders (DPC++'s range-non-uniform-vf) ---------------------

@sycl.struct
class RoundingOp:
    @syclexp.indirectly_callable()
    @abc.abstractmethod
    def apply(self, v: sycl.float32): ...


@sycl.struct
class FloorOp(RoundingOp):
    @syclexp.indirectly_callable()
    def apply(self, v: sycl.float32):
        return sycl.floor(v)


@sycl.struct
class CeilOp(RoundingOp):
    @syclexp.indirectly_callable()
    def apply(self, v: sycl.float32):
        return sycl.ceil(v)


@sycl.struct
class TruncOp(RoundingOp):
    @syclexp.indirectly_callable()
    def apply(self, v: sycl.float32):
        return sycl.trunc(v)


def test_work_items_dispatch_to_different_overriders(q):
    n = 1024
    store = _usm(q, 3, syclexp.storage_for(FloorOp, CeilOp, TruncOp))
    values = (np.arange(n, dtype=np.float32) * np.float32(0.7) - 300).astype(np.float32)
    data = _usm(q, n, sycl.float32)
    np.asarray(data)[:] = values

    def construct():
        FloorOp.construct_at(store)
        CeilOp.construct_at(store + 1)
        TruncOp.construct_at(store + 2)

    def kernel(i):
        data[i] = RoundingOp.at(store + i % 3).apply(data[i])

    q.single_task(construct).wait()
    q.parallel_for(sycl.range(n), kernel, properties=[syclexp.assume_indirect_calls]).wait()
    host = [FloorOp(), CeilOp(), TruncOp()]  # the same methods on the host
    want = np.array([host[i % 3].apply(v) for i, v in enumerate(values)], np.float32)
    np.testing.assert_array_equal(np.asarray(data), want)


# -- group barriers inside overriders (DPC++'s group-barrier) -------------------------------

@sycl.struct
class GroupOp:
    @syclexp.indirectly_callable()
    @abc.abstractmethod
    def apply(self, local, wg): ...


@sycl.struct
class SumOp(GroupOp):
    @syclexp.indirectly_callable()
    def apply(self, local, wg):
        local[wg.get_local_id(0)] = wg.get_local_id(0) + wg.get_group_id(0)
        sycl.group_barrier(wg)
        if wg.leader():
            total = 0
            for k in range(wg.get_local_linear_range()):
                total += local[k]
            local[0] = total
        sycl.group_barrier(wg)
        return local[0]


@sycl.struct
class ProductOp(GroupOp):
    @syclexp.indirectly_callable()
    def apply(self, local, wg):
        local[wg.get_local_id(0)] = wg.get_local_id(0) + wg.get_group_id(0) + 1
        sycl.group_barrier(wg)
        if wg.leader():
            total = 1
            for k in range(wg.get_local_linear_range()):
                total *= local[k]
            local[0] = total
        sycl.group_barrier(wg)
        return local[0]


@pytest.mark.parametrize("cls", [SumOp, ProductOp])
def test_group_barriers_inside_overriders(q, cls):
    g, wg_size = 16, 4
    store = _usm(q, 1, syclexp.storage_for(SumOp, ProductOp))
    out = _usm(q, g, sycl.int32)
    cls.construct_at(store)  # on the host: every work-group calls the same overrider
    local = syclexp.work_group_memory(sycl.int32, (wg_size,))

    def kernel(it):
        out[it.get_global_id(0)] = GroupOp.at(store).apply(local, it.get_group())

    q.parallel_for(sycl.nd_range((g,), (wg_size,)), kernel,
                   properties=[syclexp.assume_indirect_calls]).wait()
    ids = np.arange(wg_size)
    want = [int((ids + w).sum()) if cls is SumOp else int(np.prod(ids + w + 1))
            for w in range(g // wg_size)]
    np.testing.assert_array_equal(np.asarray(out), np.repeat(want, wg_size))


# -- several sets (the spec's set_A / set_B) -------------------------------------------------------

class SetA:
    pass


class SetB:
    pass


class SetEmpty:
    pass


@sycl.struct
class Foo:
    value: sycl.int32

    @syclexp.indirectly_callable_in(SetA)
    def foo(self):
        return self.value + 1

    @syclexp.indirectly_callable_in(SetA)
    def bar(self):
        return self.value + 2

    @syclexp.indirectly_callable_in(SetB)
    def baz(self):
        return self.value + 3


@sycl.struct
class FooB(Foo):
    @syclexp.indirectly_callable_in(SetB)  # this overrider is in another set
    def foo(self):
        return self.value + 100


def test_several_sets(q):
    store = _usm(q, 2, syclexp.storage_for(Foo, FooB))
    out = _usm(q, 4, sycl.int32)

    def build():
        Foo.construct_at(store, value=10)
        FooB.construct_at(store + 1, value=20)

    def use_a():
        out[0] = Foo.at(store).foo() + Foo.at(store).bar()

    def use_ab():
        out[1] = Foo.at(store + 1).foo()
        out[2] = Foo.at(store).baz()
        out[3] = Foo.at(store).foo()

    q.single_task(build).wait()
    q.single_task(use_a, properties=[syclexp.assume_indirect_calls_to(SetA)]).wait()
    q.single_task(use_ab, properties=[syclexp.assume_indirect_calls_to(SetA, SetB)]).wait()
    np.testing.assert_array_equal(np.asarray(out), [11 + 12, 120, 13, 11])


def test_call_outside_the_declared_sets_is_a_build_error(q):
    store = _usm(q, 1, syclexp.storage_for(Foo))

    def use():
        Foo.at(store).baz()

    with pytest.raises(sycl.exception) as ei:
        q.single_task(use, properties=[syclexp.assume_indirect_calls_to(SetA)])
    assert ei.value.code() == sycl.errc.build
    assert HERE in str(ei.value) and "Foo.baz()" in str(ei.value) and "SetA" in str(ei.value)


# -- the property and the diagnostics -------------------------------------------------------------

def test_virtual_call_without_the_property_is_a_build_error_naming_the_call(q):
    store = _build(q, 3)
    out = _usm(q, 1, sycl.float32)

    def use():
        out[0] = Shape.at(store).area()

    with pytest.raises(sycl.exception) as ei:
        q.single_task(use)
    msg = str(ei.value)
    assert ei.value.code() == sycl.errc.build
    assert HERE in msg and "Shape.area()" in msg and "assume_indirect_calls" in msg
    line = use.__code__.co_firstlineno + 1
    assert f"{HERE}:{line}:" in msg


def helper_calls(store):
    return Shape.at(store).area()


def test_virtual_call_deep_in_the_call_graph_needs_the_property_too(q):
    store = _build(q, 3)
    out = _usm(q, 1, sycl.float32)

    def use():
        out[0] = helper_calls(store)

    with pytest.raises(sycl.exception, match=r"test_virtual_functions\.py:\d+:\d+: "
                       r"Shape\.area\(\) is a virtual call"):
        q.single_task(use)
    q.single_task(use, properties=[syclexp.assume_indirect_calls]).wait()
    assert out[0] == 0.0  # Rect with w = 0


def test_empty_set_is_invalid_at_submission(q):
    def k():
        pass

    with pytest.raises(sycl.exception) as ei:
        q.single_task(k, properties=[syclexp.assume_indirect_calls_to(SetA, SetEmpty)])
    assert ei.value.code() == sycl.errc.invalid and "SetEmpty" in str(ei.value)
    with pytest.raises(sycl.exception) as ei:
        q.submit(lambda h: h.single_task(
            k, properties=[syclexp.assume_indirect_calls_to(SetEmpty)]))
    assert ei.value.code() == sycl.errc.invalid


def test_indirectly_callable_on_a_kernel_is_diagnosed(q):
    with pytest.raises(sycl.exception) as ei:
        @syclexp.indirectly_callable()
        @syclexp.single_task_kernel
        def k1():
            pass
    assert ei.value.code() == sycl.errc.build and HERE in str(ei.value)

    with pytest.raises(sycl.exception) as ei:
        @syclexp.single_task_kernel
        @syclexp.indirectly_callable_in(SetA)
        def k2():
            pass
    assert ei.value.code() == sycl.errc.build and "indirectly_callable" in str(ei.value)

    @syclexp.indirectly_callable()
    def closure():
        pass

    with pytest.raises(sycl.exception) as ei:
        q.single_task(closure)
    assert ei.value.code() == sycl.errc.build and HERE in str(ei.value)


def test_bad_declarations():
    with pytest.raises(sycl.exception) as ei:
        @sycl.struct
        class Both(Rect, Circle):
            pass
    assert ei.value.code() == sycl.errc.invalid and "multiple inheritance" in str(ei.value)

    with pytest.raises(sycl.exception, match="applies to methods"):
        syclexp.indirectly_callable()(staticmethod(len))
    with pytest.raises(sycl.exception, match="at least one set"):
        syclexp.assume_indirect_calls_to()
    with pytest.raises(sycl.exception, match="named by a class"):
        syclexp.indirectly_callable_in("set")
    with pytest.raises(sycl.exception, match="one set"):
        syclexp.indirectly_callable_in(SetB)(Foo.__dict__["foo"])

    @sycl.struct
    class Plain:
        x: sycl.int32

    with pytest.raises(sycl.exception, match="declare them in the base"):
        @sycl.struct
        class LateVirtual(Plain):
            @syclexp.indirectly_callable()
            def f(self):
                return 1
    with pytest.raises(sycl.exception, match="already a field"):
        @sycl.struct
        class Again(Rect):
            w: sycl.float32


@sycl.struct
class Odd:
    @syclexp.indirectly_callable()
    def value(self):
        return 1

    @syclexp.indirectly_callable()
    def pair(self):
        return sycl.int32(1), sycl.int32(2)


@sycl.struct
class Odder(Odd):
    @syclexp.indirectly_callable()
    def value(self):
        pass  # returns nothing where the base returns a number


def test_overriders_must_agree_on_returning_a_number(q):
    store = _usm(q, 1, syclexp.storage_for(Odd, Odder))
    out = _usm(q, 1, sycl.int32)

    def mixed():
        out[0] = Odd.at(store).value()

    def pair():
        out[0] = Odd.at(store).pair()[0]

    with pytest.raises(sycl.exception, match=r"Odd\.value\(\): some overriders return a "
                       "value and others do not"):
        q.single_task(mixed, properties=[syclexp.assume_indirect_calls])
    with pytest.raises(sycl.exception, match="returns a number or nothing"):
        q.single_task(pair, properties=[syclexp.assume_indirect_calls])


def test_storage_of_another_hierarchy_is_a_build_error(q):
    store = _usm(q, 1, syclexp.storage_for(Foo))
    floats = _usm(q, 4, sycl.float32)

    def wrong_storage():
        Rect.construct_at(store, scale=1.0, w=1.0, h=1.0)

    def wrong_pointer():
        Shape.at(floats).area()

    for k in (wrong_storage, wrong_pointer):
        with pytest.raises(sycl.exception) as ei:
            q.single_task(k, properties=[syclexp.assume_indirect_calls])
        assert ei.value.code() == sycl.errc.build and HERE in str(ei.value)
        assert "storage_for" in str(ei.value)


def test_misuse_of_objects_in_kernels_is_a_build_error_at_its_line(q):
    store = _build(q, 3)

    def two_pointers():
        Shape.at(store, store)

    def not_a_pointer():
        Shape.at(5)

    def tag_written():
        Shape.at(store)._vtag = 3

    def tag_given():
        Rect.construct_at(store, _vtag=1, scale=1.0, w=1.0, h=1.0)

    def no_field():
        Shape.at(store).radius = 1.0

    def no_such_name():
        return Shape.at(store).perimeter

    cases = {two_pointers: "takes one pointer", not_a_pointer: "needs a USM pointer",
             tag_written: "set by construct_at only", tag_given: "sets the type tag itself",
             no_field: "has no field 'radius'", no_such_name: "no field or method 'perimeter'"}
    for kernel, what in cases.items():
        with pytest.raises(sycl.exception) as ei:
            q.single_task(kernel)
        line = kernel.__code__.co_firstlineno + 1
        assert ei.value.code() == sycl.errc.build and f"{HERE}:{line}:" in str(ei.value)
        assert what in str(ei.value)


def test_too_small_storage_is_a_build_error(q):
    store = _usm(q, 1, syclexp.storage_for(Circle))

    def k():
        Rect.construct_at(store, scale=1.0, w=1.0, h=1.0)

    with pytest.raises(sycl.exception, match="too small"):
        q.single_task(k)


# -- objects constructed on the host ---------------------------------------------------------------

def test_objects_constructed_on_the_host_dispatch_on_the_device(q):
    store = _usm(q, 2, syclexp.storage_for(Rect, Circle))
    out = _usm(q, 2, sycl.float32)
    Rect.construct_at(store, scale=1.0, w=2.0, h=5.0)
    Circle.construct_at(store + 1, scale=1.0, r=2.0)

    def use(i):
        out[i] = Shape.at(store + i).area()

    q.parallel_for(sycl.range(2), use, properties=[syclexp.assume_indirect_calls]).wait()
    np.testing.assert_array_equal(np.asarray(out), [10.0, 12.0])


def test_host_misuse_raises(q):
    dev = sycl.malloc_device(1, syclexp.storage_for(Rect), q)
    shared = _usm(q, 1, syclexp.storage_for(Circle))
    try:
        with pytest.raises(sycl.exception) as ei:
            Rect.construct_at(dev, scale=1.0, w=1.0, h=1.0)
        assert ei.value.code() == sycl.errc.invalid and "host-accessible" in str(ei.value)
        with pytest.raises(sycl.exception) as ei:
            Rect.construct_at(shared, scale=1.0, w=1.0, h=1.0)
        assert ei.value.code() == sycl.errc.invalid
        with pytest.raises(sycl.exception) as ei:
            Shape.at(shared)
        assert ei.value.code() == sycl.errc.feature_not_supported
    finally:
        sycl.free(dev, q)


# -- kernel properties on every launch path ------------------------------------------------------

@syclexp.assume_indirect_calls
@syclexp.nd_range_kernel(1)
def areas(store: sycl.ptr[syclexp.storage_for(Rect, Circle, Square)],
          out: sycl.ptr[sycl.float32]):
    i = this_work_item.get_nd_item(1).get_global_linear_id()
    out[i] = Shape.at(store + i).area()


@syclexp.nd_range_kernel(1)
def areas_plain(store: sycl.ptr[syclexp.storage_for(Rect, Circle, Square)],
                out: sycl.ptr[sycl.float32]):
    i = this_work_item.get_nd_item(1).get_global_linear_id()
    out[i] = Shape.at(store + i).area()


def test_free_function_kernels_take_the_property_as_decorator_or_launch_property(q):
    n = 32
    store = _build(q, n)
    out = _usm(q, n, sycl.float32)
    syclexp.nd_launch(q, sycl.nd_range((n,), (8,)), syclexp.kernel_function(areas), store,
                      out).wait()
    np.testing.assert_allclose(np.asarray(out), _expected(n), rtol=1e-6)
    np.asarray(out)[:] = -1
    with pytest.raises(sycl.exception, match="virtual call"):
        syclexp.nd_launch(q, sycl.nd_range((n,), (8,)), areas_plain, store, out)
    config = syclexp.launch_config(sycl.nd_range((n,), (8,)), [syclexp.assume_indirect_calls])
    syclexp.nd_launch(q, config, areas_plain, store, out).wait()
    np.testing.assert_allclose(np.asarray(out), _expected(n), rtol=1e-6)


def test_kernel_bundle_of_a_kernel_with_virtual_calls(q):
    n = 16
    store = _build(q, n)
    out = _usm(q, n, sycl.float32)
    bundle = syclexp.get_kernel_bundle(q.get_context(), areas, sycl.bundle_state.executable)
    k = bundle.ext_oneapi_get_kernel(areas)
    q.submit(lambda h: (h.set_args(store, out),
                        h.parallel_for(sycl.nd_range((n,), (8,)), k))).wait()
    np.testing.assert_allclose(np.asarray(out), _expected(n), rtol=1e-6)


def test_handler_launch_with_properties(q):
    n = 12
    store = _build(q, n)
    out = _usm(q, n, sycl.float32)

    def use(i):
        out[i] = Shape.at(store + i).area()

    q.submit(lambda h: h.parallel_for(sycl.range(n), use,
                                      properties=[syclexp.assume_indirect_calls])).wait()
    np.testing.assert_allclose(np.asarray(out), _expected(n), rtol=1e-6)


# -- optional features (DPC++'s vf-optional-kernel-features) ---------------------------------------

class SetFP64:
    pass


@sycl.struct
class Features:
    foo_called: sycl.int32
    bar_called: sycl.int32

    @syclexp.indirectly_callable()
    def foo(self):
        self.foo_called = 1

    @syclexp.indirectly_callable_in(SetFP64)
    def bar(self):
        d = sycl.float64(3.14)  # this method uses fp64
        self.bar_called = 1 if d > 3 else 2


def _features(q):
    obj = _usm(q, 1, Features)  # memory of the class itself, as malloc_device<Base>

    def construct():
        Features.construct_at(obj, foo_called=0, bar_called=0)

    def use():
        Features.at(obj).foo()

    def use_fp64():
        Features.at(obj).bar()

    return obj, construct, use, use_fp64


def test_optional_features_on_a_device_with_fp64(q):
    if not q.get_device().has(sycl.aspect.fp64):
        pytest.skip("the device lacks fp64: the hidden-aspect test covers it")
    obj, construct, use, use_fp64 = _features(q)
    q.single_task(construct).wait()
    q.single_task(use, properties=[syclexp.assume_indirect_calls]).wait()
    ck = compiled(q.get_device(), use_fp64, None,
                              [syclexp.assume_indirect_calls_to(SetFP64)])
    assert "fp64" in ck.aspects and "ext_oneapi_virtual_functions" in ck.aspects
    q.single_task(use_fp64, properties=[syclexp.assume_indirect_calls_to(SetFP64)]).wait()
    assert np.asarray(obj)[0]["foo_called"] == 1 and np.asarray(obj)[0]["bar_called"] == 1


def test_optional_features_with_fp64_hidden(q, monkeypatch):
    monkeypatch.setenv("VKSYCL_HIDE_ASPECTS", "fp64")
    assert not q.get_device().has(sycl.aspect.fp64)
    obj = _usm(q, 1, Features)

    def construct():  # kernels of their own: a launch checks a kernel once per device
        Features.construct_at(obj, foo_called=0, bar_called=0)

    def use():
        Features.at(obj).foo()

    def use_fp64():
        Features.at(obj).bar()

    q.single_task(construct).wait()  # constructing never compiles the methods: no fp64
    q.single_task(use, properties=[syclexp.assume_indirect_calls]).wait()
    with pytest.raises(sycl.exception) as ei:
        q.single_task(use_fp64, properties=[syclexp.assume_indirect_calls_to(SetFP64)])
    assert ei.value.code() == sycl.errc.kernel_not_supported and "fp64" in str(ei.value)

    def nothing():  # declaring the set is enough: its methods' aspects are the kernel's
        pass

    with pytest.raises(sycl.exception) as ei:
        q.single_task(nothing, properties=[syclexp.assume_indirect_calls_to(SetFP64)])
    assert ei.value.code() == sycl.errc.kernel_not_supported
    assert np.asarray(obj)[0]["foo_called"] == 1 and np.asarray(obj)[0]["bar_called"] == 0


def test_device_without_virtual_functions_refuses_the_kernels(q, monkeypatch):
    store = _build(q, 3)
    out = _usm(q, 1, sycl.float32)

    def use():
        out[0] = Shape.at(store + 1).area()

    def construct_only():
        Rect.construct_at(store, scale=1.0, w=1.0, h=1.0)

    monkeypatch.setenv("VKSYCL_HIDE_ASPECTS", "ext_oneapi_virtual_functions")
    assert not q.get_device().has(sycl.aspect.ext_oneapi_virtual_functions)
    with pytest.raises(sycl.exception) as ei:
        q.single_task(use, properties=[syclexp.assume_indirect_calls])
    assert ei.value.code() == sycl.errc.kernel_not_supported
    assert "ext_oneapi_virtual_functions" in str(ei.value)
    q.single_task(construct_only).wait()
    monkeypatch.delenv("VKSYCL_HIDE_ASPECTS")
    q.single_task(use, properties=[syclexp.assume_indirect_calls]).wait()
    assert out[0] == pytest.approx(1.5)


# -- device_has and the aspects of the declared sets (the spec's three kernels) -----------------

class SetFP16:
    pass


@sycl.struct
class Precise:
    @syclexp.indirectly_callable_in(SetFP64)
    def f64(self):
        return sycl.float32(sycl.float64(3.14) * 2)

    @syclexp.indirectly_callable_in(SetFP16)
    def f16(self):
        return sycl.float32(sycl.float16(2.71))


def test_device_has_counts_the_methods_of_the_declared_sets(q):
    def k16():
        pass

    def k64():
        pass

    def k64_ok():
        pass

    with pytest.raises(sycl.exception) as ei:
        q.single_task(k16, properties=[syclexp.assume_indirect_calls_to(SetFP16),
                                       syclexp.device_has(sycl.aspect.fp64)])
    msg = str(ei.value)
    assert ei.value.code() == sycl.errc.build and HERE in msg
    assert "uses fp16" in msg and "SetFP16" in msg and "device_has(fp64)" in msg
    with pytest.raises(sycl.exception, match=r"uses fp64 .*device_has\(\) does not list"):
        q.single_task(k64, properties=[syclexp.assume_indirect_calls_to(SetFP64),
                                       syclexp.device_has()])
    ck = compiled(q.get_device(), k64_ok, None, [syclexp.assume_indirect_calls_to(SetFP64),
                                                 syclexp.device_has(sycl.aspect.fp64)])
    assert {"fp64", "ext_oneapi_virtual_functions"} <= ck.aspects
    if q.get_device().has(sycl.aspect.fp64):
        q.single_task(k64_ok, properties=[syclexp.assume_indirect_calls_to(SetFP64),
                                          syclexp.device_has(sycl.aspect.fp64)]).wait()


def test_device_has_without_virtual_functions(q, monkeypatch):
    out = _usm(q, 1, sycl.float32)

    def uses_double():
        out[0] = sycl.float32(sycl.float64(1.5) * 2)

    def listed_only():
        out[0] = 2.5

    with pytest.raises(sycl.exception, match=r"uses fp64, which its device_has\(\) does not"):
        q.single_task(uses_double, properties=[syclexp.device_has()])
    q.single_task(listed_only, properties=[syclexp.device_has(sycl.aspect.fp16)]).wait()
    assert out[0] == 2.5
    with pytest.raises(sycl.exception, match=r"sycl\.aspect"):
        syclexp.device_has("fp64")
    monkeypatch.setenv("VKSYCL_HIDE_ASPECTS", "fp16")

    def listed_missing():
        out[0] = 3.5

    with pytest.raises(sycl.exception) as ei:  # a listed aspect is a requirement
        q.single_task(listed_missing, properties=[syclexp.device_has(sycl.aspect.fp16)])
    assert ei.value.code() == sycl.errc.kernel_not_supported


@syclexp.device_has()
@syclexp.assume_indirect_calls_to(SetFP16)
@syclexp.single_task_kernel
def needs_fp16_undeclared(out: sycl.ptr[sycl.float32]):
    out[0] = 1.0


def test_device_has_as_a_free_function_kernel_decorator(q):
    out = _usm(q, 1, sycl.float32)
    with pytest.raises(sycl.exception, match=r"uses fp16 .*SetFP16"):
        syclexp.single_task(q, needs_fp16_undeclared, out)


# -- classes defined after a kernel compiled ----------------------------------------------------

def test_a_class_defined_later_is_dispatched_to(q):
    store = _usm(q, 2, syclexp.storage_for(Rect, Circle))
    out = _usm(q, 2, sycl.float32)

    def use(i):
        out[i] = Shape.at(store + i).area()

    Rect.construct_at(store, scale=1.0, w=1.0, h=2.0)
    q.parallel_for(sycl.range(1), use, properties=[syclexp.assume_indirect_calls]).wait()
    assert out[0] == 2.0

    @sycl.struct
    class Tri(Shape):
        b: sycl.float32

        @syclexp.indirectly_callable()
        def area(self):
            return self.b * 0.5

    Tri.construct_at(store + 1, scale=1.0, b=9.0)
    q.parallel_for(sycl.range(2), use, properties=[syclexp.assume_indirect_calls]).wait()
    np.testing.assert_array_equal(np.asarray(out), [2.0, 4.5])


def test_a_class_defined_later_is_dispatched_to_by_a_free_function_kernel(q):
    store = _usm(q, 8, syclexp.storage_for(Rect, Circle, Square))
    out = _usm(q, 8, sycl.float32)
    r = sycl.nd_range((8,), (8,))  # the same launch object each time
    for i in range(8):
        Rect.construct_at(store + i, scale=1.0, w=1.0, h=sycl.float32(i))
    syclexp.nd_launch(q, r, areas, store, out).wait()
    np.testing.assert_array_equal(np.asarray(out), np.arange(8))

    @sycl.struct
    class Kite(Shape):
        d: sycl.float32

        @syclexp.indirectly_callable()
        def area(self):
            return self.d * 10

    Kite.construct_at(store + 7, scale=1.0, d=2.0)
    syclexp.nd_launch(q, r, areas, store, out).wait()
    np.testing.assert_array_equal(np.asarray(out), [0, 1, 2, 3, 4, 5, 6, 20])


# -- device_globals in overriders ---------------------------------------------------------------

calls = syclexp.device_global(sycl.int32)


class SetCounted:
    pass


@sycl.struct
class Counted:
    @syclexp.indirectly_callable()
    def f(self):
        sycl.atomic_ref(calls).fetch_add(1)
        return 1

    @syclexp.indirectly_callable_in(SetCounted)
    def g(self):  # in a declared set, never called: compiled for its aspects, not emitted
        sycl.atomic_ref(calls).fetch_add(100)
        return 2


def test_overriders_use_device_globals(q):
    store = _usm(q, 4, syclexp.storage_for(Counted))
    out = _usm(q, 4, sycl.int32)
    for i in range(4):
        Counted.construct_at(store + i)
    q.copy(np.zeros(1, np.int32), calls).wait()

    def kernel(i):
        out[i] = Counted.at(store + i).f()

    q.parallel_for(sycl.range(4), kernel,
                   properties=[syclexp.assume_indirect_calls_to(None, SetCounted)]).wait()
    got = np.zeros(1, np.int32)
    q.copy(calls, got).wait()
    np.testing.assert_array_equal(np.asarray(out), [1, 1, 1, 1])
    assert got[0] == 4


# -- the disk cache: tags and dispatch agree between processes ---------------------------------

SCRIPT = textwrap.dedent("""
    import numpy as np
    import vksycl as sycl
    from vksycl.compiler import kernel
    from vksycl.ext.oneapi import experimental as syclexp

    calls = []
    original = kernel.compile_kernel
    kernel.compile_kernel = lambda *a: calls.append(1) or original(*a)

    @sycl.struct
    class Animal:
        @syclexp.indirectly_callable()
        def legs(self):
            return 0

    @sycl.struct
    class Bird(Animal):
        @syclexp.indirectly_callable()
        def legs(self):
            return 2

    @sycl.struct
    class Dog(Animal):
        @syclexp.indirectly_callable()
        def legs(self):
            return 4

    q = sycl.queue()
    store = sycl.malloc_shared(3, syclexp.storage_for(Bird, Dog), q)
    out = sycl.malloc_shared(3, np.int32, q)
    Bird.construct_at(store)
    Dog.construct_at(store + 1)
    Animal.construct_at(store + 2)

    def body(i):
        out[i] = Animal.at(store + i).legs()

    q.parallel_for(sycl.range(3), body, properties=[syclexp.assume_indirect_calls]).wait()
    print(len(calls), np.asarray(out)[:3].tolist())
""")


def test_disk_cache_between_processes_sees_edited_and_new_classes(tmp_path):
    script = tmp_path / "animals.py"
    script.write_text(SCRIPT)
    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, VKSYCL_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=str(root) + os.pathsep + os.environ.get("PYTHONPATH", ""))

    def run() -> str:
        done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                              text=True, timeout=120, check=True)
        return done.stdout.strip()

    assert run() == "1 [2, 4, 0]"  # compiled
    assert run() == "0 [2, 4, 0]"  # loaded from disk: the tags are the same
    script.write_text(SCRIPT.replace("return 4", "return 5"))
    assert run() == "1 [2, 5, 0]"  # an overrider changed
    script.write_text(SCRIPT.replace("return 4", "return 5").replace(
        "q = sycl.queue()", "@sycl.struct\nclass Fish(Animal):\n    pass\n\nq = sycl.queue()"))
    assert run() == "1 [2, 5, 0]"  # a new class: the dispatch is compiled again
