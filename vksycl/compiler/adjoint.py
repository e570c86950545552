"""The adjoint of a kernel: reverse-mode automatic differentiation by source transformation
of the typed IR.

The adjoint kernel takes the forward kernel's arguments plus, for each float32/float64
USM pointer the kernel reads or writes (structs of floats included), a gradient pointer of
the same type (explicit arguments after the kernel's own). Its body is

1. a **forward sweep**: the kernel again, in SSA form (each assignment to a variable writes
   a fresh local, an `if` merges the versions of its branches), without its side effects:
   stores to global memory and atomics are left out, so memory holds what the forward
   launches left there and every value the reverse sweep needs is recomputed, none stored;
2. the **reverse sweep**: the statements in reverse order, each propagating adjoints to its
   operands. A float local's adjoint is a local; a load `x[j]` of differentiable memory
   scatters its adjoint into `grad_x[j]` with an atomic add (a compare-and-swap loop on
   the float's bits, which needs no float atomics, so float64 works on any device with
   64-bit atomics); a store `y[i] = v` reads `grad_y[i]` into `v`'s adjoint and leaves it
   as it is (as Warp does), zeroing it only where an overwrite needs that: when the kernel
   also reads `y` (an in-place update) or writes it from another store or in a loop, or
   (the "zero" variant) an earlier launch wrote it;
   `fetch_add` on differentiable memory reads the target's gradient.

`if`/`else` becomes an `if` on the same (recomputed) condition. A `for` loop over `range`
runs in reverse: iteration k's body is recomputed from the loop's working variables, with
the counter set to `start + k * step`; when the reverse of the body needs values carried
from earlier iterations (beyond the counter), the loop first replays iterations 0..k-1
from the loop's entry state (quadratic time, no storage). A sum `s += f(x[j])` needs no
replay. Device functions are inlined first (`inlining`); each operation's reverse rule is
in `derivatives`, where adjoints of memory go in `gradient_memory`. Math functions keep
their meaning (`Ext`) until the adjoint is built, so float64 functions are differentiated
as functions, then expanded (`expand_math`).

What has no adjoint raises `errc.build` at its line: atomics other than add on
differentiable memory or atomic results used as values, loops whose count depends on
float values, `while` loops, `break`/`continue`/`return` in loops, integer-to-float
conversions of values computed from floats, arithmetic mixing two differentiable pointers,
work-group memory written after it is read or in a loop, private arrays, group
operations other than barriers, reductions of floats other than sums.

Work-group memory is filled again by the forward sweep; its adjoint is work-group memory
of the floats' bits, zeroed first, scattered into atomically; a barrier's reverse is a
barrier. A reduction's sum gives what the body combines the gradient of the target's
element.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..exceptions import errc, exception
from . import ir
from .derivatives import Derivatives, is_float, zero_of
from .gradient_memory import GradientMemory
from .inlining import Inlining, strip_returns
from .math_functions import glsl_call, is_exact_glsl
from .module import ArgSlot
from .passes import remove_dead_code
from .typesys import BOOL, I32, U64, VOID, ArrayType, Scalar, Type
from .workitem import builtin


def differentiable(dtype: Any) -> bool:
    """Whether memory of `dtype` gets a gradient: float16/32/64, or a struct of them."""
    dtype = np.dtype(dtype)
    if dtype.fields:
        return any(differentiable(f[0]) for f in dtype.fields.values())
    return dtype.kind == "f" and dtype.itemsize in (2, 4, 8)


class Adjoint(Inlining, Derivatives, GradientMemory):
    """Builds the adjoint of one lowered kernel (`KernelModule.lower`'s result)."""

    def __init__(self, m: Any, lowered: Any, nparams: int) -> None:
        self.m = m
        self.lowered = lowered
        self.sites: dict[int, tuple] = m.sites
        code = m.pyfn.__code__
        self.default_site = (code.co_filename, code.co_firstlineno)
        self.name = m.spec.name
        self.fn = ir.Function("kernel", [], VOID)
        # the gradient arguments (`gradient_arguments`): of the reductions' targets by
        # the reducer's accumulators, of the pointers by the forward pointer's push index
        # (and their capture paths), of the float scalars by their push index
        self.reducers: dict[int, tuple[Any, ir.PushField]] = {}
        self.grad: dict[int, ir.PushField] = {}
        self.paths: list[tuple[tuple, int]] = []
        self.scalars: dict[int, ir.PushField] = {}
        self.scalar_sums: dict[int, ir.Local] = {}  # their adjoints in the work-item
        self.next_param = nparams
        self.gradient_arguments(list(lowered.args))
        self.defs: dict[int, list[ir.Value]] = {}  # version local -> the values it takes
        # version local -> the conditions that decide which value it takes (an `if`'s, a
        # loop's) and a loop variable's step
        self.control: dict[int, list[ir.Value]] = {}
        self.active: set[int] = set()  # versions whose values depend on float data
        self.adjoints: dict[int, ir.Local] = {}
        self.read_ptrs: set[int] = set()  # pointers the kernel loads floats from
        self.written: set[int] = set()  # and those it stores or adds floats to
        self.stores: dict[int, int] = {}  # how many stores write each pointer's memory
        self.loads: dict[int, tuple[ir.Load, int]] = {}  # the forward sweep's, by id
        # the loop whose reverse the launch may split into parts (`choose_split`), by id,
        # and which side of it the reverse sweep is emitting: "after" (what follows it in
        # the kernel), then "loop" and "before"
        self.split: int | None = None
        self.split_sums: set[int] = set()  # the sums it carries, by the local's id
        self.phase = ""
        # work-group memory: the arrays the kernel has read so far, each array's gradient
        # (its floats' bits, for compare-and-swap), and how deep in loops the sweep is
        self.shared_read: set[int] = set()
        self.shared_grads: dict[int, ir.SharedRoot] = {}
        self.loop_depth = 0

    def gradient_arguments(self, forward: list[ArgSlot]) -> None:
        """The adjoint's arguments after the kernel's own: the gradient of each
        reduction's target, of each differentiable pointer, and the gradient cell of each
        float scalar argument."""
        for r in self.m.adjoint_reducers:
            if r.spec.element.is_float and (r.spec.op != "plus" or
                                            r.spec.element.bits not in (32, 64)):
                raise self.error(None, f"a reduction of {r.spec.dtype} with combiner "
                                 f"{r.spec.op or 'a function'} (only sums of float32 and "
                                 "float64 are differentiated)")
            self.reducers[id(r.root)] = (r, self.pointer_argument(r.spec.element.dtype))
        for a in forward:
            if a.kind in ("ptr", "accessor") and differentiable(a.dtype):
                self.grad[a.push_index] = self.pointer_argument(a.dtype)
                self.paths.append((a.path, a.push_index))
        for a in forward:
            if a.kind == "scalar" and differentiable(a.dtype):
                self.scalars[a.push_index] = self.pointer_argument(a.dtype)
                self.paths.append((a.path, -1))

    def pointer_argument(self, dtype: Any) -> ir.PushField:
        """A new explicit argument of the adjoint after those made before: a pointer of
        element type `dtype`."""
        pf = self.m.push_field(U64)
        self.m.args.append(ArgSlot(("param", self.next_param), "ptr", dtype, pf.index))
        self.next_param += 1
        return pf

    # -- diagnostics ---------------------------------------------------------------------
    def error(self, node: Any, what: str) -> exception:
        site = self.sites.get(id(node))
        filename, line = (site[1], site[2]) if site is not None else self.default_site
        return exception(errc.build, f"{filename}:{line}: cannot differentiate kernel "
                         f"{self.name}: {what}")

    def keep_site(self, new: Any, old: Any) -> Any:
        site = self.sites.get(id(old))
        if site is not None and new is not old:
            self.sites.setdefault(id(new), (new, *site[1:]))
        return new

    # -- entry ---------------------------------------------------------------------------
    def build(self) -> ir.Function:
        body = self.inline_block(strip_returns(self, self.lowered.kernel.body, None))
        forward, records = self.fwd_block(body, {})
        self.choose_split()
        reverse: list[ir.Stmt] = []
        self.rev_block(records, reverse)
        self.check_overwritten(reverse)
        reverse += self.flush_arguments()
        init = [ir.Assign(a, zero_of(a.ty))
                for a in (*self.adjoints.values(), *self.scalar_sums.values())]
        self.fn.body = expand_math(init + self.zero_shared_grads() + forward + reverse)
        remove_dead_code(self.fn)
        return self.fn

    def local(self, name: str, ty: Type) -> ir.Local:
        local = ir.Local(name, ty)
        self.fn.locals.append(local)
        return local

    def adj(self, version: ir.Local) -> ir.Local:
        a = self.adjoints.get(id(version))
        if a is None:
            a = self.adjoints[id(version)] = self.local(f"adj.{version.name}", version.ty)
        return a

    # -- values -----------------------------------------------------------------------------
    def is_active(self, v: ir.Value) -> bool:
        """Whether `v` depends on float data (so an integer made from it has no adjoint)."""
        stack: list[Any] = [v]
        for x in ir.each_once(stack):
            if isinstance(x, ir.Read) and id(x.local) in self.active:
                return True
            if isinstance(x, ir.Load) and is_float(x.ty):
                return True
            if isinstance(x, ir.Op | ir.Ext):
                stack.extend(a for a in x.args if isinstance(a, ir.Value))
            elif isinstance(x, ir.Cond):
                stack.extend((x.cond, x.a, x.b))
            elif isinstance(x, ir.Load):
                stack.append(x.place.index)
        return False

    def sources(self, v: ir.Value, decided: bool = False) -> Iterator[Any]:
        """Every value `v` is computed from, through the versions of variables; with
        `decided`, also through the conditions that decide which value a version takes
        (and a condition's own), not only through the values it chooses between."""
        stack: list[Any] = [v]
        for x in ir.each_once(stack):
            yield x
            if isinstance(x, ir.Read):
                stack.extend(self.defs.get(id(x.local), ()))
                if decided:
                    stack.extend(self.control.get(id(x.local), ()))
            elif isinstance(x, ir.Op | ir.Ext):
                stack.extend(a for a in x.args if isinstance(a, ir.Value))
            elif isinstance(x, ir.Cond):
                stack.extend((x.cond, x.a, x.b) if decided else (x.a, x.b))

    def same_in_sub_group(self, v: ir.Value) -> bool:
        """Whether every work-item of a sub-group computes `v` alike: from constants,
        arguments and work-group built-ins, through variables whose branches and loops
        decide alike, not from its own id or from memory."""
        return not any((isinstance(x, ir.Builtin) and x.name not in _SUB_GROUP_BUILTINS) or
                       isinstance(x, ir.Load | ir.Atomic) for x in self.sources(v, True))

    def pointer_of(self, index: ir.Value, site: Any) -> int | None:
        """The differentiable pointer argument an address is computed from (its push
        index), or None."""
        found = {x.index for x in self.sources(index)
                 if isinstance(x, ir.PushField) and x.index in self.grad}
        if len(found) > 1:
            raise self.error(site, "pointer arithmetic mixing differentiable pointers")
        return found.pop() if found else None

    def fwd_value(self, v: Any, env: dict[int, ir.Local], memo: dict[int, Any]) -> Any:
        """`v` reading the current versions of the variables, for the forward sweep."""
        if not isinstance(v, ir.Value):
            return v
        hit = memo.get(id(v))
        if hit is not None:
            return hit
        r: Any
        if isinstance(v, ir.Const | ir.PushField | ir.Builtin):
            r = v
        elif isinstance(v, ir.Read):
            if isinstance(v.local.ty, ArrayType):
                raise self.error(v, "a private array")
            current = env.get(id(v.local))
            if current is None:
                raise self.error(v, f"'{v.local.name}' is read before it is assigned")
            r = ir.Read(current)
        elif isinstance(v, ir.Op):
            if v.opname.startswith(ir.COLLECTIVE_OPS):
                raise self.error(v, f"group operation {v.opname}")
            r = ir.Op(v.opname, v.ty, [self.fwd_value(a, env, memo) for a in v.args])
        elif isinstance(v, ir.Ext):
            r = ir.Ext(v.name, v.ty, [self.fwd_value(a, env, memo) for a in v.args])
        elif isinstance(v, ir.Load):
            place = self.fwd_place(v.place, env, memo, v)
            r = ir.Load(place)
            if isinstance(place.root, ir.SharedRoot):
                self.shared_read.add(id(place.root))
            if is_float(v.ty):
                pf = self.pointer_of(place.index, v)
                if pf is not None:
                    self.read_ptrs.add(pf)
                    self.loads[id(r)] = (r, pf)
        elif isinstance(v, ir.Cond):
            if v.pre_a or v.pre_b:
                raise self.error(v, "a conditional expression with statements")
            r = ir.Cond(*(self.fwd_value(x, env, memo) for x in (v.cond, v.a, v.b)), v.ty)
        elif isinstance(v, ir.Atomic):
            raise self.error(v, f"the result of an atomic operation ({v.opname}) used as a "
                             "value")
        else:
            raise self.error(v, f"a {type(v).__name__} value")
        memo[id(v)] = self.keep_site(r, v)
        return r

    def fwd_place(self, place: ir.Place, env: dict[int, ir.Local], memo: dict[int, Any],
                  site: Any) -> ir.Place:
        if isinstance(place.root, ir.SharedRoot) and place.members:
            raise self.error(site, "a struct in local memory")
        if not isinstance(place.root, ir.GlobalRoot | ir.SharedRoot) and \
                id(place.root) not in self.reducers:
            raise self.error(site, "a private array")
        return dataclasses.replace(place, index=self.fwd_value(place.index, env, memo))

    # -- forward sweep ----------------------------------------------------------------------
    def version(self, original: ir.Local, value: ir.Value | None = None) -> ir.Local:
        v = self.local(original.name, original.ty)
        self.defs[id(v)] = [value] if value is not None else []
        if is_float(original.ty) or (value is not None and self.is_active(value)):
            self.active.add(id(v))
        return v

    def fwd_block(self, body: list[ir.Stmt], env: dict[int, ir.Local]
                  ) -> tuple[list[ir.Stmt], list[tuple]]:
        """The forward sweep of `body` (updating `env`), and what its reverse needs."""
        out: list[ir.Stmt] = []
        records: list[tuple] = []
        for s in body:
            self.fwd_stmt(s, env, out, records)
        return out, records

    def fwd_stmt(self, s: ir.Stmt, env: dict[int, ir.Local], out: list[ir.Stmt],
                 records: list[tuple]) -> None:
        memo: dict[int, Any] = {}
        if isinstance(s, ir.Assign):
            if not isinstance(s.local.ty, Scalar):
                raise self.error(s, f"a variable of type {s.local.ty!r}")
            value = self.fwd_value(s.value, env, memo)
            new = self.version(s.local, value)
            out.append(ir.Assign(new, value))
            env[id(s.local)] = new
            records.append(("assign", new, value))
        elif isinstance(s, ir.Store):
            place = self.fwd_place(s.place, env, memo, s)
            value = self.fwd_value(s.value, env, memo)
            if isinstance(place.root, ir.SharedRoot):
                if id(place.root) in self.shared_read or self.loop_depth:
                    raise self.error(s, "local memory written after it is read, or in a "
                                     "loop (the adjoint recomputes from its last contents)")
                out.append(ir.Store(place, value))  # the forward sweep fills it again
                records.append(("shared_store", place, value))
                return
            kind = "reduce" if id(place.root) in self.reducers else "store"
            if kind == "store" and is_float(place.ty):
                pf = self.pointer_of(place.index, s)
                if pf is not None:  # a store in a loop counts as two
                    self.stores[pf] = self.stores.get(pf, 0) + 1 + (self.loop_depth > 0)
            records.append((kind, place, value, s))
        elif isinstance(s, ir.Eval):
            x = s.value
            if isinstance(x, ir.Op) and x.opname == "OpControlBarrier":
                out.append(ir.Eval(ir.Op(x.opname, x.ty, list(x.args))))
                records.append(("barrier", x))
            elif isinstance(x, ir.Atomic) and is_float(x.ty):
                place = self.fwd_place(x.place, env, memo, x)
                pf = self.pointer_of(place.index, x)
                if pf is None:
                    return
                if x.opname != "OpAtomicFAddEXT":
                    raise self.error(x, f"atomic {x.opname[8:].replace('EXT', '')} on "
                                     "differentiable memory (only fetch_add/fetch_sub have "
                                     "adjoints)")
                records.append(("atomic_add", place, self.fwd_value(x.args[0], env, memo),
                                pf))
            # other atomics and prints: effects the adjoint does not repeat
        elif isinstance(s, ir.If):
            self.fwd_if(s, env, out, records, self.fwd_value(s.cond, env, memo))
        elif isinstance(s, ir.Loop):
            self.fwd_loop(s, env, out, records)
        elif isinstance(s, ir.Break | ir.Continue):
            raise self.error(s, "break or continue in a loop")
        elif isinstance(s, ir.Return):
            raise self.error(s, "return inside a loop")
        else:
            raise self.error(s, f"a {type(s).__name__} statement")

    def fwd_if(self, s: ir.If, env: dict[int, ir.Local], out: list[ir.Stmt],
               records: list[tuple], cond: ir.Value) -> None:
        env_t, env_e = dict(env), dict(env)
        then, t_rec = self.fwd_block(s.then, env_t)
        orelse, e_rec = self.fwd_block(s.orelse, env_e)
        merges = []
        originals = {id(x.local): x.local for x in _assigns(s.then + s.orelse)}
        for key, original in originals.items():
            a, b = env_t.get(key), env_e.get(key)
            if a is b:
                continue
            merged = self.version(original)
            self.control[id(merged)] = [cond]
            for branch, v in ((then, a), (orelse, b)):
                value = ir.Read(v) if v is not None else zero_of(original.ty)
                branch.append(ir.Assign(merged, value))
                self.defs[id(merged)].append(value)
                if v is not None and id(v) in self.active:
                    self.active.add(id(merged))
            merges.append((merged, a, b))
            env[key] = merged
        out.append(ir.If(cond, then, orelse))
        records.append(("if", cond, t_rec, e_rec, merges))

    def fwd_loop(self, s: ir.Loop, env: dict[int, ir.Local], out: list[ir.Stmt],
                 records: list[tuple]) -> None:
        step = s.step
        if s.pre or s.cond is None or len(step) != 1 or not isinstance(step[0], ir.Assign) \
                or not isinstance(step[0].value, ir.Op) or step[0].value.opname != "OpIAdd":
            raise self.error(s, "a while loop (only for loops over range() are "
                             "differentiated)")
        counter = step[0].local
        carried = list({id(a.local): a.local for a in _assigns(s.body + step)}.values())
        if self.split is None and self.loop_depth == 0:
            sums = _split_sums(s, counter, carried)
            if sums is not None:
                self.split, self.split_sums = id(s), sums
        entry = {id(c): env.get(id(c)) for c in carried}
        work = {id(c): self.version(c) for c in carried}
        for c in carried:
            start = entry[id(c)]
            value = ir.Read(start) if start is not None else zero_of(c.ty)
            out.append(ir.Assign(work[id(c)], value))
            self.defs[id(work[id(c)])].append(value)
            if start is not None and id(start) in self.active:
                self.active.add(id(work[id(c)]))
        loop_env = {**env, **work}
        memo: dict[int, Any] = {}
        cond = self.fwd_value(s.cond, loop_env, memo)
        stride = self.fwd_value(step[0].value.args[1], loop_env, memo)
        if self.is_active(cond) or self.is_active(stride):
            raise self.error(s, "a loop whose count depends on float values")
        for w in work.values():  # the same in the work-items that run iteration k alike
            self.control[id(w)] = [cond, stride]
        count = self.local("loop.count", counter.ty)
        body = self.iteration(s, loop_env, work)[0]
        wc = work[id(counter)]
        trips = self.trip_count(s, counter, entry[id(counter)], env, stride)
        counting = [] if trips is not None else [
            ir.Assign(count, ir.Op("OpIAdd", counter.ty, [ir.Read(count),
                                                          ir.Const(counter.ty, 1)]))]
        out.append(ir.Assign(count, trips if trips is not None else zero_of(counter.ty)))
        out.append(ir.Loop([], cond, body, [
            ir.Assign(wc, ir.Op("OpIAdd", counter.ty, [ir.Read(wc), stride])), *counting]))
        final = {}
        for c in carried:
            f = self.version(c, ir.Read(work[id(c)]))
            self.control[id(f)] = [cond]
            out.append(ir.Assign(f, ir.Read(work[id(c)])))
            env[id(c)] = final[id(c)] = f
        records.append(("loop", s, counter, carried, entry, work, final, loop_env, count,
                        stride))

    def trip_count(self, s: ir.Loop, counter: ir.Local, start: ir.Local | None,
                   env: dict[int, ir.Local], stride: ir.Value) -> ir.Value | None:
        """The iterations of a loop over `range` with a constant step, worked out before
        it (in 64 bits): the forward sweep's loop is then left to the values the reverse
        needs, often none, rather than run to count the iterations. None for other
        loops."""
        c, t = s.cond, counter.ty
        assigned = {id(a.local) for a in _assigns(s.body)}
        step = self.defs.get(id(stride.local), ()) if isinstance(stride, ir.Read) else ()
        if not (isinstance(c, ir.Op) and c.opname in _COMPARISONS and start is not None and
                isinstance(c.args[0], ir.Read) and c.args[0].local is counter and
                isinstance(c.args[1], ir.Read) and id(c.args[1].local) not in assigned and
                id(c.args[1].local) in env and len(step) == 1 and
                isinstance(step[0], ir.Const) and isinstance(t, Scalar) and
                (t.is_signed or t.bits < 64)):
            return None
        wide = Scalar("i", 64)
        by = int(step[0].value)
        if ("Less" in c.opname) != (by > 0):  # not the loop `range` makes
            return None

        def widened(local: ir.Local) -> ir.Value:
            if t.bits == 64:
                return ir.Read(local)
            return ir.Op("OpSConvert" if t.is_signed else "OpUConvert", wide, [ir.Read(local)])

        first, stop = widened(start), widened(env[id(c.args[1].local)])
        span = ir.Op("OpISub", wide, [stop, first] if by > 0 else [first, stop])
        trips = ir.Op("OpSDiv", wide, [ir.Op("OpIAdd", wide, [span, ir.Const(wide, abs(by) - 1)]),
                                       ir.Const(wide, abs(by))])
        trips = ir.Op("OpSelect", wide, [ir.Op("OpSGreaterThan", BOOL, [span, ir.Const(wide, 0)]),
                                         trips, ir.Const(wide, 0)])
        if t.bits == 64:
            return trips
        return ir.Op("OpSConvert" if t.is_signed else "OpUConvert", t, [trips])

    def iteration(self, s: ir.Loop, loop_env: dict[int, ir.Local],
                  work: dict[int, ir.Local]) -> tuple[list[ir.Stmt], list[tuple], dict]:
        """One iteration's forward sweep from the working variables, writing them back."""
        env = dict(loop_env)
        self.loop_depth += 1
        out, records = self.fwd_block(s.body, env)
        self.loop_depth -= 1
        for key, w in work.items():
            if env.get(key) is not w:
                out.append(ir.Assign(w, ir.Read(env[key])))
                self.defs[id(w)].append(ir.Read(env[key]))
                if id(env[key]) in self.active:
                    self.active.add(id(w))
        return out, records, env

    # -- reverse sweep ----------------------------------------------------------------------
    def rev_block(self, records: list[tuple], out: list[ir.Stmt]) -> None:
        for r in reversed(records):
            getattr(self, "rev_" + r[0])(r, out)

    def accumulate(self, local: ir.Local, a: ir.Value, out: list[ir.Stmt]) -> None:
        adj = self.adj(local)
        out.append(ir.Assign(adj, ir.Op("OpFAdd", local.ty, [ir.Read(adj), a])))

    def rev_assign(self, r: tuple, out: list[ir.Stmt]) -> None:
        _, version, value = r
        if is_float(version.ty):
            adj = self.adj(version)
            self.back(value, ir.Read(adj), out)
            out.append(ir.Assign(adj, zero_of(version.ty)))

    def rev_if(self, r: tuple, out: list[ir.Stmt]) -> None:
        _, cond, t_rec, e_rec, merges = r
        then: list[ir.Stmt] = []
        orelse: list[ir.Stmt] = []
        for merged, a, b in merges:
            if is_float(merged.ty):
                for branch, v in ((then, a), (orelse, b)):
                    if v is not None:
                        self.accumulate(v, ir.Read(self.adj(merged)), branch)
        if self.phase == "after" and (_holds(t_rec, self.split) or _holds(e_rec, self.split)):
            # the branch without the split loop ends the other parts' share, as the loop does
            for records, branch in ((t_rec, then), (e_rec, orelse)):
                if not _holds(records, self.split):
                    self.rev_block(records, branch)
                    branch += self.end_share()
            for records, branch in ((t_rec, then), (e_rec, orelse)):
                if _holds(records, self.split):
                    self.rev_block(records, branch)
        else:
            self.rev_block(t_rec, then)
            self.rev_block(e_rec, orelse)
        out.append(ir.If(cond, then, orelse))
        for merged, _, _ in merges:
            if is_float(merged.ty):
                out.append(ir.Assign(self.adj(merged), zero_of(merged.ty)))

    def rev_loop(self, r: tuple, out: list[ir.Stmt]) -> None:
        _, s, counter, carried, entry, work, final, loop_env, count, stride = r
        if id(s) == self.split:
            self.phase = "loop"
        floats = [c for c in carried if is_float(c.ty)]
        flow = {id(c): self.local(f"adj.carried.{c.name}", c.ty) for c in floats}
        for c in floats:
            out.append(ir.Assign(flow[id(c)], ir.Read(self.adj(final[id(c)]))))
            out.append(ir.Assign(self.adj(final[id(c)]), zero_of(c.ty)))
        t = counter.ty
        left, k = self.local("loop.left", t), self.local("loop.k", t)
        wc = work[id(counter)]
        start = entry[id(counter)]
        assert start is not None  # the frontend assigns the counter before the loop

        def at(n: ir.Value) -> ir.Stmt:  # the counter of iteration n
            return ir.Assign(wc, ir.Op("OpIAdd", t, [ir.Read(start), ir.Op(
                "OpIMul", t, [n, stride])]))

        body: list[ir.Stmt] = [
            ir.Assign(k, ir.Op("OpISub", t, [ir.Read(left), ir.Const(t, 1)])), at(ir.Read(k))]
        first = len(self.fn.locals)
        forward, records, env = self.iteration(s, loop_env, work)
        for c in floats:
            if env[id(c)] is not work[id(c)]:
                forward.append(ir.Assign(self.adj(env[id(c)]), ir.Read(flow[id(c)])))
        reverse: list[ir.Stmt] = []
        self.rev_block(records, reverse)
        carried_in = {id(work[id(c)]) for c in carried if c is not counter}
        if _reads(reverse, _derived(carried_in, self.fn.locals[first:], self.defs)):
            body += self.replay(s, carried, counter, entry, work, loop_env, k, at)
        body += forward + reverse
        for c in floats:
            w = work[id(c)]
            body.append(ir.Assign(flow[id(c)], ir.Read(self.adj(w))))
            body.append(ir.Assign(self.adj(w), zero_of(c.ty)))
        greater = "OpSGreaterThan" if t.is_signed else "OpUGreaterThan"
        first_k: ir.Value = zero_of(t)
        if id(s) == self.split:
            first_k = self.split_range(count, t, left, out)
            out += self.end_share(keep={id(flow[id(c)]) for c in floats
                                        if id(c) in self.split_sums})
            # a temporary's adjoint after the loop is its last iteration's
            last = [ir.Assign(flow[id(c)], zero_of(c.ty)) for c in floats
                    if id(c) not in self.split_sums]
            if last:
                out.append(ir.If(ir.Op("OpINotEqual", BOOL, [ir.Read(left), ir.Read(count)]),
                                 last, []))
        else:
            out.append(ir.Assign(left, ir.Read(count)))
        out.append(ir.Loop([], ir.Op(greater, BOOL, [ir.Read(left), first_k]), body, [
            ir.Assign(left, ir.Op("OpISub", t, [ir.Read(left), ir.Const(t, 1)]))]))
        # what flows into the values before a split loop is part 0's: a sum's adjoint is
        # the same in every part, a temporary's is zero once an iteration ran
        into = out
        if id(s) == self.split:
            self.phase = "before"
            into = []
            out.append(ir.If(self.first_part(), into, []))
        for c in floats:
            before = entry[id(c)]
            if before is not None:
                self.accumulate(before, ir.Read(flow[id(c)]), into)

    # -- splitting a loop's reverse over parts of the launch ---------------------------
    def choose_split(self) -> None:
        """Keeps the loop `fwd_loop` chose, if the launch can split its reverse: parts of
        the launch (work-groups along z, which a one-dimensional range kernel does not
        use) each run the reverse of a slice of its iterations. Each iteration's reverse
        needs the counter and the adjoints of sums, the same in every iteration, so the
        slices are independent; by linearity, part 0 also carries what the rest of the
        kernel adds, and the other parts only their slice's share. An n-body step's loop
        over bodies then runs on many times the work-items, where a launch of 16384 left
        an H100's warps waiting on one another's shuffles and atomics. Not where an
        adjoint zeroes gradients (the parts would race), nor in work-group memory."""
        spec = self.m.spec
        if self.split is None:
            return
        zeroes = spec.adjoint == "zero" or any(pf in self.read_ptrs or n > 1
                                                for pf, n in self.stores.items())
        if spec.kind != "range" or spec.dims != 1 or spec.fold_groups or zeroes or \
                self.shared_read:
            self.split = None
            return
        self.phase = "after"

    def first_part(self) -> ir.Value:
        return ir.Op("OpIEqual", BOOL, [builtin("WorkgroupId", 2), ir.Const(I32, 0)])

    def end_share(self, keep: frozenset[int] | set[int] = frozenset()) -> list[ir.Stmt]:
        """In parts other than the first, the adjoints so far set to zero (but those in
        `keep`): what the rest of the kernel adds is part 0's."""
        zeroed = [ir.Assign(a, zero_of(a.ty)) for a in (*self.adjoints.values(),
                                                        *self.scalar_sums.values())
                  if id(a) not in keep]
        return [ir.If(self.first_part(), [], zeroed)] if zeroed else []

    def split_range(self, count: ir.Local, t: Scalar, left: ir.Local, out: list[ir.Stmt]
                    ) -> ir.Value:
        """This part's slice of the `count` iterations: sets `left` to its end and returns
        its start."""
        def value(x: ir.Value) -> ir.Value:
            return x if t == I32 else ir.Op("OpSConvert" if t.is_signed else "OpUConvert",
                                            t, [x])

        part, parts = value(builtin("WorkgroupId", 2)), value(builtin("NumWorkgroups", 2))
        size, start = self.local("split.size", t), self.local("split.start", t)
        less = "OpSLessThan" if t.is_signed else "OpULessThan"

        def at_most_count(x: ir.Value) -> ir.Value:
            return ir.Op("OpSelect", t, [ir.Op(less, BOOL, [x, ir.Read(count)]), x,
                                         ir.Read(count)])

        out += [ir.Assign(size, ir.Op("OpSDiv" if t.is_signed else "OpUDiv", t, [
                    ir.Op("OpIAdd", t, [ir.Read(count), ir.Op("OpISub", t, [
                        parts, ir.Const(t, 1)])]), parts])),
                ir.Assign(start, at_most_count(ir.Op("OpIMul", t, [part, ir.Read(size)]))),
                ir.Assign(left, at_most_count(ir.Op("OpIAdd", t, [ir.Read(start),
                                                                  ir.Read(size)])))]
        return ir.Read(start)

    def replay(self, s: ir.Loop, carried: list[ir.Local], counter: ir.Local,
               entry: dict[int, ir.Local | None], work: dict[int, ir.Local],
               loop_env: dict[int, ir.Local], k: ir.Local, at: Any) -> list[ir.Stmt]:
        """Statements recomputing the working variables of iteration k from the loop's
        entry: iterations 0..k-1 again."""
        t = counter.ty
        j = self.local("loop.replay", t)
        out: list[ir.Stmt] = []
        for c in carried:
            start = entry[id(c)]
            out.append(ir.Assign(work[id(c)], ir.Read(start) if start is not None
                                 else zero_of(c.ty)))
        less = "OpSLessThan" if t.is_signed else "OpULessThan"
        out.append(ir.Assign(j, zero_of(t)))
        out.append(ir.Loop([], ir.Op(less, BOOL, [ir.Read(j), ir.Read(k)]),
                           self.iteration(s, loop_env, work)[0],
                           [at(ir.Op("OpIAdd", t, [ir.Read(j), ir.Const(t, 1)])),
                            ir.Assign(j, ir.Op("OpIAdd", t, [ir.Read(j), ir.Const(t, 1)]))]))
        out.append(at(ir.Read(k)))
        return out

# -- helpers -----------------------------------------------------------------------------------

_COMPARISONS = ("OpSLessThan", "OpULessThan", "OpSGreaterThan", "OpUGreaterThan")
# the built-in values every work-item of a sub-group sees alike
_SUB_GROUP_BUILTINS = ("WorkgroupId", "NumWorkgroups", "WorkgroupSize", "NumSubgroups",
                       "SubgroupId", "SubgroupSize")


def _assigns(body: list[ir.Stmt]) -> list[ir.Assign]:
    """The assignments in `body`, nested ones included."""
    out: list[ir.Assign] = []
    for s in body:
        if isinstance(s, ir.Assign):
            out.append(s)
        elif isinstance(s, ir.If):
            out += _assigns(s.then) + _assigns(s.orelse)
        elif isinstance(s, ir.Loop):
            out += _assigns(s.pre) + _assigns(s.body) + _assigns(s.step)
    return out


def _split_sums(s: ir.Loop, counter: ir.Local, carried: list[ir.Local]) -> set[int] | None:
    """The float sums a loop carries (`c = c + x`, `c = c - x`, `c` read nowhere else), if
    every other float it assigns is a temporary (assigned at the top of an iteration
    before any read): the reverse of each iteration is then independent of the others.
    None otherwise."""
    floats = [c for c in carried if c is not counter and is_float(c.ty)]
    updates = {id(a.local): [] for a in _assigns(s.body)}
    for a in _assigns(s.body):
        updates[id(a.local)].append(a)
    sums = {id(c) for c in floats if all(
        isinstance(a.value, ir.Op) and a.value.opname in ("OpFAdd", "OpFSub") and
        isinstance(a.value.args[0], ir.Read) and a.value.args[0].local is c and
        not _reads(a.value.args[1], {id(c)}) for a in updates[id(c)])}
    for c in floats:
        if id(c) in sums:
            others = [a.value for a in _assigns(s.body) if a.local is not c]
            if _reads(others + _non_assigns(s.body), {id(c)}):
                return None
        elif not _temporary(s.body, c):
            return None
    return sums


def _temporary(body: list[ir.Stmt], c: ir.Local) -> bool:
    """Whether `body` assigns `c` at its top level before anything reads it."""
    for st in body:
        if isinstance(st, ir.Assign) and st.local is c:
            return not _reads(st.value, {id(c)})
        if _reads(st, {id(c)}):
            return False
    return False


def _non_assigns(body: list[ir.Stmt]) -> list[Any]:
    """What statements in `body` read other than assignments' values: conditions, stored
    places and values, evaluated values."""
    out: list[Any] = []
    for s in body:
        if isinstance(s, ir.If):
            out += [s.cond, *_non_assigns(s.then), *_non_assigns(s.orelse)]
        elif isinstance(s, ir.Loop):
            out += [s.cond, *_non_assigns(s.pre + s.body + s.step)]
        elif not isinstance(s, ir.Assign):
            out.append(s)
    return out


def _holds(records: list[tuple], loop: int | None) -> bool:
    """Whether the forward sweep's `records` include the loop of id `loop`."""
    for r in records:
        if r[0] == "loop" and id(r[1]) == loop:
            return True
        if r[0] == "if" and (_holds(r[2], loop) or _holds(r[3], loop)):
            return True
    return False


def _derived(seeds: set[int], created: list[ir.Local], defs: dict[int, list]) -> set[int]:
    """`seeds` and the locals among `created` (in creation order) whose values read them."""
    out = set(seeds)
    for local in created:
        if any(_reads([v], out) for v in defs.get(id(local), ())):
            out.add(id(local))
    return out


def _reads(node: Any, locals_: set[int]) -> bool:
    """Whether statements or values read one of `locals_`."""
    stack = [node]
    for x in ir.each_once(stack):
        if isinstance(x, ir.Read):
            if id(x.local) in locals_:
                return True
        elif isinstance(x, list | tuple):
            stack.extend(x)
        elif dataclasses.is_dataclass(x) and isinstance(x, ir.Value | ir.Stmt | ir.Place):
            stack.extend(getattr(x, f.name) for f in dataclasses.fields(x)
                         if f.name not in ("ty", "local"))
    return False


def expand_math(body: list[ir.Stmt]) -> list[ir.Stmt]:
    """Math functions the adjoint kept whole (`Ext`) lowered as the frontend lowers them
    (float64 functions GLSL lacks, as exact formulas)."""
    memo: dict[int, Any] = {}

    def value(v: Any) -> Any:
        if not isinstance(v, ir.Value) or id(v) in memo:
            return memo.get(id(v), v)
        r: Any = v
        if isinstance(v, ir.Ext):
            args = [value(a) for a in v.args]
            r = glsl_call(v.name, v.ty, args) if not is_exact_glsl(v.name, v.ty) else \
                ir.Ext(v.name, v.ty, args)
        elif isinstance(v, ir.Op):
            r = ir.Op(v.opname, v.ty, [value(a) for a in v.args])
        elif isinstance(v, ir.Load):
            r = ir.Load(place(v.place))
        elif isinstance(v, ir.Atomic):
            r = ir.Atomic(v.opname, place(v.place), [value(a) for a in v.args], v.ty,
                          v.scope, v.semantics)
        elif isinstance(v, ir.Cond):
            r = ir.Cond(value(v.cond), value(v.a), value(v.b), v.ty)
        memo[id(v)] = r
        return r

    def place(p: ir.Place) -> ir.Place:
        return dataclasses.replace(p, index=value(p.index))

    def stmts(body: list[ir.Stmt]) -> list[ir.Stmt]:
        for s in body:
            if isinstance(s, ir.Assign | ir.Eval):
                s.value = value(s.value)
            elif isinstance(s, ir.Store):
                s.place, s.value = place(s.place), value(s.value)
            elif isinstance(s, ir.If):
                s.cond = value(s.cond)
                stmts(s.then)
                stmts(s.orelse)
            elif isinstance(s, ir.Loop):
                s.cond = value(s.cond) if s.cond is not None else None
                for part in (s.pre, s.body, s.step):
                    stmts(part)
        return body

    return stmts(body)


def adjoint_kernel(m: Any, lowered: Any, nparams: int) -> tuple[Any, tuple[tuple, ...]]:
    """The adjoint of a lowered kernel, and for each gradient argument of a pointer or
    float scalar (in their order, after the gradients of the reductions' targets) the
    capture path of the value it belongs to and what it is: for a pointer, how the kernel
    uses its memory: "r" (reads floats), "w" (writes them), "rw", or "" (neither); "s" for
    a scalar, whose gradient is one element."""
    builder = Adjoint(m, lowered, nparams)
    fn = builder.build()
    lowered = dataclasses.replace(lowered, split_loop=builder.split is not None)
    uses = tuple((path, "s" if pf < 0 else "r" * (pf in builder.read_ptrs) +
                  "w" * (pf in builder.written)) for path, pf in builder.paths)
    return dataclasses.replace(lowered, kernel=fn, coarsen=1), uses


__all__ = ["adjoint_kernel", "differentiable"]
