"""Random programs from a seed: `generate(seed, index, caps)` always makes the same one.

Four kinds of kernel share one statement and expression generator:
- `scalar`: a range kernel over every scalar type the device has, with casts, integer
  division and modulo over negative values, shifts, powers, bitwise operators,
  comparisons, `if` / `while` / `for` with `break` and `continue`, tuple assignments and
  divmod, private arrays, structs, helper functions, if_device bodies, and divisions and
  square roots compared within the ULP Vulkan allows; over USM or over sycl.buffers;
- `atomic`: the same code computing the values each work-item adds (or takes the
  minimum, maximum, and, or, xor of) into atomic counters, whose final values are known;
- `group`: an nd_range kernel whose top level also runs sub-group and work-group
  reduces, scans, broadcasts, shuffles, votes, exchanges through work-group memory and
  sums by work-group memory atomics;
- `reduction`: a range kernel with sycl.reduction reducers the code combines into.

Programs are built so that what they compute is defined: divisors are never zero (nor
-1, whose quotient of the most negative value overflows), shift counts are masked below
the width, float divisors are powers of two, loops are bounded, private arrays are
indexed in range. Variables may widen (vksycl's rule) but never from integers to floats,
so an operator chosen for a variable's kind stays valid whatever the final type."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from . import interpret as I
from . import program as P
from .scalars import BOOL, BY_NAME, F16, F32, F64, I32, INTS, Ty, int_promote, promote

N_RANGE = 32  # work-items of a range kernel
N_ND = 64  # of an nd_range kernel
N_REDUCTION = 96  # of a reduction kernel: more than one work-group's worth


@dataclass(frozen=True)
class Caps:
    """What the device has: optional scalar types and the sub-group size."""

    fp16: bool = True
    fp64: bool = True
    int64: bool = True
    atomic64: bool = True
    sub_group_size: int = 8


@dataclass
class Var:
    ty: Any  # a Ty, or a struct name
    writable: bool = True


@dataclass
class Scope:
    vars: dict[str, Var] = field(default_factory=dict)
    arrays: dict[str, tuple[Ty, int]] = field(default_factory=dict)


class Context:
    """Where statements are generated: loop depth, whether this is a helper's body or an
    if_device body, and what `return` means there."""

    def __init__(self, helper: bool = False, ret_kind: str = "", body: bool = False,
                 group: bool = False) -> None:
        self.loops = 0
        self.helper = helper
        self.ret_kind = ret_kind
        self.body = body
        self.group = group


class Generator:
    """Builds one program; each part of it draws from the same random stream."""

    def __init__(self, rng: random.Random, name: str, kind: str, caps: Caps) -> None:
        self.r = rng
        self.name = name
        self.kind = kind
        self.caps = caps
        self.n = {"group": N_ND, "reduction": N_REDUCTION}.get(kind, N_RANGE)
        self.wg = rng.choice([8, 16, 32, 64]) if kind == "group" else 0
        self.types = [t for t in INTS if caps.int64 or t.bits < 64] + \
            [F32] + ([F16] if caps.fp16 else []) + ([F64] if caps.fp64 else []) + [BOOL]
        self.counter = 0
        self.inputs: dict[str, list] = {}  # buffer name -> values (n per input variable)
        self.outputs: dict[str, int] = {}  # buffer name -> slots
        self.atomics: dict[str, list[str]] = {}  # buffer name -> method of each slot
        self.structs: list[P.Struct] = []
        self.helpers: list[tuple[P.Function, tuple[str, ...], str]] = []
        self.local: list[tuple[str, str, int]] = []
        self.reductions: list[tuple[str, str, str, bool]] = []
        self.captures: list[tuple[str, str, Any]] = []
        self.budget = 0
        self.in_helper = False  # no work-item queries in helpers

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def chance(self, p: float) -> bool:
        return self.r.random() < p

    # -- the program ------------------------------------------------------------------
    def program(self) -> P.Program:
        r = self.r
        for _ in range(r.choice([0, 0, 1, 1, 2])):
            self.structs.append(self.struct())
        for _ in range(r.choice([0, 1, 1, 2, 3])):
            self.helpers.append(self.helper())
        scope = Scope()
        ctx = Context(group=self.kind == "group")
        body: list[P.Stmt] = []
        for _ in range(r.randint(2, 5)):
            body.append(self.load_input(scope))
        if self.structs and self.chance(0.5):
            body.append(self.load_struct(scope))
        self.budget = r.randint(8, 30)
        if self.kind == "reduction":
            for k in range(r.randint(1, 3)):
                self.reduction(k)
        if self.kind == "group":
            for _ in range(r.randint(1, 4)):
                body += self.block(scope, ctx, r.randint(1, 4))
                body += self.group_op(scope)
        body += self.block(scope, ctx, r.randint(3, 10))
        if self.kind == "atomic":
            for _ in range(r.randint(1, 4)):
                body.append(self.atomic(scope))
        body += self.final_stores(scope)
        if self.kind == "reduction":
            body += [self.reduce(scope, ctx) for _ in self.reductions]
        buffers = self.buffers()
        memory = "buffer" if self.kind in ("scalar", "group") and r.random() < 0.3 else "usm"
        shape = r.choice([(4, 8), (8, 4), (2, 16), (2, 4, 4)]) \
            if self.kind in ("scalar", "atomic") and r.random() < 0.25 else ()
        front = "free" if memory == "usm" and not shape and not self.reductions and \
            r.random() < 0.2 else "closure"
        return P.Program(self.name, self.n, self.wg, tuple(buffers), tuple(body),
                         tuple(self.structs), tuple(h for h, _, _ in self.helpers),
                         tuple(self.local), tuple(self.reductions), memory,
                         tuple(self.captures), shape, front)

    def buffers(self) -> list[P.Buffer]:
        out = []
        for name, values in self.inputs.items():
            out.append(P.Buffer(name, name.split("_", 1)[1], "in", tuple(values)))
        for name, slots in self.outputs.items():
            ty = name.split("_", 1)[1]
            out.append(P.Buffer(name, ty, "out", tuple([self.fill(ty)] * (slots * self.n))))
        for name, methods in self.atomics.items():
            t = BY_NAME[name.split("_", 1)[1]]
            out.append(P.Buffer(name, t.name, "atomic",
                                tuple(self.atomic_start(t, m) for m in methods)))
        for _, name, op, _ in self.reductions:
            t = BY_NAME[name.split("_", 1)[1]]
            start = self.atomic_start(t, {"minimum": "fetch_min", "maximum": "fetch_max",
                                          "bit_and": "fetch_and"}.get(op, "")) \
                if t.is_int else float(self.r.randint(-8, 8))
            out.append(P.Buffer(name, t.name, "reduction", (start,)))
        return out

    def fill(self, ty: str) -> Any:
        """What an output slot holds before the kernel writes it."""
        st = next((s for s in self.structs if s.name == ty), None)
        if st is not None:
            return tuple(self.fill(t) for _, t in st.fields)
        t = BY_NAME[ty]
        if t.is_bool:
            return True
        if t.is_float:
            return -1234.0
        return I.wrap(0x5A5A5A5A5A5A5A5A, t)

    def atomic_start(self, t: Ty, method: str) -> int:
        if method == "fetch_and":
            return I.wrap(-1 ^ (1 << self.r.randrange(t.bits)), t)
        if method == "fetch_min":
            return t.hi - self.r.randrange(100)
        if method == "fetch_max":
            return t.lo + self.r.randrange(100)
        return self.r.randint(t.lo, t.hi) if self.chance(0.3) else self.r.randint(0, 100)

    # -- data -------------------------------------------------------------------------
    def value(self, t: Ty) -> Any:
        """An input value: edge values and small ones more often than the rest."""
        r = self.r
        if t.is_bool:
            return r.random() < 0.5
        if t.is_float:
            top = {16: 6, 32: 12, 64: 20}[t.bits]
            choice = r.random()
            if choice < 0.15:
                return float(r.randint(-9, 9))
            if choice < 0.25:
                return float(r.choice([0.0, 1.0, -1.0, 0.5, -0.5, 2.0]))
            if choice < 0.4:
                return float(r.randint(-(1 << top), 1 << top))
            m = r.randint(-15, 15)
            return m * 2.0 ** r.randint(-4, 4)
        choice = r.random()
        if choice < 0.25:
            return r.choice([t.lo, t.hi, t.lo + 1, t.hi - 1, 0, 1, I.wrap(-1, t)])
        if choice < 0.55:
            return I.wrap(r.randint(-9, 9), t)
        if choice < 0.7:
            return I.wrap((1 << r.randrange(t.bits)) + r.choice([-1, 0, 1]), t)
        return r.randint(t.lo, t.hi)

    def load_input(self, scope: Scope) -> P.Stmt:
        t = self.r.choice(self.types)
        if self.chance(0.2):  # a numpy scalar the kernel captures: a kernel argument
            name = f"c{len(self.captures)}"
            self.captures.append((name, t.name, self.value(t)))
            var = self.fresh("a")
            scope.vars[var] = Var(t)
            return P.Assign(var, P.Var(name))
        name = f"in_{t.name}"
        values = self.inputs.setdefault(name, [])
        offset = len(values)
        values += [self.value(t) for _ in range(self.n)]
        var = self.fresh("a")
        scope.vars[var] = Var(t)
        return P.Assign(var, P.Index(name, self.element(offset)))

    def element(self, offset: int) -> P.Expr:
        i = P.Query("id")
        return P.Bin("+", P.Lit(offset), i) if offset else i

    def struct(self) -> P.Struct:
        k = len(self.structs)
        fields = tuple((f"f{j}", self.r.choice(self.types).name)
                       for j in range(self.r.randint(1, 4)))
        return P.Struct(f"{self.name}_S{k}", fields)

    def load_struct(self, scope: Scope) -> P.Stmt:
        st = self.r.choice(self.structs)
        name = f"in_{st.name}"
        values = self.inputs.setdefault(name, [])
        offset = len(values)
        values += [tuple(self.value(BY_NAME[t]) for _, t in st.fields) for _ in range(self.n)]
        var = self.fresh("s")
        scope.vars[var] = Var(st.name)
        return P.Assign(var, P.Index(name, self.element(offset)))

    # -- helpers ----------------------------------------------------------------------
    def helper(self) -> tuple[P.Function, tuple[str, ...], str]:
        """A module-level function: parameter kinds (int, float, bool, or a struct name)
        and the kind of value it returns."""
        r = self.r
        kinds = tuple(r.choice(["int", "int", "float", "bool"] +
                               [s.name for s in self.structs]) for _ in range(r.randint(1, 3)))
        ret = r.choice(["int", "int", "float", "bool"])
        scope = Scope()
        params = []
        for j, kind in enumerate(kinds):
            pname = f"p{j}"
            params.append(pname)
            scope.vars[pname] = Var({"int": I32, "float": F32, "bool": BOOL}.get(kind, kind))
        ctx = Context(helper=True, ret_kind=ret)
        self.budget = r.randint(2, 8)
        self.in_helper = True
        body = self.block(scope, ctx, r.randint(0, 4))
        body.append(P.Return(self.expr(scope, ret, 3)[0]))
        self.in_helper = False
        fn = P.Function(f"{self.name}_h{len(self.helpers)}", tuple(params), tuple(body))
        return fn, kinds, ret

    # -- statements -------------------------------------------------------------------
    def block(self, scope: Scope, ctx: Context, count: int, depth: int = 0) -> list[P.Stmt]:
        out: list[P.Stmt] = []
        for _ in range(count):
            if self.budget <= 0:
                break
            self.budget -= 1
            out += self.statement(scope, ctx, depth)
        return out

    def statement(self, scope: Scope, ctx: Context, depth: int) -> list[P.Stmt]:
        r = self.r
        options = [("decl", 5), ("assign", 4), ("aug", 2), ("store", 0 if ctx.helper else 3),
                   ("tuple", 1)]
        if depth < 3:
            options += [("if", 3), ("for", 2), ("while", 1)]
            if not ctx.body and depth < 2:
                options.append(("if_device", 1))
        options += [("array", 1), ("struct", 1 if self.structs and not ctx.helper else 0)]
        if self.kind == "atomic" and not ctx.helper:
            options.append(("atomic", 2))
        if self.reductions and not ctx.helper:
            options.append(("reduce", 2))
        if not ctx.helper:
            options.append(("approx", 1))
        what = r.choices([o for o, _ in options], [w for _, w in options])[0]
        return getattr(self, "s_" + what)(scope, ctx, depth)

    def writable(self, scope: Scope, kinds: tuple[str, ...] = ("int", "float", "bool")
                 ) -> list[str]:
        return [n for n, v in scope.vars.items() if v.writable and isinstance(v.ty, Ty)
                and _kind(v.ty) in kinds]

    def s_decl(self, scope: Scope, ctx: Context, depth: int) -> list[P.Stmt]:
        t = self.r.choice(self.types)
        e, et = self.expr(scope, _kind(t), 3)
        if et != t or self.chance(0.5):
            e = P.Cast(t.name, e)
        else:
            t = et
        name = self.fresh("v")
        scope.vars[name] = Var(t)
        return [P.Assign(name, e)]

    def s_assign(self, scope: Scope, ctx: Context, depth: int) -> list[P.Stmt]:
        names = self.writable(scope)
        if not names:
            return self.s_decl(scope, ctx, depth)
        name = self.r.choice(names)
        t = scope.vars[name].ty
        kind = _kind(t)
        e, et = self.expr(scope, "int" if kind == "bool" and self.chance(0.3) else kind, 3)
        if not isinstance(et, Ty) or (t.is_int and et.is_float) or self.chance(0.5):
            e = P.Cast(t.name, e)
        return [P.Assign(name, e)]

    def s_tuple(self, scope: Scope, ctx: Context, depth: int) -> list[P.Stmt]:
        """A swap of two variables of a kind, or `q, r = divmod(x, d)` into new ones."""
        r = self.r
        kind = r.choice(["int", "float"])
        names = self.writable(scope, (kind,))
        if len(names) >= 2 and r.random() < 0.5:
            a, b = r.sample(names, 2)
            if r.random() < 0.5:
                return [P.TupleAssign((a, b), (P.Var(b), P.Var(a)))]
            return [P.TupleAssign((a, b), (P.Var(b), self.expr(scope, kind, 2)[0]))]
        x = self.typed(scope, kind, 2)
        d = self.int_divisor(scope) if kind == "int" else self.float_divisor()
        q, rem = self.fresh("v"), self.fresh("v")
        stmt = P.TupleAssign((q, rem), (P.Call("divmod", (x, d)),))
        t = expr_type(self, scope, P.Bin("//", x, d))
        scope.vars[q] = scope.vars[rem] = Var(t if isinstance(t, Ty) else I32)
        return [stmt]

    def s_aug(self, scope: Scope, ctx: Context, depth: int) -> list[P.Stmt]:
        names = self.writable(scope, ("int", "float"))
        if not names:
            return self.s_decl(scope, ctx, depth)
        name = self.r.choice(names)
        t = scope.vars[name].ty
        if t.is_float:
            op = self.r.choice(["+", "-", "*", "/", "//", "%"])
            if op in ("/", "//", "%"):
                return [P.AugAssign(name, op, self.float_divisor())]
            return [P.AugAssign(name, op, self.float_operand(scope, 2))]
        op = self.r.choice(["+", "-", "*", "&", "|", "^", "<<", ">>", "//", "%"])
        if op in ("<<", ">>"):
            return [P.AugAssign(name, op, self.shift_count(scope, int_promote(t)))]
        if op in ("//", "%"):
            return [P.AugAssign(name, op, self.int_divisor(scope))]
        return [P.AugAssign(name, op, self.expr(scope, "int", 2)[0])]

    def s_store(self, scope: Scope, ctx: Context, depth: int) -> list[P.Stmt]:
        if self.structs and self.chance(0.15):
            st = self.r.choice(self.structs)
            fname, ft = self.r.choice(st.fields)
            e = self.field_value(scope, BY_NAME[ft])
            return [P.Store(self.output(st.name), self.slot(st.name), e, field=fname)]
        t = self.r.choice(self.types)
        e, et = self.expr(scope, _kind(t), 3)
        if isinstance(et, Ty) and self.chance(0.6):
            t = et
        if not isinstance(et, Ty) or (t.is_int and et.is_float):
            e = P.Cast(t.name, e)
        name = self.output(t.name)
        if self.chance(0.1) and t.is_int:
            return [P.Store(name, self.slot(t.name), e),
                    P.Store(name, self.last_slot(t.name), self.expr(scope, "int", 1)[0],
                            op=self.r.choice(["+", "-", "^", "|"]))]
        return [P.Store(name, self.slot(t.name), e)]

    def output(self, ty: str) -> str:
        return f"o_{ty}"

    def slot(self, ty: str) -> P.Expr:
        name = self.output(ty)
        k = self.outputs.get(name, 0)
        self.outputs[name] = k + 1
        return self.element(k * self.n)

    def last_slot(self, ty: str) -> P.Expr:
        return self.element((self.outputs[self.output(ty)] - 1) * self.n)

    def s_if(self, scope: Scope, ctx: Context, depth: int) -> list[P.Stmt]:
        test = self.condition(scope)
        body = self.inner(scope, ctx, depth)
        orelse = self.inner(scope, ctx, depth) if self.chance(0.5) else []
        return [P.If(test, tuple(body), tuple(orelse))]

    def inner(self, scope: Scope, ctx: Context, depth: int) -> list[P.Stmt]:
        """A nested block: its new variables end with it (they may be unset after it);
        it may end with break, continue or return."""
        inner = Scope(dict(scope.vars), dict(scope.arrays))
        out = self.block(inner, ctx, self.r.randint(1, 3), depth + 1)
        end = self.r.random()
        if ctx.loops and end < 0.12:
            out.append(P.Break())
        elif ctx.loops and end < 0.22:
            out.append(P.Continue())
        elif end < 0.27 and not ctx.group and (ctx.body or not ctx.helper):
            out.append(P.Return())
        elif end < 0.35 and ctx.helper and not ctx.body:
            out.append(P.Return(self.expr(scope, ctx.ret_kind, 2)[0]))
        for name, v in inner.vars.items():  # assignments to outer names stay visible
            if name in scope.vars:
                scope.vars[name] = v
        return out or [P.Assign(self.fresh("v"), P.Cast("int32", P.Lit(1)))]

    def s_for(self, scope: Scope, ctx: Context, depth: int) -> list[P.Stmt]:
        r = self.r
        var = self.fresh("k")
        shape = r.random()
        if shape < 0.3:
            args: tuple[P.Expr, ...] = (P.Lit(r.randint(0, 6)),)
        elif shape < 0.55:
            args = (P.Bin("&", self.expr(scope, "int", 2)[0], P.Lit(7)),)
        elif shape < 0.75:
            start = r.randint(-5, 5)
            args = (P.Lit(start), P.Lit(start + r.randint(0, 12)), P.Lit(r.randint(1, 3)))
        elif shape < 0.9:
            args = (P.Bin("&", self.expr(scope, "int", 2)[0], P.Lit(7)), P.Lit(-3),
                    P.Lit(-r.randint(1, 2)))
        else:
            step = P.Bin("+", P.Bin("&", self.expr(scope, "int", 1)[0], P.Lit(3)), P.Lit(1))
            args = (P.Lit(r.randint(-4, 0)), P.Lit(r.randint(0, 9)), step)
        inner = Scope(dict(scope.vars), dict(scope.arrays))
        inner.vars[var] = Var(I32, writable=False)
        ctx.loops += 1
        body = self.block(inner, ctx, r.randint(1, 4), depth + 1)
        ctx.loops -= 1
        if ctx.loops == 0 and not body:
            body = [P.Assign(self.fresh("v"), P.Var(var))]
        for name, v in inner.vars.items():
            if name in scope.vars:
                scope.vars[name] = v
        return [P.For(var, args, tuple(self.end_loop_body(scope, ctx, body)))]

    def end_loop_body(self, scope: Scope, ctx: Context, body: list[P.Stmt]) -> list[P.Stmt]:
        if self.chance(0.3):
            ctx.loops += 1
            exit_ = P.Break() if self.chance(0.5) else P.Continue()
            body = [*body[:1], P.If(self.condition(scope), (exit_,)), *body[1:]]
            ctx.loops -= 1
        return body or [P.Continue()]

    def s_while(self, scope: Scope, ctx: Context, depth: int) -> list[P.Stmt]:
        counter = self.fresh("w")
        scope.vars[counter] = Var(I32, writable=False)
        test = self.condition(scope)
        inner = Scope(dict(scope.vars), dict(scope.arrays))
        ctx.loops += 1
        body = self.block(inner, ctx, self.r.randint(1, 4), depth + 1)
        ctx.loops -= 1
        for name, v in inner.vars.items():
            if name in scope.vars:
                scope.vars[name] = v
        return [P.Assign(counter, P.Cast("int32", P.Lit(0))),
                P.While(counter, self.r.randint(1, 8), test,
                        tuple(self.end_loop_body(scope, ctx, body)))]

    def s_array(self, scope: Scope, ctx: Context, depth: int) -> list[P.Stmt]:
        t = self.r.choice(self.types)
        length = self.r.choice([2, 4, 8])
        name = self.fresh("arr")
        out: list[P.Stmt] = [P.Array(name, t.name, length)]
        for _ in range(self.r.randint(1, 3)):
            e, et = self.expr(scope, _kind(t), 2)
            if not isinstance(et, Ty) or (t.is_int and et.is_float):
                e = P.Cast(t.name, e)
            out.append(P.Store(name, self.array_index(scope, length), e))
        scope.arrays[name] = (t, length)
        return out

    def array_index(self, scope: Scope, length: int) -> P.Expr:
        if self.chance(0.3):
            return P.Lit(self.r.randrange(length))
        return P.Bin("&", self.expr(scope, "int", 2)[0], P.Lit(length - 1))

    def s_struct(self, scope: Scope, ctx: Context, depth: int) -> list[P.Stmt]:
        existing = [n for n, v in scope.vars.items() if isinstance(v.ty, str) and v.writable]
        if existing and self.chance(0.5):
            name = self.r.choice(existing)
            st = self.struct_named(scope.vars[name].ty)
            fname, ft = self.r.choice(st.fields)
            return [P.SetField(name, fname, self.field_value(scope, BY_NAME[ft]))]
        if existing and self.chance(0.4):
            name = self.r.choice(existing)
            sname = scope.vars[name].ty
            return [P.Store(self.output(sname), self.slot(sname), P.Var(name))]
        st = self.r.choice(self.structs)
        name = self.fresh("s")
        args = tuple(self.field_value(scope, BY_NAME[t]) for _, t in st.fields)
        scope.vars[name] = Var(st.name)
        return [P.Assign(name, P.New(st.name, args))]

    def field_value(self, scope: Scope, t: Ty) -> P.Expr:
        e, et = self.expr(scope, _kind(t), 2)
        if not isinstance(et, Ty) or (t.is_int and et.is_float):
            e = P.Cast(t.name, e)
        return e

    def struct_named(self, name: str) -> P.Struct:
        return next(s for s in self.structs if s.name == name)

    def s_if_device(self, scope: Scope, ctx: Context, depth: int) -> list[P.Stmt]:
        form = self.r.choice(["device", "device_otherwise", "host", "host_otherwise"])
        candidates = self.writable(scope)
        nonlocals = tuple(self.r.sample(candidates, min(len(candidates), self.r.randint(0, 2))))
        inner = Scope({n: Var(v.ty, writable=n in nonlocals) for n, v in scope.vars.items()},
                      dict(scope.arrays))
        sub = Context(helper=ctx.helper, body=True, group=ctx.group)
        saved = self.budget
        self.budget = self.r.randint(1, 4)
        body = self.block(inner, sub, self.r.randint(1, 3), depth + 1)
        self.budget = saved
        for n in nonlocals:
            if n in inner.vars:
                scope.vars[n] = inner.vars[n]
        return [P.IfDevice(form, self.fresh("body"), tuple(body), nonlocals)]

    def s_approx(self, scope: Scope, ctx: Context, depth: int) -> list[P.Stmt]:
        """A division or square root, which Vulkan lets round: its result is compared
        within the ULP it allows."""
        r = self.r
        if r.random() < 0.5:
            func = "/"
            if r.random() < 0.5:
                divisor = P.Bin("+", P.Bin("&", self._expr(scope, "int", 1), P.Lit(255)),
                                P.Lit(1))
                args: tuple[P.Expr, ...] = (self.small_int(scope, 2), divisor)
            else:
                divisor = P.Bin("+", P.Bin("%", self.typed(scope, "float", 2), P.Lit(8.0)),
                                P.Lit(r.choice([0.5, 1.0, 3.0])))
                args = (self.typed(scope, "float", 2), divisor)
        else:
            func = "math.sqrt"
            args = (P.Call("abs", (self.typed(scope, "float", 2),)),)
        t = I.binary_type("/", *(expr_type(self, scope, a) for a in args)) if func == "/" \
            else expr_type(self, scope, args[0])
        if not isinstance(t, Ty) or not t.is_float:
            return []
        return [P.Approx(self.output(t.name), self.slot(t.name), func, args)]

    def reduction(self, k: int) -> None:
        """A sycl.reduction of the kernel: its reducer, target (one element) and
        combiner."""
        t = self.r.choice([t for t in self.types if not t.is_bool])
        ops = ["plus", "minimum", "maximum"] + (["multiplies", "bit_and", "bit_or", "bit_xor"]
                                                if t.is_int else [])
        self.reductions.append((f"r{k}", f"r{k}_{t.name}", self.r.choice(ops),
                                self.chance(0.5)))

    def s_reduce(self, scope: Scope, ctx: Context, depth: int) -> list[P.Stmt]:
        return [self.reduce(scope, ctx)]

    def reduce(self, scope: Scope, ctx: Context) -> P.Stmt:
        name, target, op, _ = self.r.choice(self.reductions)
        t = BY_NAME[target.split("_", 1)[1]]
        if t.is_float:
            value = P.Cast(t.name, self.small_int(scope, 2))
        elif op == "multiplies":  # small factors: the product keeps some low bits
            value = P.Bin("+", P.Bin("&", self.expr(scope, "int", 2)[0], P.Lit(1)), P.Lit(1))
        else:
            value = self.typed(scope, "int", 3)
        symbol = {"plus": "+", "multiplies": "*", "bit_and": "&", "bit_or": "|",
                  "bit_xor": "^"}.get(op)
        operator = symbol if symbol and not ctx.body and self.chance(0.6) else None
        return P.Reduce(name, value, operator)

    def s_atomic(self, scope: Scope, ctx: Context, depth: int) -> list[P.Stmt]:
        return [self.atomic(scope)]

    def atomic(self, scope: Scope) -> P.Stmt:
        kinds = [t for t in INTS if t.bits == 32 or (t.bits == 64 and self.caps.atomic64)]
        t = self.r.choice(kinds)
        method = self.r.choice(["fetch_add", "fetch_add", "fetch_sub", "fetch_min",
                                "fetch_max", "fetch_and", "fetch_or", "fetch_xor"])
        name = f"a_{t.name}"
        methods = self.atomics.setdefault(name, [])
        same = [k for k, m in enumerate(methods) if m == method]
        if same and self.chance(0.5):
            k = self.r.choice(same)
        else:
            k = len(methods)
            methods.append(method)
        value = self.expr(scope, "int", 3)[0]
        if method == "fetch_and":
            value = P.Unary("~", P.Bin("<<", P.Cast(t.name, P.Lit(1)),
                                       P.Bin("&", value, P.Lit(t.bits - 1))))
        return P.Atomic(name, k, method, value)

    # -- group operations -------------------------------------------------------------
    def group_op(self, scope: Scope) -> list[P.Stmt]:
        r = self.r
        sg = self.caps.sub_group_size
        target = self.fresh("g")
        func = r.choice(["reduce_over_group", "inclusive_scan_over_group",
                         "exclusive_scan_over_group", "group_broadcast", "select_from_group",
                         "shift_group_left", "shift_group_right", "permute_group_by_xor",
                         "any_of_group", "all_of_group", "none_of_group", "exchange",
                         "local_sum"])
        group = "sg" if func in ("select_from_group", "shift_group_left", "shift_group_right",
                                 "permute_group_by_xor") else \
            "wg" if func in ("exchange", "local_sum") else r.choice(["sg", "wg"])
        size = sg if group == "sg" else self.wg
        kind = "bool" if func.endswith("of_group") else \
            "int" if func == "local_sum" else r.choice(["int", "int", "float"])
        value, vt = self.expr(scope, kind, 3)
        if func == "local_sum":  # work-group memory atomics: 32-bit integers
            vt = r.choice([t for t in INTS if t.bits == 32])
            value = P.Cast(vt.name, value)
        elif isinstance(vt, I.Py) or (kind != "bool" and (vt.is_bool or r.random() < 0.5)):
            vt = r.choice([t for t in self.types if _kind(t) == kind and t.bits >= 32] or
                          [I32])
            value = P.Cast(vt.name, value)
        op = arg = None
        init = False
        out: list[P.Stmt] = []
        if func.endswith("_over_group"):
            ops = ["plus", "minimum", "maximum", "multiplies"]
            if vt.is_int:
                ops += ["bit_and", "bit_or", "bit_xor"]
            op = r.choice(ops)
            if op == "multiplies" and vt.is_float:
                value = P.Cast(vt.name, P.Bin("%", P.Cast("int32", value), P.Lit(3)))
            if r.random() < 0.25:
                init = True
                arg = P.Cast(vt.name, P.Lit(r.randint(0, 5)))
        elif func in ("select_from_group", "exchange"):
            arg = P.Bin("&", self.expr(scope, "int", 2)[0], P.Lit(size - 1))
        elif func != "local_sum" and not func.endswith("of_group"):
            arg = P.Lit(r.randrange(size))  # an id, a mask or a delta within the group
        if func in ("exchange", "local_sum"):
            self.local.append((f"{target}_tile", vt.name, self.wg))
        out.append(P.GroupAssign(target, func, group, value, op, arg, init))
        if func in ("shift_group_left", "shift_group_right"):
            lane = P.Query("sg_lane")
            d = arg.value  # type: ignore[union-attr]
            inside = P.Compare(("<",), (P.Bin("+", lane, P.Lit(d)), P.Query("sg_size"))) \
                if func == "shift_group_left" else P.Compare((">=",), (lane, P.Lit(d)))
            fallback, _ = self.expr(scope, kind, 1)
            guarded = self.fresh("v")
            out.append(P.Assign(guarded, P.IfExp(inside, P.Var(target), fallback)))
            scope.vars[guarded] = Var(vt)
        else:
            scope.vars[target] = Var(BOOL if kind == "bool" else vt)
        return out

    def final_stores(self, scope: Scope) -> list[P.Stmt]:
        out: list[P.Stmt] = []
        for name, v in scope.vars.items():
            if isinstance(v.ty, str):
                out.append(P.Store(self.output(v.ty), self.slot(v.ty), P.Var(name)))
            else:
                out.append(P.Store(self.output(v.ty.name), self.slot(v.ty.name), P.Var(name)))
        return out

    # -- expressions ------------------------------------------------------------------
    def condition(self, scope: Scope) -> P.Expr:
        e, t = self.expr(scope, "bool", 3)
        if isinstance(t, I.Py) or I._constant(e):
            return self.typed(scope, "bool", 1)
        return e

    def expr(self, scope: Scope, kind: str, depth: int) -> tuple[P.Expr, Any]:
        """An expression of a kind (int, float, bool) and its type."""
        e = self._expr(scope, kind, depth)
        return e, expr_type(self, scope, e)

    def typed(self, scope: Scope, kind: str, depth: int) -> P.Expr:
        """An expression of the kind that is not a compile-time constant."""
        e = self._expr(scope, kind, depth)
        if isinstance(expr_type(self, scope, e), I.Py) or I._constant(e):
            if kind == "bool":
                names = [n for n, v in scope.vars.items() if isinstance(v.ty, Ty)]
                left = P.Var(self.r.choice(names)) if names else P.Lit(1)
                return P.Compare((self.r.choice(["<", "==", "!="]),), (left, e)) \
                    if names else P.Compare(("<",), (P.Cast("int32", P.Lit(1)), e))
            t = self.r.choice([t for t in self.types if _kind(t) == kind])
            return P.Cast(t.name, e)
        return e

    def _expr(self, scope: Scope, kind: str, depth: int) -> P.Expr:
        r = self.r
        if depth <= 0 or r.random() < 0.25:
            return self.leaf(scope, kind)
        d = depth - 1
        if kind == "bool":
            pick = r.random()
            if pick < 0.55:
                k = r.choice(["int", "int", "float", "bool"])
                ops = ["<", "<=", ">", ">=", "==", "!="]
                if r.random() < 0.15:
                    return P.Compare((r.choice(ops), r.choice(ops)),
                                     (self._expr(scope, k, d), self.typed(scope, k, d),
                                      self._expr(scope, k, d)))
                other = self.small_int(scope, d) if k == "float" and self.chance(0.5) else \
                    self._expr(scope, k, d)
                return P.Compare((r.choice(ops),), (self.typed(scope, k, d), other))
            if pick < 0.7:
                return P.Unary("not", self._expr(scope, r.choice(["bool", "int"]), d))
            if pick < 0.85:
                return P.BoolOp(r.choice(["and", "or"]), (self.typed(scope, "bool", d), *(
                    self._expr(scope, "bool", d) for _ in range(r.randint(1, 2)))))
            if pick < 0.93:
                return P.Cast("bool", self._expr(scope, r.choice(["int", "float"]), d),
                              builtin=r.random() < 0.5)
            return P.IfExp(self.typed(scope, "bool", d), self._expr(scope, "bool", d),
                           self._expr(scope, "bool", d))
        if kind == "float":
            return self.float_expr(scope, d)
        return self.int_expr(scope, d)

    def int_expr(self, scope: Scope, d: int) -> P.Expr:
        r = self.r
        pick = r.random()
        if pick < 0.3:
            return P.Bin(r.choice(["+", "-", "*"]), self.typed(scope, "int", d),
                         self._expr(scope, "int", d))
        if pick < 0.42:
            return P.Bin(r.choice(["&", "|", "^"]), self._expr(scope, "int", d),
                         self._expr(scope, r.choice(["int", "int", "bool"]), d))
        if pick < 0.52:
            left = self._expr(scope, "int", d)
            lt = expr_type(self, scope, left)
            bits = int_promote(lt).bits if isinstance(lt, Ty) else 32
            return P.Bin(r.choice(["<<", ">>"]), left, self.shift_count(scope, Ty("i", bits)))
        if pick < 0.64:
            return P.Bin(r.choice(["//", "%"]), self._expr(scope, "int", d),
                         self.int_divisor(scope))
        if pick < 0.67:
            return P.Unary(r.choice(["-", "~", "+"]), self._expr(scope, "int", d))
        if pick < 0.7:
            exponent = P.Lit(r.randint(0, 5)) if r.random() < 0.6 else \
                P.Bin("&", self._expr(scope, "int", d), P.Lit(7))
            return P.Bin("**", self.typed(scope, "int", d), exponent)
        if pick < 0.75:
            return P.Call("abs", (self.typed(scope, "int", d),))
        if pick < 0.81:
            return P.Call(r.choice(["min", "max"]), tuple(
                self._expr(scope, "int", d) for _ in range(r.choice([2, 2, 3]))))
        if pick < 0.86:
            return P.IfExp(self.typed(scope, "bool", d), self._expr(scope, "int", d),
                           self._expr(scope, "int", d))
        if pick < 0.9:
            return P.BoolOp(r.choice(["and", "or"]), (self.typed(scope, "int", d),
                                                      self._expr(scope, "int", d)))
        if pick < 0.93:
            t = r.choice([t for t in self.types if t.is_int])
            source = r.choice(["int", "float", "bool"])
            operand = self.fitting_float(scope, d) if source == "float" else \
                self._expr(scope, source, d)
            return P.Cast(t.name, operand)
        if pick < 0.96:
            operand = self.fitting_float(scope, d) if self.chance(0.5) else \
                self._expr(scope, "int", d)
            return P.Cast("int", operand, builtin=True)
        call = self.helper_call(scope, "int", d)
        return call if call is not None else self.leaf(scope, "int")

    def small_int(self, scope: Scope, d: int) -> P.Expr:
        """An integer expression of a few bits, for float code (where a wide integer
        would not convert exactly)."""
        e = self._expr(scope, "int", d)
        pick = self.r.random()
        if pick < 0.4:
            return P.Bin("%", e, P.Lit(self.r.choice([3, 16, 64, 1000])))
        if pick < 0.7:
            return P.Cast("int8", e)
        return P.Bin("-", P.Cast("int32", P.Bin("&", e, P.Lit(255))), P.Lit(100))

    def float_operand(self, scope: Scope, d: int) -> P.Expr:
        return self.small_int(scope, d) if self.chance(0.3) else self._expr(scope, "float", d)

    def float_expr(self, scope: Scope, d: int) -> P.Expr:
        r = self.r
        pick = r.random()
        if pick < 0.35:
            return P.Bin(r.choice(["+", "-", "*"]), self.typed(scope, "float", d),
                         self.float_operand(scope, d))
        if pick < 0.47:
            return P.Bin(r.choice(["/", "//", "%"]), self._expr(scope, "float", d),
                         self.float_divisor())
        if pick < 0.52:
            return P.Bin("/", self.small_int(scope, d), self.float_divisor(as_int=True))
        if pick < 0.56:
            return P.Unary(r.choice(["-", "+"]), self._expr(scope, "float", d))
        if pick < 0.58:
            return P.Bin("**", self.typed(scope, "float", d), P.Lit(r.randint(0, 3)))
        if pick < 0.64:
            return P.Call(r.choice(["abs", "math.floor", "math.ceil", "math.trunc",
                                    "math.fabs"]), (self.typed(scope, "float", d),))
        if pick < 0.7:
            return P.Call(r.choice(["min", "max"]), (self._expr(scope, "float", d),
                                                     self.float_operand(scope, d)))
        if pick < 0.77:
            return P.IfExp(self.typed(scope, "bool", d), self._expr(scope, "float", d),
                           self.float_operand(scope, d))
        if pick < 0.88:
            t = r.choice([t for t in self.types if t.is_float])
            source = r.choice(["float", "int", "bool"])
            operand = self.small_int(scope, d) if source == "int" and self.chance(0.8) else \
                self._expr(scope, source, d)
            return P.Cast(t.name, operand)
        if pick < 0.93:
            operand = self.small_int(scope, d) if self.chance(0.5) else \
                self._expr(scope, "float", d)
            return P.Cast("float", operand, builtin=True)
        call = self.helper_call(scope, "float", d)
        return call if call is not None else self.leaf(scope, "float")

    def fitting_float(self, scope: Scope, d: int) -> P.Expr:
        """A float expression whose value converts to any integer type, mostly: in
        [0, 64) (the conversion of one out of range is undefined)."""
        e = self._expr(scope, "float", d)
        return P.Bin("%", e, P.Lit(64.0)) if self.chance(0.8) else e

    def helper_call(self, scope: Scope, kind: str, d: int) -> P.Expr | None:
        fits = [(fn, kinds) for fn, kinds, ret in self.helpers if ret == kind or
                (kind == "int" and ret == "bool")]
        if not fits:
            return None
        fn, kinds = self.r.choice(fits)
        args = []
        for k in kinds:
            if k in ("int", "float", "bool"):
                e, t = self.expr(scope, k, max(d, 1))
                if isinstance(t, I.Py) or isinstance(e, P.Query):
                    e = P.Cast(self.r.choice([t for t in self.types if _kind(t) == k]).name, e)
                args.append(e)
            else:
                args.append(self.struct_value(scope, k))
        return P.Call(fn.name, tuple(args))

    def struct_value(self, scope: Scope, sname: str) -> P.Expr:
        have = [n for n, v in scope.vars.items() if v.ty == sname]
        if have and self.chance(0.7):
            return P.Var(self.r.choice(have))
        st = self.struct_named(sname)
        return P.New(sname, tuple(self.field_value(scope, BY_NAME[t]) for _, t in st.fields))

    def leaf(self, scope: Scope, kind: str) -> P.Expr:
        r = self.r
        names = [n for n, v in scope.vars.items() if isinstance(v.ty, Ty) and
                 (_kind(v.ty) == kind or (kind == "int" and v.ty.is_bool))]
        pick = r.random()
        if names and pick < 0.6:
            return P.Var(r.choice(names))
        fields = [(n, f) for n, v in scope.vars.items() if isinstance(v.ty, str)
                  for f, t in self.struct_named(v.ty).fields if _kind(BY_NAME[t]) == kind]
        if fields and pick < 0.68:
            n, f = r.choice(fields)
            return P.Field(P.Var(n), f)
        arrays = [(n, t, length) for n, (t, length) in scope.arrays.items() if _kind(t) == kind]
        if arrays and pick < 0.76:
            n, _, length = r.choice(arrays)
            return P.Index(n, self.array_index_leaf(scope, length))
        if kind == "bool":
            return P.Lit(r.random() < 0.5) if pick < 0.85 or self.in_helper else \
                P.Compare(("<",), (P.Query("id"), P.Lit(r.randint(0, self.n))))
        if kind == "float":
            if pick < 0.9:
                return P.Lit(float(r.randint(-15, 15)) * 2.0 ** r.randint(-3, 3))
            t = r.choice([t for t in self.types if t.is_float])
            return P.Cast(t.name, P.Lit(float(r.randint(-9, 9))))
        if self.kind == "group" and pick < 0.8 and not self.in_helper:
            return P.Query(r.choice(["local_id", "group_id", "sg_lane", "sg_id", "id"]))
        if pick < 0.85 and not self.in_helper:
            return P.Query("id")
        if pick < 0.95:
            return P.Lit(r.choice([0, 1, 2, 3, 5, 7, -1, -2, -7, 100, 255, -128, 65535,
                                   2**31 - 1, -2**31, 2**32 - 1, 2**40 + 3]))
        t = r.choice([t for t in self.types if t.is_int])
        return P.Cast(t.name, P.Lit(r.randint(-9, 9)))

    def array_index_leaf(self, scope: Scope, length: int) -> P.Expr:
        names = [n for n, v in scope.vars.items() if isinstance(v.ty, Ty) and v.ty.is_int]
        if names and self.chance(0.6):
            return P.Bin("&", P.Var(self.r.choice(names)), P.Lit(length - 1))
        return P.Lit(self.r.randrange(length))

    def shift_count(self, scope: Scope, t: Ty) -> P.Expr:
        if self.chance(0.4):
            return P.Lit(self.r.randrange(t.bits))
        return P.Bin("&", self._expr(scope, "int", 1), P.Lit(t.bits - 1))

    def int_divisor(self, scope: Scope) -> P.Expr:
        """Never zero, never -1: (e & m) + 1, or -((e & m) + 2), or a literal."""
        r = self.r
        pick = r.random()
        if pick < 0.3:
            return P.Lit(r.choice([1, 2, 3, 5, 7, 16, -2, -3, -5, -16, 1000]))
        m = r.choice([3, 7, 15, 255])
        masked = P.Bin("&", self._expr(scope, "int", 1), P.Lit(m))
        if pick < 0.65:
            return P.Bin("+", masked, P.Lit(1))
        return P.Unary("-", P.Bin("+", masked, P.Lit(2)))

    def float_divisor(self, as_int: bool = False) -> P.Expr:
        r = self.r
        v = r.choice([0.25, 0.5, 2.0, 4.0, 8.0, -0.5, -2.0, -4.0])
        if as_int:
            return P.Lit(r.choice([1, 2, 4, 8, -2, -4]))
        if r.random() < 0.2:
            t = r.choice([t for t in self.types if t.is_float])
            return P.Cast(t.name, P.Lit(v))
        return P.Lit(v)


def _kind(t: Ty) -> str:
    return "bool" if t.is_bool else "float" if t.is_float else "int"


def expr_type(g: Generator, scope: Scope, e: P.Expr) -> Any:
    """The type of an expression as the generator sees it (variables at the types it
    gave them; they may widen later, never to another kind)."""
    if isinstance(e, P.Lit):
        return I.Py(e.value)
    if isinstance(e, P.Var):
        v = scope.vars.get(e.name)
        return v.ty if v is not None and isinstance(v.ty, Ty) else I32
    if isinstance(e, P.Query):
        return I32
    if isinstance(e, P.Bin):
        try:
            return I.binary_type(e.op, expr_type(g, scope, e.left),
                                 expr_type(g, scope, e.right))
        except I.Invalid:
            return I32
    if isinstance(e, P.Unary):
        t = expr_type(g, scope, e.operand)
        if isinstance(t, I.Py):
            try:
                return I.Py(I._fold_unary(e.op, t.obj))
            except TypeError:
                return I32
        return BOOL if e.op == "not" else t if t.is_float else int_promote(t)
    if isinstance(e, P.Compare):
        ts = [expr_type(g, scope, x) for x in e.operands]
        if all(isinstance(t, I.Py) for t in ts):
            return I.Py(I._fold_compare(e.ops, [t.obj for t in ts]))
        return BOOL
    if isinstance(e, P.Cast):
        if e.builtin:
            t = expr_type(g, scope, e.operand)
            if isinstance(t, I.Py):
                return I.Py({"int": int, "float": float, "bool": bool}[e.to](t.obj))
            return {"int": I32, "float": F32, "bool": BOOL}[e.to]
        return BY_NAME[e.to]
    if isinstance(e, P.Index):
        arr = scope.arrays.get(e.base)
        return arr[0] if arr else I32
    if isinstance(e, P.Field):
        base = e.base
        sname = scope.vars[base.name].ty if isinstance(base, P.Var) else None
        if sname is None:
            return I32
        return BY_NAME[dict(g.struct_named(sname).fields)[e.name]]
    ts = []
    if isinstance(e, P.BoolOp):
        ts = [expr_type(g, scope, v) for v in e.values]
    elif isinstance(e, P.IfExp):
        ts = [expr_type(g, scope, e.body), expr_type(g, scope, e.orelse)]
    elif isinstance(e, P.Call) and (e.func in ("min", "max", "abs") or
                                    e.func.startswith("math.")):
        ts = [expr_type(g, scope, a) for a in e.args]
    elif isinstance(e, P.Call):
        ret = next(r for fn, _, r in g.helpers if fn.name == e.func)
        return {"int": I32, "float": F32, "bool": BOOL}[ret]
    typed = [t for t in ts if isinstance(t, Ty)]
    if not typed:
        return ts[0] if ts else I32
    t = typed[0]
    for u in typed[1:]:
        t = promote(t, u) if t != u else t
    return t


def generate(seed: int, index: int, caps: Caps, kind: str | None = None) -> P.Program:
    """Program number `index` of the campaign with `seed`."""
    rng = random.Random(f"vksycl-fuzz:{seed}:{index}")
    if kind is None:
        kind = rng.choices(["scalar", "atomic", "group", "reduction"], [6, 2, 2, 1])[0]
    return Generator(rng, f"p{index}", kind, caps).program()

