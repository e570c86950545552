"""Kernel fusion's compiler half: several kernels' bodies as one entry point.

Each member kernel is lowered again, one id per work-item (no coarsening: every body
must agree on which work-item runs which id), and summarized (`footprint`). The fused
kernel keeps every member's arguments as fields of its own, so the argument values of
each member's own launch fill it and an update packs new values without compiling;
launch ranges and device_global addresses, the same for every member, share one field.

The bodies run in order in one function. A `return` ends only its own body: a range
guard (`if outside the range: return`) becomes an `if` around the rest, the guards of
consecutive bodies (the same condition) merge into one, and any other return leaves a
one-trip loop around its body. A work-group barrier goes between two bodies where the
legality proof needed work-groups rather than work-items.

Then, in the straight-line code of the merged bodies: a store's value is forwarded to a
later load of the same address by the same work-item (`relate` says "same") when no
write between may touch it; a store overwritten later at the same address with no read
between is dropped; stores into memory promoted to private (`promote_private`, memory
only this fused kernel uses) are dropped when no load is left to read them. Every
comparison these decisions rest on is recorded (`Facts`), so that an update with other
argument values can tell whether the compiled kernel still holds for them."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from . import coarsen as coarsening
from . import ir
from .codegen import Codegen, analyse
from .footprint import Access, Concrete, Domain, relate, summarize
from .kernel import finished, local_size_xyz
from .module import ArgSlot, KernelModule, KernelSpec, Lowered
from .passes import locals_read, straight
from .typesys import BOOL, I32, VOID
from .workitem import barrier

_WORK_GROUP = 2
_SHARED_KINDS = ("launch", "device_global", "debug", "check_table")
_POINTER_KINDS = ("ptr", "device_global", "accessor", "debug", "check_table")


class _Uncoarsened(KernelModule):
    """A kernel lowered with one id per work-item, guarded as uncoarsened kernels are;
    `coarsenable` says whether the kernel alone would have been coarsened (its
    work-items independent, its body straight-line)."""

    coarsenable = False

    def coarsened(self, fn: ir.Function, src: Any, bound: list) -> ir.Function:
        self.coarsenable = True
        fn.body.insert(0, ir.If(self.queries.guard(), [ir.Return(None)], []))
        return fn


@dataclass
class Member:
    """One kernel lowered for fusion: its IR, arguments by field, and accesses."""

    spec: KernelSpec
    lowered: Lowered
    accesses: list[Access]
    args: dict[int, ArgSlot]
    coarsenable: bool = False

    @property
    def pointers(self) -> set[int]:
        return {i for i, a in self.args.items() if a.kind in _POINTER_KINDS}


def member(pyfn: Any, spec: KernelSpec) -> Member:
    module = _Uncoarsened(pyfn, spec)
    lowered = module.lower()
    accesses, _ = summarize(lowered.kernel, spec.dims)
    return Member(spec, lowered, accesses, {a.push_index: a for a in lowered.args},
                  module.coarsenable)


Key = tuple


class Facts:
    """The comparisons a fused kernel's code rests on, and their outcomes: `rel` between
    two accesses ((member, access) pairs), `inside` (an access lies in memory promoted to
    private) and `touches` (an access may reach such memory)."""

    def __init__(self, concretes: list[list[Concrete]], dom: Domain,
                 internal: list[tuple[int, int]]) -> None:
        self.concretes = concretes
        self.dom = dom
        self.internal = internal
        self.seen: dict[Key, Any] = {}
        self._memo: dict[tuple, str] = {}

    def _eval(self, key: Key) -> Any:
        c = self.concretes
        if key[0] == "rel":
            x, y = c[key[1]][key[2]], c[key[3]][key[4]]
            hit = self._memo.get((x, y))
            if hit is None:
                hit = self._memo[(x, y)] = relate(x, y, self.dom)
            return hit
        a = c[key[1]][key[2]]
        if key[0] == "inside":
            return any(lo <= a.lo and a.hi <= hi for lo, hi in self.internal)
        return any(a.lo < hi and lo < a.hi for lo, hi in self.internal)

    def ask(self, key: Key) -> Any:
        if key not in self.seen:
            self.seen[key] = self._eval(key)
        return self.seen[key]

    def rel(self, x: tuple[int, int], y: tuple[int, int]) -> str:
        return self.ask(("rel", *x, *y))

    def hold(self, concretes: list[list[Concrete]], internal: list[tuple[int, int]]) -> bool:
        """Whether every recorded outcome is the same with other argument values."""
        again = Facts(concretes, self.dom, internal)
        return all(again._eval(k) == v for k, v in self.seen.items())


def legal(j: int, k: int, members: list[Member], facts: Facts) -> tuple[str, str]:
    """Whether member k may follow member j in one work-item ("item"), only with a
    work-group barrier between them ("group"), or not ("conflict"), and why not."""
    need = "item"
    for a, x in enumerate(members[j].accesses):
        for b, y in enumerate(members[k].accesses):
            if not (x.write or y.write):
                continue
            r = facts.rel((j, a), (k, b))
            if r == "group":
                need = "group"
            elif r == "conflict":
                return "conflict", _why(x, y, facts.concretes[j][a], facts.concretes[k][b])
    return need, ""


def _why(x: Access, y: Access, cx: Concrete, cy: Concrete) -> str:
    what = "writes" if y.write else "reads"
    if isinstance(x.node, ir.Atomic) or isinstance(y.node, ir.Atomic):
        return f"it {what} memory the earlier kernel updates atomically, shared by " \
               "work-items"
    if cx.form is None or cy.form is None:
        return f"it {what} memory the earlier kernel {'writes' if x.write else 'reads'} " \
               "at an index the compiler cannot prove is the work-item's own"
    return f"it {what} memory the earlier kernel {'writes' if x.write else 'reads'} at " \
           "another work-item's index, across work-groups (a neighbour, a stencil)"


# -- merging -------------------------------------------------------------------------------

def _fields(members: list[Member]) -> tuple[list[Any], list[tuple[int, ArgSlot]]]:
    """Renumbers every member's argument fields into the fused kernel's: launch values
    and device_global addresses shared, every other argument a field of its own."""
    types: list[Any] = []
    sources: list[tuple[int, ArgSlot]] = []
    shared: dict[tuple, int] = {}
    for j, m in enumerate(members):
        remap: dict[int, int] = {}
        for i, t in enumerate(m.lowered.push_types):
            arg = m.args.get(i)
            if arg is None:
                raise ValueError("an argument field without an argument")
            key = (arg.kind, arg.path, arg.piece)
            if arg.kind in _SHARED_KINDS and key in shared:
                remap[i] = shared[key]
                continue
            remap[i] = len(types)
            if arg.kind in _SHARED_KINDS:
                shared[key] = remap[i]
            types.append(t)
            sources.append((j, arg))
        for x in ir.walk(m.lowered.kernel):
            if isinstance(x, ir.PushField):
                x.index = remap[x.index]
    return types, sources


def _has_return(stmts: list[Any]) -> bool:
    stack: list[Any] = [stmts]
    for x in ir.each_once(stack):
        if isinstance(x, ir.Return):
            return True
        if isinstance(x, list | tuple):
            stack.extend(x)
        elif isinstance(x, ir.Stmt | ir.Cond | ir.Seq) and dataclasses.is_dataclass(x):
            stack.extend(getattr(x, f.name) for f in dataclasses.fields(x)
                         if f.name not in ("ty", "local", "value", "cond", "place",
                                           "selector", "a", "b"))
    return False


def _guarded(body: list[ir.Stmt]) -> list[ir.Stmt]:
    """`if c: return` at the top level becomes an `if` around the rest."""
    for k, s in enumerate(body):
        if isinstance(s, ir.If) and len(s.then) == 1 and isinstance(s.then[0], ir.Return) \
                and not s.orelse:
            return [*body[:k], ir.If(s.cond, [], _guarded(body[k + 1:]))]
    return body


def _one_trip(body: list[ir.Stmt], fused: ir.Function) -> list[ir.Stmt]:
    """A body whose other returns leave a loop run once: a return at the loop's own level
    breaks it, one inside the body's loops sets a flag each enclosing loop checks."""
    flag = ir.Local("returned", BOOL)
    used = [False]

    def rewrite(stmts: list[ir.Stmt], depth: int) -> list[ir.Stmt]:
        out: list[ir.Stmt] = []
        for s in stmts:
            if isinstance(s, ir.Return):
                if depth:
                    used[0] = True
                    out.append(ir.Assign(flag, ir.Const(BOOL, True)))
                out.append(ir.Break())
            elif isinstance(s, ir.If):
                out.append(ir.If(s.cond, rewrite(s.then, depth), rewrite(s.orelse, depth)))
            elif isinstance(s, ir.Switch):
                out.append(ir.Switch(s.selector, [(c, rewrite(b, depth)) for c, b in s.cases]))
            elif isinstance(s, ir.Loop):
                inner = dataclasses.replace(s, body=rewrite(s.body, depth + 1))
                out.append(inner)
                if _has_return(s.body):
                    out.append(ir.If(ir.Read(flag), [ir.Break()], []))
            else:
                out.append(s)
        return out

    new = [*rewrite(body, 0), ir.Break()]
    if used[0]:
        fused.locals.append(flag)
        new.insert(0, ir.Assign(flag, ir.Const(BOOL, False)))
    return [ir.Loop([], None, new, [])]


def same(a: Any, b: Any) -> bool:
    """Structural equality of two IR values (a guard repeated by another body)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, ir.PushField):
        return a.index == b.index
    if isinstance(a, ir.Builtin):
        return (a.name, a.component) == (b.name, b.component)
    if isinstance(a, ir.Const):
        return a.ty == b.ty and a.value == b.value
    if isinstance(a, ir.Op):
        return a.opname == b.opname and a.ty == b.ty and len(a.args) == len(b.args) and \
            all(same(x, y) if isinstance(x, ir.Value) else x == y
                for x, y in zip(a.args, b.args, strict=True))
    return False


# -- forwarding, dead stores, internalization ------------------------------------------------

def _replace(root: Any, subst: Callable[[Any], Any]) -> None:
    """Replaces, in place, each operand for which `subst` gives another value; never
    enters device functions."""
    stack: list[Any] = [root]
    for x in ir.each_once(stack):
        if isinstance(x, list):
            for i, c in enumerate(x):
                new = subst(c)
                if new is not None:
                    x[i] = new
                else:
                    stack.append(c)
        elif dataclasses.is_dataclass(x) and not isinstance(x, ir.Function | ir.Local |
                                                               ir.Param | ir.Root | type):
            for f in dataclasses.fields(x):
                if f.name in ("ty", "fn", "local", "param"):
                    continue
                c = getattr(x, f.name)
                new = subst(c)
                if new is not None:
                    setattr(x, f.name, new)
                else:
                    stack.append(c)


class _Optimizer:
    def __init__(self, members: list[Member], facts: Facts, fused: ir.Function) -> None:
        self.facts = facts
        self.fused = fused
        self.where: dict[int, tuple[int, int]] = {}
        for j, m in enumerate(members):
            for a, acc in enumerate(m.accesses):
                self.where[id(acc.node)] = (j, a)
        self.forwarded = 0
        self.dropped = 0

    def _inside(self, s: Any) -> tuple[list[tuple[int, int]], list[tuple[int, int]], bool]:
        """The writes and reads of global memory in a statement (its device functions
        included), and whether it synchronizes with other work-items."""
        writes, reads, sync = [], [], False
        stack: list[Any] = [s]
        for x in ir.each_once(stack):
            key = self.where.get(id(x))
            if key is not None:
                if isinstance(x, ir.Store | ir.Atomic | ir.MatrixStore):
                    writes.append(key)
                if isinstance(x, ir.Load | ir.Atomic | ir.MatrixLoad):
                    reads.append(key)
            if isinstance(x, ir.Op) and x.opname.startswith(ir.COLLECTIVE_OPS):
                sync = True
            if isinstance(x, ir.Call):
                stack.append(x.fn.body)
            if isinstance(x, list | tuple):
                stack.extend(x)
            elif dataclasses.is_dataclass(x) and not isinstance(
                    x, ir.Function | ir.Local | ir.Param | ir.Root | type):
                stack.extend(getattr(x, f.name) for f in dataclasses.fields(x)
                             if f.name not in ("ty", "fn", "local", "param"))
        return writes, reads, sync

    def forward(self, stmts: list[ir.Stmt]) -> list[ir.Stmt]:
        avail: list[tuple[tuple[int, int], ir.Local, Any, tuple]] = []
        out: list[ir.Stmt] = []
        for s in stmts:
            writes, _, sync = self._inside(s)
            if sync:
                avail.clear()
            own = self.where.get(id(s)) if isinstance(s, ir.Store) else None
            # a store's value and address are read before it writes
            usable = [e for e in avail if all(self.facts.rel(e[0], w) == "disjoint"
                                              for w in writes if w != own)]
            kept = [e for e in usable if own is None or
                    self.facts.rel(e[0], own) == "disjoint"]

            def subst(c: Any, usable: list = usable) -> Any:
                if not isinstance(c, ir.Load):
                    return None
                key = self.where.get(id(c))
                if key is None:
                    return None
                for e in reversed(usable):
                    if e[2] == c.place.ty and e[3] == c.place.members and \
                            self.facts.rel(e[0], key) == "same":
                        self.forwarded += 1
                        return ir.Read(e[1])
                return None

            if usable:
                if isinstance(s, ir.Store):  # the value and address, before the store
                    _replace(s.place, subst)
                    new = subst(s.value)
                    if new is not None:
                        s.value = new
                    else:
                        _replace(s.value, subst)
                else:
                    _replace(s, subst)
            avail = kept
            key = own
            if key is not None and self.facts.concretes[key[0]][key[1]].form is not None:
                tmp = ir.Local("forwarded", s.value.ty)
                self.fused.locals.append(tmp)
                out.append(ir.Assign(tmp, s.value))
                s.value = ir.Read(tmp)
                avail.append((key, tmp, s.place.ty, s.place.members))
            out.append(s)
        return out

    def hoist_loads(self, stmts: list[ir.Stmt]) -> list[ir.Stmt]:
        """Assignments moved before the stores just above them that read none of the
        locals they set and are proven disjoint from every global read among them, so
        that a fused body reads before it writes where it can: what coarsening needs to
        batch its copies' loads."""
        out: list[ir.Stmt] = []
        for s in stmts:
            k = len(out)
            writes, reads, sync = self._inside(s)
            if isinstance(s, ir.Assign) and not writes and not sync:
                while k and isinstance(out[k - 1], ir.Store):
                    stored, _, barrier_ = self._inside(out[k - 1])
                    read: set[int] = set()
                    locals_read(out[k - 1], read)
                    if barrier_ or id(s.local) in read or not all(
                            self.facts.rel(r, w) == "disjoint" for r in reads for w in stored):
                        break
                    k -= 1
            out.insert(k, s)
        return out

    def dead_stores(self, stmts: list[ir.Stmt]) -> list[ir.Stmt]:
        pending: list[tuple[int, int]] = []
        out: list[ir.Stmt] = []
        for s in reversed(stmts):
            key = self.where.get(id(s)) if isinstance(s, ir.Store) else None
            if key is not None and any(self.facts.rel(key, p) == "same" for p in pending):
                self.dropped += 1
                if not straight(s.value):
                    out.append(ir.Eval(s.value))
                continue
            _, reads, sync = self._inside(s)
            if sync:
                pending.clear()
            pending = [p for p in pending if all(self.facts.rel(r, p) == "disjoint"
                                                 for r in reads)]
            if key is not None:
                pending.append(key)
            out.append(s)
        return out[::-1]

    def internalize(self, body: list[ir.Stmt]) -> list[tuple[int, int]]:
        """Drops the stores into private-promoted memory when no load is left that may
        read it; the accesses whose stores were dropped."""
        _, reads, _ = self._inside(body)
        if any(self.facts.ask(("touches", *r)) for r in reads):
            return []
        gone: list[tuple[int, int]] = []

        def strip(stmts: list[ir.Stmt]) -> list[ir.Stmt]:
            out: list[ir.Stmt] = []
            for s in stmts:
                key = self.where.get(id(s)) if isinstance(s, ir.Store) else None
                if key is not None and self.facts.ask(("inside", *key)):
                    gone.append(key)
                    if not straight(s.value):
                        out.append(ir.Eval(s.value))
                    continue
                if isinstance(s, ir.If):
                    s.then, s.orelse = strip(s.then), strip(s.orelse)
                elif isinstance(s, ir.Loop):
                    s.pre, s.body, s.step = strip(s.pre), strip(s.body), strip(s.step)
                elif isinstance(s, ir.Switch):
                    s.cases = [(c, strip(b)) for c, b in s.cases]
                out.append(s)
            return out

        body[:] = strip(body)
        return gone


# -- the fused kernel --------------------------------------------------------------------

@dataclass
class Fused:
    """A compiled fused kernel and where each of its argument fields comes from."""

    name: str
    entry: str
    binary: bytes
    push_size: int
    args_size: int
    args_in_memory: bool
    # (offset in the packed arguments, bytes, member, the member's argument)
    fields: list[tuple[int, int, int, ArgSlot]]
    facts: Facts
    forwarded: int = 0
    dropped: int = 0
    internalized: list[tuple[int, int]] = field(default_factory=list)
    coarsen: int = 1  # ids per work-item


def fuse(members: list[Member], barriers: set[int], facts: Facts, name: str,
         max_push: int) -> Fused:
    """One kernel running the members' bodies in order; `barriers` are the members a
    work-group barrier precedes. Raises ValueError (or the code generator's errors)
    where the bodies cannot be fused; the SPIR-V is validated."""
    push_types, sources = _fields(members)
    fn = ir.Function("fused", [], VOID)
    parts: list[list[ir.Stmt]] = []
    for j, m in enumerate(members):
        k = m.lowered.kernel
        fn.locals += k.locals
        body = _guarded(k.body)
        if _has_return(body):
            body = _one_trip(body, fn)
        if j in barriers:
            parts.append([ir.Eval(barrier(_WORK_GROUP))])
        parts.append(body)
    merged: list[ir.Stmt] = []
    for part in parts:
        last = merged[-1] if merged else None
        if len(part) == 1 and isinstance(part[0], ir.If) and not part[0].then and \
                isinstance(last, ir.If) and not last.then and same(last.cond, part[0].cond):
            last.orelse += part[0].orelse
        else:
            merged += part
    opt = _Optimizer(members, facts, fn)
    lists = [merged] + [s.orelse for s in merged if isinstance(s, ir.If) and not s.then]
    for stmts in lists:
        stmts[:] = opt.dead_stores(opt.forward(stmts))
    gone = opt.internalize(merged) if facts.internal else []
    coarse = None
    if not barriers and all(m.coarsenable for m in members):
        for stmts in lists:
            stmts[:] = opt.hoist_loads(stmts)
        coarse = _coarsened(merged, fn)
    fn.body = merged if coarse is None else coarse
    spec = members[0].spec
    globals_ = frozenset(i for i, (_, a) in enumerate(sources) if a.kind == "device_global")
    entry = f"__sycl_kernel_{name}"
    usage = analyse(fn)
    cg, binary = _emit(fn, usage, push_types, globals_, entry, spec, False)
    if cg.push_size > max_push:
        cg, binary = _emit(fn, usage, push_types, globals_, entry, spec, True)
    fields = [(cg.push_offsets[i], push_types[i].nbytes, j, arg)
              for i, (j, arg) in enumerate(sources) if i in cg.push_offsets]
    return Fused(name, entry, binary, cg.push_size, cg.args_size, cg.args_in_memory,
                 fields, facts, opt.forwarded, opt.dropped, gone,
                 1 if coarse is None else coarsening.COARSEN)


# the built-ins a coarsened copy rewrites (the group id, folded into two dimensions for
# many groups: x + y * count_x) and the one it keeps
_GROUP_BUILTINS = ("WorkgroupId", "NumWorkgroups")
_KEPT_BUILTINS = ("LocalInvocationId",)


def _coarsened(merged: list[ir.Stmt], fn: ir.Function) -> list[ir.Stmt] | None:
    """The fused body run for COARSEN ids per work-item, as a kernel of independent
    work-items alone is (`coarsen`): copy k runs the body of the work-item that was in
    group `COARSEN * group + k`, which the copy reads by rewriting the group id's
    built-ins. Where every copy is in range their loads go before their stores; at the
    range's end each copy runs alone behind its own guard. None where the body is not
    one range guard around straight-line code, or reads other built-ins."""
    if len(merged) != 1 or not isinstance(merged[0], ir.If) or merged[0].then:
        return None
    guard, inner = merged[0].cond, merged[0].orelse
    if not coarsening.eligible(inner) or not _builtins_allow_coarsening(merged):
        return None
    n = coarsening.COARSEN
    copies = []
    for k in range(n):
        group = ir.Op("OpIAdd", I32, [ir.Op("OpIMul", I32, [
            ir.Builtin("WorkgroupId", 0, I32), ir.Const(I32, n)]), ir.Const(I32, k)])
        groups = ir.Op("OpIMul", I32, [ir.Builtin("NumWorkgroups", 0, I32), ir.Const(I32, n)])
        copy = _Copy(fn, {("WorkgroupId", 0): group, ("NumWorkgroups", 0): groups})
        copies.append((copy.of(guard), copy.of(inner)))
    outside = copies[0][0]
    for g, _ in copies[1:]:
        outside = ir.Op("OpLogicalOr", BOOL, [outside, g])
    firsts, stores = zip(*(coarsening.split(body, fn) for _, body in copies), strict=True)
    fast = coarsening.interleave(list(firsts)) + coarsening.interleave(list(stores))
    slow = [ir.If(g, [], [st for st in body if not isinstance(st, ir.Return)])
            for g, body in copies]
    return [ir.If(outside, slow, fast)]


def _builtins_allow_coarsening(body: list[ir.Stmt]) -> bool:
    """Whether the body reads only the group id's built-ins and local ids, and no
    private arrays (which each copy would need its own of)."""
    stack: list[Any] = [body]
    for x in ir.each_once(stack):
        if isinstance(x, ir.Builtin):
            if x.name not in _GROUP_BUILTINS + _KEPT_BUILTINS:
                return False
        elif isinstance(x, ir.PrivateRoot):
            return False
        elif isinstance(x, list | tuple):
            stack.extend(x)
        elif dataclasses.is_dataclass(x) and not isinstance(x, type):
            stack.extend(getattr(x, f.name) for f in dataclasses.fields(x))
    return True


class _Copy:
    """A copy of IR with fresh locals (declared in `fn`) and some built-ins replaced;
    values shared within the original are shared within the copy. Roots, argument reads
    and constants are the same objects."""

    _SHARED = (ir.Root, ir.Const, ir.PushField, ir.ArgRead, ir.Param)

    def __init__(self, fn: ir.Function, builtins: dict[tuple[str, int], ir.Value]) -> None:
        self.fn, self.builtins = fn, builtins
        self.memo: dict[int, Any] = {}

    def of(self, x: Any) -> Any:
        known = self.memo.get(id(x))
        if known is not None:
            return known
        if isinstance(x, list):
            out: Any = [self.of(v) for v in x]
        elif isinstance(x, tuple):
            out = tuple(self.of(v) for v in x)
        elif isinstance(x, ir.Builtin):
            out = self.builtins.get((x.name, x.component), x)
        elif isinstance(x, self._SHARED) or not dataclasses.is_dataclass(x) or \
                isinstance(x, type) or not isinstance(x, ir.Value | ir.Stmt | ir.Local |
                                                      ir.Place):
            out = x
        else:
            out = copy.copy(x)
            self.memo[id(x)] = out
            if isinstance(x, ir.Local):
                self.fn.locals.append(out)
            for f in dataclasses.fields(x):
                setattr(out, f.name, self.of(getattr(x, f.name)))
            return out
        self.memo[id(x)] = out
        return out


def _emit(fn: ir.Function, usage: Any, push_types: list[Any], globals_: frozenset[int],
          entry: str, spec: KernelSpec, in_memory: bool) -> tuple[Codegen, bytes]:
    cg = Codegen(entry, local_size_xyz(spec.local), in_memory, spec.ieee_floats,
                 spec.fp_contract)
    return cg, finished(cg.module(fn, usage, push_types, globals_))


__all__ = ["Facts", "Fused", "Member", "fuse", "legal", "member"]
