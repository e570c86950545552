"""`sycl.event`'s fields and completion test live in C (`native/event_core.c`, in
`vksycl._native`); where that module cannot load, a Python class stands in. Both must
behave alike, and `sycl.event` must be built on the native one wherever it loads."""

from __future__ import annotations

import gc
import weakref

import pytest

import vksycl as sycl
from vksycl import _native
from vksycl.runtime.event import _EventFields

NATIVE = _native.EventCore
KINDS = [pytest.param(NATIVE, id="native"), pytest.param(_EventFields, id="python")]


class _Work:
    """Stands for a Submission: done when told."""

    def __init__(self, done: bool) -> None:
        self.finished = done
        self.asked = 0

    def done(self) -> bool:
        self.asked += 1
        return self.finished


def test_sycl_event_is_built_on_the_native_fields():
    assert NATIVE is not None and NATIVE.__module__ == "vksycl._native"
    assert sycl.event.__mro__[1] is NATIVE
    assert not hasattr(sycl.event(), "__dict__")  # slots only, as the Python fields


@pytest.mark.parametrize("kind", KINDS)
def test_a_default_event_is_complete_with_empty_fields(kind):
    e = kind()
    assert e._issued is True and e.is_complete() is True
    assert e._engine is None and e._submission is None and e._error is None
    assert e._profiling is False and e._times is None and e._deps == ()
    assert e._issued_signal is None


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("keywords", [False, True])
def test_an_event_completes_with_its_work(kind, keywords):
    engine = object()
    work = _Work(done=False)
    e = kind(engine=engine, profiling=True, submission=work) if keywords else \
        kind(engine, True, work)
    assert e._engine is engine and e._submission is work and e._profiling is True
    assert e._issued is True and e.is_complete() is False and work.asked == 1
    work.finished = True
    assert e.is_complete() is True and work.asked == 2


@pytest.mark.parametrize("kind", KINDS)
def test_an_event_not_yet_issued_is_not_complete(kind):
    e = kind(object(), False)  # deferred: its work is handed over later
    assert e._issued is False and e.is_complete() is False
    e._issued = True
    assert e.is_complete() is True
    work = _Work(done=True)
    e._submission, e._issued = work, False
    assert e.is_complete() is False and work.asked == 0  # not asked before it is issued


@pytest.mark.parametrize("kind", KINDS)
def test_fields_are_writable_and_reinitialised(kind):
    e = kind()
    err = RuntimeError("late")
    e._error, e._times, e._deps = err, [1, 2, 3], (weakref.ref(e),)
    assert e._error is err and e._times == [1, 2, 3] and e._deps[0]() is e
    e.__init__(object(), False)
    assert e._error is None and e._times is None and e._deps == () and e._issued is False


@pytest.mark.parametrize("kind", KINDS)
def test_wrong_arguments_raise_as_python_does(kind):
    with pytest.raises(TypeError):
        kind(None, False, None, None)
    with pytest.raises(TypeError):
        kind(engine=None, colour=1)


@pytest.mark.parametrize("kind", KINDS)
def test_subclasses_add_slots_and_events_are_collected(kind):
    class Gate(kind):
        __slots__ = ("where",)

        def __init__(self, where: str) -> None:
            super().__init__()
            self._issued = False
            self.where = where

    g = Gate("a host accessor")
    assert g.where == "a host accessor" and g.is_complete() is False
    # a cycle through a field (times naming their event) is collected
    g._times = [g]
    gone = weakref.ref(g)
    del g
    gc.collect()
    assert gone() is None


def test_launch_events_complete_through_the_native_fields():
    q = sycl.queue()
    x = sycl.malloc_shared(64, sycl.int32, q)
    x[:] = 0

    def bump(i):
        x[i] = x[i] + 1

    events = [q.parallel_for(sycl.range(64), bump) for _ in range(3)]
    sycl.event.wait(events)
    assert all(type(e) is sycl.event and e.is_complete() for e in events)
    assert (x[:64] == 3).all()
    sycl.free(x, q)


@pytest.mark.parametrize("kind", KINDS)
def test_ordered_on_an_engine(kind):
    engine, other = object(), object()
    work = _Work(done=False)
    e = kind(engine, False, work)
    assert e.ordered_on(engine) is True and work.asked == 0  # in that engine's queue
    assert e.ordered_on(other) is False and work.asked == 1  # elsewhere, still running
    work.finished = True
    assert e.ordered_on(other) is True
    e._issued = False
    assert e.ordered_on(engine) is False


@pytest.mark.parametrize("kind", KINDS)
def test_ordered_on_asks_a_subclass_s_own_completion(kind):
    class Refusing(kind):
        __slots__ = ()

        def is_complete(self) -> bool:
            raise sycl.exception(sycl.errc.invalid, "asked")

    e = Refusing(object(), False, _Work(done=True))
    with pytest.raises(sycl.exception, match="asked"):
        e.ordered_on(object())
