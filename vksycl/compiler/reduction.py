"""Reductions (SYCL 2020 4.9.2) in device code: the reducer parameters of a kernel body,
and the code around the body that combines their values.

A reduction kernel is one dispatch. Each work-item combines into private accumulators (one
per element of each reduction), then each work-group combines its work-items' values in
work-group memory and writes one partial per work-group. The work-group that finishes last
(a device-scope counter says which) combines the partials and the target's initial value
(unless the reduction is `initialize_to_identity`), writes the target and sets the counter
back to zero for the next launch. A second dispatch behind a barrier would cost a GPU as
much as the partials' whole combining; this way a reduction also costs no host round trip,
replays in graphs, and gives the same result for the same launch shape every time (the
partials are combined in their order, whichever work-group finishes last). Partials are
stored and loaded as 32-bit words with atomic instructions, which every device has and
which see each other's writes across work-groups whatever the type. One-dimensional range
kernels run a grid-stride loop over the range with a bounded number of work-groups: each
work-item accumulates many items, and the partials stay few."""

from __future__ import annotations

import ast
import contextlib
import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import ir
from .type_registry import element_type
from .typesys import BOOL, F32, I32, U32, U64, ArrayType, Scalar, mem_type
from .values import FixedSlot, PyV
from .workitem import barrier, builtin

# the combiners with an operator form (`s += v`), by the operator
OPERATORS = {ast.Add: "plus", ast.Mult: "multiplies", ast.BitAnd: "bit_and",
             ast.BitOr: "bit_or", ast.BitXor: "bit_xor"}
# combining bools: the accumulators hold them as 0 and 1
_ON_INTEGERS = {"logical_and": "bit_and", "logical_or": "bit_or"}


@dataclass(frozen=True)
class ReductionSpec:
    """One reduction of a kernel, as far as it changes the generated code. A user
    combiner's function is compiled in but not kept when the kernel is cached on disk:
    `combiner_key` (a fingerprint of its code) stands for it in cache keys."""

    dtype: str  # the target's element type (numpy dtype string)
    op: str | None  # a SYCL function object's name (`plus`, ...), or None for a function
    identity: Any
    extent: int = 1  # elements: 1, or the length of a span
    span: bool = False  # a span's reducer is indexed (s[j]), whatever its length
    initialize: bool = False  # initialize_to_identity: the target's value is not read
    combiner_key: str = ""
    combiner: Any = field(default=None, compare=False, repr=False)

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "combiner"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        for k, v in {**state, "combiner": None}.items():
            object.__setattr__(self, k, v)

    @property
    def element(self) -> Scalar:
        return element_type(np.dtype(self.dtype))  # type: ignore[return-value]

    @property
    def accumulator(self) -> Scalar:
        """What the work-items combine in: 8- and 16-bit values widened to 32 bits (the
        same result once stored back for integers, a more accurate one for float16),
        bools as 0 and 1; a user combiner gets the target's own type."""
        t = self.element
        if self.op is None:
            return t
        if t.is_bool:
            return U32
        return _wide(t) if t.bits < 32 else t

    @property
    def words(self) -> int:
        """The 32-bit words a partial of one element takes."""
        return 2 if self.accumulator.bits == 64 else 1


@dataclass(eq=False)
class ReducerV:
    """A reducer parameter of the kernel body: its accumulators are a private array of
    the reduction's extent, in the kernel function; `element` is `s[j]` of a span."""

    index: int
    spec: ReductionSpec
    root: ir.PrivateRoot
    element: ir.Value | None = None


def reducers(specs: tuple[ReductionSpec, ...]) -> list[ReducerV]:
    return [ReducerV(k, s, ir.PrivateRoot(s.accumulator, s.extent, ir.Local(
        f"reducer{k}", ArrayType(mem_type(s.accumulator), s.extent)), shape=(s.extent,)))
        for k, s in enumerate(specs)]


@contextlib.contextmanager
def emitting_into(fl: Any, stmts: list[ir.Stmt]) -> Iterator[list[ir.Stmt]]:
    """Lowers into `stmts` instead of the current block (a branch being built)."""
    saved, fl.out = fl.out, stmts
    try:
        yield stmts
    finally:
        fl.out = saved


def combine_values(fl: Any, spec: ReductionSpec, a: ir.Value, b: ir.Value,
                   node: ast.AST) -> ir.Value:
    """`combiner(a, b)` on accumulator values."""
    t = spec.accumulator
    if spec.op is None:
        r = fl.call_function(spec.combiner, [a, b], {}, node)
        return fl.convert(fl.scalar(r, node, t), t, node)
    return fl.m.groups.combine(fl, _ON_INTEGERS.get(spec.op, spec.op), a, b, node)


def _place(r: ReducerV, index: ir.Value) -> ir.Place:
    return ir.Place(r.root, index, (), mem_type(r.spec.accumulator))


def combine(fl: Any, r: ReducerV, value: Any, node: ast.AST) -> None:
    """`s.combine(v)`: the accumulator becomes combiner(accumulator, v)."""
    if fl is not fl.m.kernel_fl:
        raise fl.err(node, "a reducer is used in the kernel body only; pass the value to "
                     "combine back to the body instead of the reducer")
    spec = r.spec
    if spec.span and r.element is None:
        raise fl.err(node, f"this reducer combines {spec.extent} elements (a span): "
                     "index it, s[j].combine(v)")
    # as C++'s combine(const T&): the value becomes the target's type first (a number's
    # truth for a bool, a wrapped value for a narrow integer), then the accumulator's
    v = fl.scalar(value, node, spec.element)
    v = fl.convert(fl.convert(v, spec.element, node), spec.accumulator, node)
    place = _place(r, r.element if r.element is not None else ir.Const(I32, 0))
    # through load and store: the accumulators of a user combiner on bools hold bytes
    fl.store(place, combine_values(fl, spec, fl.load(place, node), v, node), node)


def augment(fl: Any, r: ReducerV, op: ast.operator, value: Any, node: ast.AST) -> None:
    """`s += v` and the other operator forms, each only for its own combiner."""
    name = OPERATORS.get(type(op))
    if name is None or name != r.spec.op:
        symbol = {ast.Add: "+=", ast.Mult: "*=", ast.BitAnd: "&=", ast.BitOr: "|=",
                  ast.BitXor: "^="}.get(type(op), type(op).__name__)
        what = f"the {r.spec.op} combiner" if r.spec.op else "a user combiner"
        raise fl.err(node, f"a reducer of {what} has no {symbol}; use s.combine(v)")
    combine(fl, r, value, node)


def element(fl: Any, r: ReducerV, index: Any, node: ast.AST) -> ReducerV:
    """`s[j]` of a span reducer. The index is read here, as Python reads it: a name bound
    to the element (`e = s[j]`) keeps combining into it when `j` changes."""
    if not r.spec.span or r.element is not None:
        raise fl.err(node, "only a reducer of a span is indexed")
    j = fl.new_local("reducer_element", I32)
    fl.emit(ir.Assign(j, fl.convert(fl.scalar(index, node), I32, node)))
    return ReducerV(r.index, r.spec, r.root, ir.Read(j))


def method(fl: Any, r: ReducerV, name: str, args: list[Any], node: ast.AST) -> Any:
    if name != "combine" or len(args) != 1:
        raise fl.err(node, "a reducer has one method, combine(v)")
    combine(fl, r, args[0], node)
    return PyV(None)


def _without_returns(stmts: list[ir.Stmt], done: ir.Local, depth: int = 0) -> list[ir.Stmt]:
    """The body with its `return`s turned into breaks out of the one-trip loop the kernel
    wraps it in, so every work-item reaches the combining code after it (inside the
    body's own loops, a flag carries the return out)."""
    out: list[ir.Stmt] = []
    for s in stmts:
        if isinstance(s, ir.Return):
            out += [ir.Break()] if depth == 0 else [ir.Assign(done, ir.Const(BOOL, True)),
                                                     ir.Break()]
            break  # nothing after a return runs
        if isinstance(s, ir.If):
            out.append(ir.If(s.cond, _without_returns(s.then, done, depth),
                             _without_returns(s.orelse, done, depth)))
        elif isinstance(s, ir.Switch):
            out.append(ir.Switch(s.selector, [(v, _without_returns(b, done, depth))
                                              for v, b in s.cases]))
        elif isinstance(s, ir.Loop):
            body = _without_returns(s.body, done, depth + 1)
            out.append(dataclasses.replace(s, body=body))
            if _returns(s.body):
                out.append(ir.If(ir.Read(done), [ir.Break()], []))
        else:
            out.append(s)
    return out


def _returns(stmts: list[ir.Stmt]) -> bool:
    for s in stmts:
        if isinstance(s, ir.Return):
            return True
        if isinstance(s, ir.If) and (_returns(s.then) or _returns(s.orelse)):
            return True
        if isinstance(s, ir.Switch) and any(_returns(b) for _, b in s.cases):
            return True
        if isinstance(s, ir.Loop) and _returns(s.body):
            return True
    return False


# copies of the body per trip of a grid-stride loop, each with accumulators of its own: the
# loads of one trip are independent, so a GPU has this many per work-item in flight
UNROLL = 4


class KernelReductions:
    """The code around a reduction kernel's body (see the module docstring). Built before
    the body is lowered (the hidden arguments and the grid-stride item), completed after."""

    def __init__(self, m: Any, specs: tuple[ReductionSpec, ...], params: list[str],
                 grid_stride: bool, group_arithmetic: bool) -> None:
        self.m = m
        self.group_arithmetic = group_arithmetic
        self.params = params  # the body's reducer parameters
        self.reducers = reducers(specs)
        # the accumulators of the unrolled grid-stride loop's other copies of the body;
        # spans are not unrolled: each copy would hold every element's accumulator
        unroll = UNROLL if not any(s.span for s in specs) else 1
        self.copies = [reducers(specs) for _ in range(unroll - 1)] if grid_stride else []
        self.bodies: list[list[ir.Stmt]] = []
        n = len(specs)
        self.targets = [m.ptr_arg(("param", 2 * k), s.element) for k, s in enumerate(specs)]
        self.partials = [m.ptr_arg(("param", 2 * k + 1), U32) for k in range(n)]
        self.counter = m.ptr_arg(("param", 2 * n), U32)  # work-groups done, zero between
        self.size = int(np.prod(m.local))
        # the counter's value before the work-group's own increment, for all its work-items
        self.arrived = m.shared[("reduction", "arrived")] = ir.SharedRoot(
            U32, 1, "reduction_arrived", shape=(1,))
        self.item = ir.Local("reduction_item", I32) if grid_stride else None

    def _bind(self, bound: list, rs: list[ReducerV]) -> list:
        return bound + [(p, FixedSlot(r)) for p, r in zip(self.params, rs, strict=True)]

    def _stride(self) -> ir.Value:
        return ir.Op("OpIMul", I32, [builtin("NumWorkgroups", 0), ir.Const(I32, self.size)])

    def lower_bodies(self, src: Any, bound: list) -> tuple[ir.Function, Any]:
        """The body lowered with the reducers bound: once, or for a grid-stride loop
        once per unrolled copy (its item `k` strides on) and once for the loop's tail.
        The tail's function is the kernel's; it takes the copies' locals."""
        m = self.m
        if self.item is None:
            fn, fl = m.lower_function(m.pyfn, src, "kernel", self._bind(bound, self.reducers),
                                      kernel=True)
            self.bodies = [fn.body]
            return fn, fl
        item, copies = ir.Read(self.item), []
        for k, rs in enumerate([self.reducers, *self.copies]):
            m.item_override = item if k == 0 else ir.Op("OpIAdd", I32, [item, ir.Op(
                "OpIMul", I32, [ir.Const(I32, k), self._stride()])])
            copies.append(m.lower_function(m.pyfn, src, "kernel",
                                           self._bind(bound, rs), kernel=True)[0])
        m.item_override = item
        fn, fl = m.lower_function(m.pyfn, src, "kernel", self._bind(bound, self.reducers),
                                  kernel=True)
        m.item_override = None
        for c in copies:
            fn.locals += c.locals
        self.bodies = [*(c.body for c in copies), fn.body]
        return fn, fl

    def kernel(self, fl: Any, fn: ir.Function, guarded: bool, node: ast.AST) -> ir.Function:
        m, L = self.m, self.size
        lid = builtin("LocalInvocationIndex")
        done = fl.new_local("returned", BOOL)

        def trip(body: list[ir.Stmt]) -> list[ir.Stmt]:
            return [ir.Assign(done, ir.Const(BOOL, False)),
                    ir.Loop([], None, [*_without_returns(body, done), ir.Break()], [])]

        if self.item is not None:
            item, n, stride = self.item, m.queries.global_range(0), self._stride()
            start = ir.Op("OpIAdd", I32, [ir.Op("OpIMul", I32, [
                builtin("WorkgroupId", 0), ir.Const(I32, L)]), lid])

            def advance(k: int) -> list[ir.Stmt]:
                return [ir.Assign(item, ir.Op("OpIAdd", I32, [ir.Read(item), ir.Op(
                    "OpIMul", I32, [ir.Const(I32, k), stride])]))]

            def before_end(k: int) -> ir.Value:
                """Whether item + k strides is in the range. Compared unsigned: a range
                of up to 2**31 - 1 items steps past 2**31 - 1, which stays below 2**32
                but would be negative as a signed number."""
                last = ir.Op("OpIAdd", I32, [ir.Read(item), ir.Op(
                    "OpIMul", I32, [ir.Const(I32, k), stride])]) if k else ir.Read(item)
                return ir.Op("OpULessThan", BOOL, [last, n])

            *unrolled, tail = self.bodies
            main = [ir.Assign(item, start),
                    ir.Loop([], before_end(len(unrolled) - 1),
                            [s for b in unrolled for s in trip(b)], advance(len(unrolled))),
                    ir.Loop([], before_end(0), trip(tail), advance(1))]
            fn.locals.append(item)
        elif guarded:
            main = [ir.If(m.queries.guard(), [], trip(self.bodies[0]))]
        else:
            main = trip(self.bodies[0])
        group = ir.Op("OpIAdd", I32, [builtin("WorkgroupId", 0), ir.Op("OpIMul", I32, [
            builtin("NumWorkgroups", 0), ir.Op("OpIAdd", I32, [builtin("WorkgroupId", 1), ir.Op(
                "OpIMul", I32, [builtin("NumWorkgroups", 1), builtin("WorkgroupId", 2)])])])])
        groups = ir.Op("OpIMul", I32, [ir.Op("OpIMul", I32, [builtin("NumWorkgroups", 0),
                       builtin("NumWorkgroups", 1)]), builtin("NumWorkgroups", 2)])
        body: list[ir.Stmt] = []
        with emitting_into(fl, body):
            for r in [*self.reducers, *(r for rs in self.copies for r in rs)]:
                fn.locals.append(r.root.local)
                self._each(fl, r, lambda e, r=r: fl.store(_place(r, e), self._identity(r), node))
        body += main
        with emitting_into(fl, body):
            for rs in self.copies:
                for r, c in zip(self.reducers, rs, strict=True):
                    self._each(fl, r, lambda e, r=r, c=c: fl.store(_place(r, e), combine_values(
                        fl, r.spec, fl.load(_place(r, e), node), fl.load(_place(c, e), node),
                        node), node))
            for r in self.reducers:
                self._each(fl, r, lambda e, r=r: self._partial(fl, r, e, lid, group, node))
        finish: list[ir.Stmt] = []
        with emitting_into(fl, finish):
            for r in self.reducers:
                self._each(fl, r, lambda e, r=r: self._finish(fl, r, e, lid, groups, node))
        counter = fl.index_place(self.counter, ir.Const(I32, 0), node)
        arrived = ir.Place(self.arrived, ir.Const(I32, 0), (), U32)
        finish.append(ir.If(ir.Op("OpIEqual", BOOL, [lid, ir.Const(I32, 0)]), [ir.Eval(
            ir.Atomic("OpAtomicStore", counter, [ir.Const(U32, 0)], U32, _DEVICE, 0))], []))
        # work-item 0 counts its work-group in, after its partials (release) and before
        # the last work-group reads everyone's (acquire); the barrier shares what it saw
        body.append(ir.If(ir.Op("OpIEqual", BOOL, [lid, ir.Const(I32, 0)]), [ir.Store(
            arrived, ir.Atomic("OpAtomicIAdd", counter, [ir.Const(U32, 1)], U32, _DEVICE,
                               _ACQ_REL_GLOBAL))], []))
        body.append(ir.Eval(barrier(_WORKGROUP, _DEVICE)))
        last = ir.Op("OpIEqual", BOOL, [ir.Op("OpBitcast", I32, [ir.Load(arrived)]), ir.Op(
            "OpISub", I32, [groups, ir.Const(I32, 1)])])
        body.append(ir.If(last, finish, []))
        fn.body = body
        return fn

    def _identity(self, r: ReducerV) -> ir.Value:
        t = r.spec.accumulator
        v = r.spec.identity
        return ir.Const(t, int(bool(v)) if r.spec.element.is_bool else v)

    def _each(self, fl: Any, r: ReducerV, emit: Any) -> None:
        """Emits `emit(e)` for each element e of the reduction (a loop for a span)."""
        if r.spec.extent == 1:
            emit(ir.Const(I32, 0))
            return
        e = fl.new_local("element", I32)
        step = [ir.Assign(e, ir.Op("OpIAdd", I32, [ir.Read(e), ir.Const(I32, 1)]))]
        inner: list[ir.Stmt] = []
        with emitting_into(fl, inner):
            emit(ir.Read(e))
        fl.emit(ir.Assign(e, ir.Const(I32, 0)))
        fl.emit(ir.Loop([], ir.Op("OpSLessThan", BOOL, [ir.Read(e), ir.Const(
            I32, r.spec.extent)]), inner, step))

    def _group_value(self, fl: Any, r: ReducerV, value: ir.Value, lid: ir.Value,
                     node: ast.AST) -> ir.Value:
        """The work-group's values combined, for work-item 0: by sub-group arithmetic
        where the device has it for a SYCL combiner of 32-bit accumulators and the
        sub-groups are runs of linear ids (two barriers), else by a tree in work-group
        memory over the work-group's size, known when the kernel compiles (a barrier a
        level)."""
        spec = r.spec
        t = spec.accumulator
        if self.group_arithmetic and spec.op is not None and t.bits == 32 and \
                self.m.groups.sub_groups_are_runs():
            return self.m.groups.work_group(fl, _ON_INTEGERS.get(spec.op, spec.op), value,
                                            node, "reduce")
        scratch = self.m.shared.get(("reduction", r.index))
        if scratch is None:
            scratch = self.m.shared["reduction", r.index] = ir.SharedRoot(
                t, self.size, f"reduction{r.index}", shape=(self.size,))
        at = lambda i: ir.Place(scratch, i, (), mem_type(t))
        fl.store(at(lid), value, node)
        fl.emit(ir.Eval(barrier(2)))
        n = self.size
        while n > 1:
            half = (n + 1) // 2
            step: list[ir.Stmt] = []
            with emitting_into(fl, step):
                v = combine_values(fl, spec, fl.load(at(lid), node), fl.load(at(ir.Op(
                    "OpIAdd", I32, [lid, ir.Const(I32, half)])), node), node)
                fl.store(at(lid), v, node)
            fl.emit(ir.If(ir.Op("OpSLessThan", BOOL, [lid, ir.Const(I32, n - half)]), step, []))
            fl.emit(ir.Eval(barrier(2)))
            n = half
        return fl.load(at(ir.Const(I32, 0)), node)

    def _slot(self, r: ReducerV, group: ir.Value, e: ir.Value, word: int) -> ir.Value:
        """The index of a partial's word among the reduction's partials."""
        spec = r.spec
        element = ir.Op("OpIAdd", I32, [ir.Op("OpIMul", I32, [group, ir.Const(
            I32, spec.extent)]), e])
        first = ir.Op("OpIMul", I32, [element, ir.Const(I32, spec.words)]) \
            if spec.words > 1 else element
        return ir.Op("OpIAdd", I32, [first, ir.Const(I32, word)]) if word else first

    def _partial(self, fl: Any, r: ReducerV, e: ir.Value, lid: ir.Value, group: ir.Value,
                 node: ast.AST) -> None:
        total = self._group_value(fl, r, fl.load(_place(r, e), node), lid, node)
        write: list[ir.Stmt] = []
        with emitting_into(fl, write):
            words = _to_words(fl, r.spec.accumulator, total)
            for k, w in enumerate(words):
                place = fl.index_place(self.partials[r.index], self._slot(r, group, e, k),
                                       node)
                fl.emit(ir.Eval(ir.Atomic("OpAtomicStore", place, [w], U32, _DEVICE, 0)))
        fl.emit(ir.If(ir.Op("OpIEqual", BOOL, [lid, ir.Const(I32, 0)]), write, []))

    def _finish(self, fl: Any, r: ReducerV, e: ir.Value, lid: ir.Value, count: ir.Value,
                node: ast.AST) -> None:
        spec, t = r.spec, r.spec.accumulator
        acc, j = fl.new_local("partial_sum", t), fl.new_local("partial", I32)
        fl.emit(ir.Assign(acc, self._identity(r)))
        fl.emit(ir.Assign(j, lid))
        # UNROLL partials a trip, all loaded before any is combined: the loads are atomic,
        # which a compiler keeps in order, so one a trip would wait out each one's latency
        step: list[ir.Stmt] = []
        with emitting_into(fl, step):
            values = []
            for u in range(UNROLL):
                value = fl.new_local("partial_value", t)
                fl.emit(ir.Assign(value, self._identity(r)))
                at = ir.Op("OpIAdd", I32, [ir.Read(j), ir.Const(I32, u * self.size)])
                load: list[ir.Stmt] = []
                with emitting_into(fl, load):
                    words = [ir.Atomic("OpAtomicLoad", fl.index_place(
                        self.partials[r.index], self._slot(r, at, e, k), node), [], U32,
                        _DEVICE, 0) for k in range(spec.words)]
                    fl.emit(ir.Assign(value, _from_words(fl, t, words)))
                fl.emit(ir.If(ir.Op("OpSLessThan", BOOL, [at, count]), load, []))
                values.append(value)
            for value in values:
                fl.emit(ir.Assign(acc, combine_values(fl, spec, ir.Read(acc),
                                                      ir.Read(value), node)))
        fl.emit(ir.Loop([], ir.Op("OpSLessThan", BOOL, [ir.Read(j), count]), step,
                        [ir.Assign(j, ir.Op("OpIAdd", I32, [ir.Read(j), ir.Const(
                            I32, UNROLL * self.size)]))]))
        total = self._group_value(fl, r, ir.Read(acc), lid, node)
        write: list[ir.Stmt] = []
        with emitting_into(fl, write):
            target = fl.index_place(self.targets[r.index], e, node)
            v = total
            if not spec.initialize:
                first = fl.convert(fl.scalar(fl.load(target, node), node), t, node)
                v = combine_values(fl, spec, first, v, node)
            fl.store(target, fl.convert(v, spec.element, node), node)
        fl.emit(ir.If(ir.Op("OpIEqual", BOOL, [lid, ir.Const(I32, 0)]), write, []))
        fl.emit(ir.Eval(barrier(2)))


_WORKGROUP, _DEVICE = 2, 1  # SPIR-V scopes
_ACQ_REL_GLOBAL = 0x8 | 0x40  # AcquireRelease | UniformMemory


def _wide(t: Scalar) -> Scalar:
    """The 32-bit type a narrower accumulator is stored as: its value converts exactly."""
    return F32 if t.is_float else I32 if t.is_signed else U32


def _to_words(fl: Any, t: Scalar, v: ir.Value) -> list[ir.Value]:
    """A partial's bits as 32-bit words, low first."""
    if t.bits == 64:
        u = v if t == U64 else ir.Op("OpBitcast", U64, [v])
        return [ir.Op("OpUConvert", U32, [u]), ir.Op("OpUConvert", U32, [ir.Op(
            "OpShiftRightLogical", U64, [u, ir.Const(U64, 32)])])]
    if t.is_bool:
        return [fl.convert(v, U32)]
    if t.bits < 32:
        t, v = _wide(t), fl.convert(v, _wide(t))
    return [v if t == U32 else ir.Op("OpBitcast", U32, [v])]


def _from_words(fl: Any, t: Scalar, words: list[ir.Value]) -> ir.Value:
    """The partial `_to_words` stored."""
    if t.bits == 64:
        lo, hi = (ir.Op("OpUConvert", U64, [w]) for w in words)
        u = ir.Op("OpBitwiseOr", U64, [lo, ir.Op("OpShiftLeftLogical", U64, [
            hi, ir.Const(U64, 32)])])
        return u if t == U64 else ir.Op("OpBitcast", t, [u])
    if t.is_bool:
        return ir.Op("OpINotEqual", BOOL, [words[0], ir.Const(U32, 0)])
    wide = _wide(t) if t.bits < 32 else t
    v = words[0] if wide == U32 else ir.Op("OpBitcast", wide, [words[0]])
    return v if wide == t else fl.convert(v, t)
