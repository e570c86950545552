"""The host's answer: a generated program run in Python with the semantics vksycl
documents, written without its compiler.

- Types follow C++'s usual arithmetic conversions; a Python literal is int32 or float32,
  or takes the other operand's type when that is of its kind (an integer type of 32 bits
  or more that holds it, any float type); operations on literals alone fold in Python.
- Integers wrap at their width; `//` and `%` are Python's (floor), `/` is true division
  (to float32, or float64 when an operand is a 64-bit integer); comparisons of integers
  compare their mathematical values, whatever their signedness.
- A variable's type is set by its first assignment and widens (C++ promotion) to take
  any later assignment of another type; struct fields keep their declared types.

Where SPIR-V or C++ leave a result undefined (division by zero, shifts by the width or
more, float to integer conversions out of range, `abs` of the most negative value) or
Vulkan lets a float operation round (any result that is not exact), the work-item's
result is `Undefined` and not compared. Sub-groups are consecutive work-items of
`sub_group_size`."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from itertools import pairwise
from typing import Any

import numpy as np

from . import program as P
from .scalars import (
    BOOL,
    BY_NAME,
    F32,
    F64,
    I32,
    I64,
    MANTISSA,
    MAX,
    MIN_EXP,
    Ty,
    float_holds,
    int_promote,
    literal_type,
    promote,
    weak_want,
    wrap,
)

STEP_LIMIT = 20000  # statements one work-item may run
MIN_NORMAL = {bits: 2.0 ** e for bits, e in MIN_EXP.items()}


class Undefined(Exception):
    """The work-item's result is not defined (or not exact); it is not compared."""


class Invalid(Exception):
    """Not a program the generator means to make: vksycl would refuse it, or its meaning
    is outside what this model covers."""


class Py:
    """A compile-time value: Python literals and what folds from them."""

    __slots__ = ("obj",)

    def __init__(self, obj: Any) -> None:
        self.obj = obj

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Py) and type(other.obj) is type(self.obj) and \
            other.obj == self.obj

    def __hash__(self) -> int:
        return hash((type(self.obj), self.obj))

    def __repr__(self) -> str:
        return f"Py({self.obj!r})"


@dataclass(frozen=True)
class StructT:
    name: str


@dataclass(frozen=True)
class ArrayT:
    elem: Any  # Ty or StructT
    length: int
    space: str  # global, private, local


T = Any  # Ty | Py | StructT | ArrayT
POISON = object()  # a value SYCL leaves undefined (a shift past the sub-group's end)


class _Restart(Exception):
    pass


class _Signal(Exception):
    def __init__(self, kind: str, value: Any = None) -> None:
        self.kind = kind
        self.value = value


# -- values ---------------------------------------------------------------------------------

def _truth(t: T, v: Any) -> bool:
    if isinstance(t, Py):
        return bool(t.obj)
    return v != 0 if not t.is_bool else bool(v)


def _float(t: Ty, x: Fraction | int) -> float:
    """`x` in float type `t`, which must hold it exactly."""
    if not float_holds(t, x):
        raise Undefined(f"{x} is not exact in {t!r}")
    return float(x)


def _finite(x: float) -> float:
    if not math.isfinite(x):
        raise Undefined("arithmetic on infinity")
    return x


def convert(v: Any, src: Ty, to: Ty) -> Any:
    """A typed value converted as device code converts it."""
    if src == to:
        return v
    if to.is_bool:
        return v != 0
    if src.is_bool:
        v = int(v)
        return float(v) if to.is_float else v
    if src.is_float and not math.isfinite(v):
        if to.is_float:
            return v  # a group's identity: infinity
        raise Undefined(f"{v} converted to {to!r}")
    if src.is_float and to.is_float:
        return _float(to, Fraction(v))
    if src.is_float:
        t = math.trunc(v)
        if not to.lo <= t <= to.hi:
            raise Undefined(f"{v} does not fit {to!r}")
        return t
    if to.is_float:
        return _float(to, v)
    return wrap(v, to)


def literal(obj: Any, want: Ty | None) -> tuple[Ty, Any]:
    """A Python literal as the typed value device code makes of it."""
    t = literal_type(obj, want)
    if isinstance(obj, bool):
        return t, obj
    if isinstance(obj, int):
        if not t.lo <= obj <= t.hi:
            raise Invalid(f"the literal {obj} does not fit {t!r}")
        return t, obj
    if not math.isfinite(obj):
        raise Invalid("an infinite literal")
    return t, _float(t, Fraction(obj))


def weak_pair(a: tuple[T, Any], b: tuple[T, Any]) -> tuple[tuple[Ty, Any], tuple[Ty, Any]]:
    ta, tb = a[0], b[0]
    if isinstance(ta, Py) and not isinstance(tb, Py):
        return literal(ta.obj, weak_want(ta.obj, tb)), b
    if isinstance(tb, Py) and not isinstance(ta, Py):
        return a, literal(tb.obj, weak_want(tb.obj, ta))
    if isinstance(ta, Py):
        return literal(ta.obj, None), literal(tb.obj, None)
    return a, b


def _need_scalar(*ts: T) -> None:
    for t in ts:
        if not isinstance(t, Ty | Py):
            raise Invalid(f"{t} is not a scalar")


def binary_type(op: str, ta: T, tb: T) -> T:
    """The type of `a op b` (a Py for operands known at compile time)."""
    _need_scalar(ta, tb)
    if isinstance(ta, Py) and isinstance(tb, Py):
        return Py(_fold(op, ta.obj, tb.obj))
    if op == "**" and _small_exponent(tb):
        t = literal(ta.obj, None)[0] if isinstance(ta, Py) else ta
        return t if t.is_float else int_promote(t)
    (ta, _), (tb, _) = weak_pair((ta, _sample(ta)), (tb, _sample(tb)))
    if op == "**":
        if ta.is_float or tb.is_float:
            raise Invalid("a float power with an exponent not known when compiling")
        return promote(ta, tb)
    if op == "/":
        if not ta.is_float and not tb.is_float:
            return F64 if 64 in (ta.bits, tb.bits) else F32
        return promote(ta, tb)
    if op in ("&", "|", "^"):
        if ta.is_bool and tb.is_bool:
            return BOOL
        if ta.is_float or tb.is_float:
            raise Invalid("bitwise operators need integers")
        return promote(ta, tb)
    if op in ("<<", ">>"):
        if ta.is_float or tb.is_float:
            raise Invalid("shifts need integers")
        return int_promote(ta)
    return promote(ta, tb)


def _small_exponent(t: T) -> bool:
    """A literal exponent the compiler multiplies out."""
    return isinstance(t, Py) and type(t.obj) is int and 0 <= t.obj <= 64


def _sample(t: T) -> Any:
    return t.obj if isinstance(t, Py) else 0


def _fold(op: str, a: Any, b: Any) -> Any:
    try:
        if op == "**" and (not isinstance(b, int) or not 0 <= b <= 64):
            raise Invalid("a constant power outside the model")
        r = {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "/": lambda: a / b,
             "**": lambda: a**b,
             "//": lambda: a // b, "%": lambda: a % b, "&": lambda: a & b,
             "|": lambda: a | b, "^": lambda: a ^ b, "<<": lambda: a << b,
             ">>": lambda: a >> b}[op]()
    except (ArithmeticError, TypeError, ValueError) as ex:
        raise Invalid(f"constant {a!r} {op} {b!r}: {ex}") from None
    if isinstance(r, int) and not -(2**63) <= r < 2**64:
        raise Invalid("a constant wider than 64 bits")
    return r


def binary(op: str, a: tuple[T, Any], b: tuple[T, Any], t: T) -> Any:
    """The value of `a op b` of type `t` (from `binary_type`)."""
    if isinstance(t, Py):
        return t.obj
    if op == "**":
        return _power(a, b, t)
    (ta, va), (tb, vb) = weak_pair(a, b)
    if op == "/":
        x, y = convert(va, ta, t), convert(vb, tb, t)
        if not (math.isfinite(x) and math.isfinite(y)):
            raise Undefined("arithmetic on infinity")
        x, y = Fraction(x), Fraction(y)
        _pow2_divisor(y)
        return _float(t, x / y)
    if op in ("<<", ">>"):
        count = vb if not tb.is_bool else int(vb)
        if not 0 <= count < t.bits:
            raise Undefined(f"shift by {count}")
        x = convert(va, ta, t)
        if op == "<<":
            return wrap(x << count, t)
        return x >> count  # Python's >> of the value: arithmetic for signed types
    if t.is_bool:
        x, y = bool(va), bool(vb)
        return {"&": x and y, "|": x or y, "^": x != y}[op]
    if t.is_float and t.bits == 16 and op in ("//", "%"):
        return _float(t, Fraction(binary(op, (F32, convert(va, ta, F32)),
                                          (F32, convert(vb, tb, F32)), F32)))
    x, y = convert(va, ta, t), convert(vb, tb, t)
    if t.is_float:
        if not (math.isfinite(x) and math.isfinite(y)):
            raise Undefined("arithmetic on infinity")
        fx, fy = Fraction(x), Fraction(y)
        if op in ("//", "%"):
            if fy == 0:
                raise Undefined("float division by zero")
            _pow2_divisor(fy)
            q = math.floor(fx / fy)
            return _float(t, Fraction(q) if op == "//" else fx - fy * q)
        r = {"+": fx + fy, "-": fx - fy, "*": fx * fy}[op]
        return _float(t, r)
    if op in ("//", "%"):
        if y == 0:
            raise Undefined("integer division by zero")
        if t.is_signed and x == t.lo and y == -1:
            raise Undefined("the most negative value divided by -1")
        return wrap(x // y, t) if op == "//" else x % y
    r = {"+": x + y, "-": x - y, "*": x * y, "&": x & y, "|": x | y, "^": x ^ y}[op]
    return wrap(r, t)


def _power(a: tuple[T, Any], b: tuple[T, Any], t: Ty) -> Any:
    """`a ** b`: repeated products (wrapping for integers; exact, or undefined, for
    floats); a negative integer exponent, whose Python result is a float, is left
    undefined."""
    (ta, va), (tb, vb) = a, b
    if isinstance(ta, Py):
        ta, va = literal(ta.obj, None if _small_exponent(tb) else weak_want(ta.obj, tb))
    k = int(vb)
    if k < 0:
        raise Undefined("a negative integer exponent")
    x = convert(va, ta, t)
    if t.is_float:
        return _float(t, Fraction(_finite(x)) ** k)
    return wrap(pow(x, k, 1 << t.bits), t)


def _pow2_divisor(y: Fraction) -> None:
    """Vulkan lets OpFDiv round by 2.5 ULP, except (in practice) by a power of two."""
    n, d = abs(y.numerator), y.denominator
    if y == 0:
        raise Undefined("division by zero")
    if n & (n - 1) or d & (d - 1):
        raise Undefined("division by a value that is not a power of two may round")


def compare(op: str, a: tuple[T, Any], b: tuple[T, Any]) -> bool:
    """`a op b`: integers by their mathematical values, floats after C++ conversions (an
    integer a float does not hold may round either way: defined when both ways agree)."""
    (ta, va), (tb, vb) = weak_pair(a, b)
    if ta.is_float or tb.is_float:
        t = promote(ta, tb)
        results = {_order(op, x, y) for x in _rounded(va, ta, t) for y in _rounded(vb, tb, t)}
        if len(results) != 1:
            raise Undefined(f"a comparison that depends on how {va} or {vb} rounds")
        return results.pop()
    return _order(op, int(va), int(vb))


def _order(op: str, x: Any, y: Any) -> bool:
    return {"<": x < y, "<=": x <= y, ">": x > y, ">=": x >= y, "==": x == y,
            "!=": x != y}[op]


def _rounded(v: Any, src: Ty, t: Ty) -> tuple[float, ...]:
    """The values `v` may convert to in float type `t`: itself, or the two neighbours of
    an integer it does not hold (a conversion rounds to nearest or towards zero)."""
    if not src.is_int or float_holds(t, v):
        return (convert(v, src, t),)
    near = t.dtype.type(v)
    if not math.isfinite(float(near)):
        raise Undefined(f"{v} overflows {t!r}")
    other = np.nextafter(near, t.dtype.type(math.inf if near < v else -math.inf))
    if not math.isfinite(float(other)):
        raise Undefined(f"{v} overflows {t!r}")
    return (float(near), float(other))


# -- typing ---------------------------------------------------------------------------------

@dataclass
class Scope:
    """Names in a function body (or an inlined if_device body) and the variable key each
    names; `owner` distinguishes a body's own names from the enclosing function's."""

    names: dict[str, Any]
    owner: str


class Instance:
    """One function lowered for one signature: the types of its variables and nodes, and
    its return type (as `DeviceCalls.finish_returns` documents it)."""

    def __init__(self, interp: Interpreter, fn: P.Function | None, params: list[tuple[str, T]],
                 body: tuple[P.Stmt, ...]) -> None:
        self.interp = interp
        self.fn = fn
        self.params = params
        self.body = body
        self.hints: dict[Any, T] = {}
        for _ in range(64):
            self.types: dict[Any, T] = {}
            self.node_types: dict[int, T] = {}
            self.returns: list[T] = []
            self.scope = Scope({}, "")
            try:
                for name, t in params:
                    self.bind(self.scope, name, t)
                self.walk(body, self.scope)
            except _Restart:
                continue
            break
        else:
            raise Invalid("variable types do not settle")
        self.ret = self.return_type()

    def return_type(self) -> T:
        if self.fn is None:
            return None
        if not self.returns or any(r is None for r in self.returns):
            raise Invalid(f"{self.fn.name} does not return a value on every path")
        typed = [r for r in self.returns if not isinstance(r, Py)]
        if any(isinstance(r, StructT) for r in typed):
            raise Invalid("helpers return scalars")
        if not typed:
            return literal_type(self.returns[0].obj)
        t = typed[0]
        for r in typed[1:]:
            if r != t:
                t = BOOL if t.is_bool and r.is_bool else promote(t, r)
        for r in self.returns:
            if isinstance(r, Py):
                literal(r.obj, t if not t.is_bool else None)  # the compiler checks it fits
        return t

    # -- variables --------------------------------------------------------------------
    def key(self, scope: Scope, name: str) -> Any:
        k = scope.names.get(name)
        if k is None:
            k = scope.names[name] = (scope.owner, name)
        return k

    def bind(self, scope: Scope, name: str, t: T) -> None:
        if isinstance(t, Py):
            raise Invalid("a variable assigned a compile-time constant")
        k = self.key(scope, name)
        slot = self.types.get(k)
        if slot is None:
            self.types[k] = self.hints.get(k, t)
            return
        if slot == t:
            return
        if isinstance(slot, StructT | ArrayT) or isinstance(t, StructT | ArrayT):
            raise Invalid(f"{name} holds values of two kinds")
        wide = BOOL if slot.is_bool and t.is_bool else promote(slot, t)
        if slot.is_bool and t.is_int:
            wide = t
        if wide != slot and self.hints.get(k) != wide:
            self.hints[k] = wide
            raise _Restart

    def lookup(self, scope: Scope, name: str) -> T:
        k = scope.names.get(name)
        if k is None or k not in self.types:
            if self.fn is not None or name not in self.interp.global_types:
                raise Invalid(f"{name} is not defined")
            return self.interp.global_types[name]
        return self.types[k]

    # -- statements -------------------------------------------------------------------
    def walk(self, stmts: tuple[P.Stmt, ...], scope: Scope) -> None:
        for s in stmts:
            self.stmt(s, scope)
            if isinstance(s, P.Break | P.Continue | P.Return):
                return

    def stmt(self, s: P.Stmt, scope: Scope) -> None:
        if isinstance(s, P.Assign):
            self.bind(scope, s.target, self.expr(s.value, scope))
        elif isinstance(s, P.TupleAssign):
            types = self.node_types[id(s)] = self.tuple_types(s, scope)
            for name, t in zip(s.targets, types, strict=True):
                self.bind(scope, name, t)
        elif isinstance(s, P.AugAssign):
            t = binary_type(s.op, self.lookup(scope, s.target), self.expr(s.value, scope))
            self.node_types[id(s)] = t
            self.bind(scope, s.target, t)
        elif isinstance(s, P.SetField):
            base = self.lookup(scope, s.base)
            self.stored(self.field_type(base, s.name), self.expr(s.value, scope))
        elif isinstance(s, P.Store):
            base = self.lookup(scope, s.base)
            if not isinstance(base, ArrayT):
                raise Invalid(f"{s.base} is not memory")
            self.index(self.expr(s.index, scope))
            elem = base.elem if s.field is None else self.field_type(base.elem, s.field)
            value = self.expr(s.value, scope)
            if isinstance(elem, StructT):
                if value != elem or s.op:
                    raise Invalid("a struct element takes a value of its struct")
            elif s.op:
                self.node_types[id(s)] = binary_type(s.op, elem, self.scalar(value))
            else:
                self.stored(elem, value)
        elif isinstance(s, P.If):
            self.condition(s.test, scope)
            self.walk(s.body, scope)
            self.walk(s.orelse, scope)
        elif isinstance(s, P.While):
            if self.lookup(scope, s.counter) != I32:
                raise Invalid("a while counter is an int32 variable")
            self.condition(s.test, scope)
            self.walk(s.body, scope)
        elif isinstance(s, P.For):
            t = self.node_types[id(s)] = range_type([self.expr(a, scope) for a in s.args])
            self.bind(scope, s.var, t)
            self.walk(s.body, scope)
        elif isinstance(s, P.Return):
            if s.value is not None and (self.fn is None or scope.owner):
                raise Invalid("a kernel or an if_device body returns nothing")
            if not scope.owner:
                self.returns.append(None if s.value is None else self.expr(s.value, scope))
        elif isinstance(s, P.Array):
            self.types[self.key(scope, s.name)] = ArrayT(BY_NAME[s.ty], s.length, "private")
        elif isinstance(s, P.IfDevice):
            if s.form in ("device", "device_otherwise", "host_otherwise"):
                self.walk(s.device, self.body_scope(s, scope))
        elif isinstance(s, P.Atomic):
            base = self.lookup(scope, s.base)
            if not isinstance(base, ArrayT) or base.space == "private":
                raise Invalid("atomics on global or work-group memory")
            self.stored(base.elem, self.expr(s.value, scope))
        elif isinstance(s, P.GroupAssign):
            self.bind(scope, s.target, self.group_type(s, scope))
        elif isinstance(s, P.Reduce):
            target = self.interp.reducers.get(s.reducer)
            if target is None or self.fn is not None:
                raise Invalid(f"{s.reducer} is no reducer of the kernel")
            if s.operator and scope.owner:  # Python: `r += v` makes r the body's own name
                raise Invalid(f"{s.reducer} {s.operator}= in a nested function")
            op = target[1]
            symbol = {"plus": "+", "multiplies": "*", "bit_and": "&", "bit_or": "|",
                      "bit_xor": "^"}.get(op)
            if s.operator is not None and s.operator != symbol:
                raise Invalid(f"a {op} reducer has no {s.operator}=")
            self.stored(self.interp.global_types[target[0]].elem, self.expr(s.value, scope))
        elif isinstance(s, P.Approx):
            base = self.lookup(scope, s.base)
            self.index(self.expr(s.index, scope))
            ts = [self.expr(a, scope) for a in s.args]
            t = binary_type("/", *ts) if s.func == "/" else self.scalar(ts[0])
            if not isinstance(base, ArrayT) or not isinstance(t, Ty) or not t.is_float or \
                    not base.elem.is_float or base.elem.bits < t.bits:
                raise Invalid("an approximate result goes to memory of a float type as wide")
            self.node_types[id(s)] = t
        elif not isinstance(s, P.Break | P.Continue):
            raise Invalid(f"unknown statement {s}")

    def tuple_types(self, s: P.TupleAssign, scope: Scope) -> list[T]:
        if len(s.values) == 1 and isinstance(s.values[0], P.Call) and \
                s.values[0].func == "divmod":
            x, y = (self.expr(a, scope) for a in s.values[0].args)
            types = [binary_type("//", x, y), binary_type("%", x, y)]
        else:
            types = [self.expr(v, scope) for v in s.values]
        if len(types) != len(s.targets):
            raise Invalid("a tuple assignment of another number of values")
        return types

    def body_scope(self, s: P.IfDevice, scope: Scope) -> Scope:
        """The names of an if_device body: its own (assigned there, not nonlocal) hide
        the enclosing function's; nonlocal ones are the enclosing variables."""
        own = {n for n in assigned(s.device) if n not in s.nonlocals}
        names = {k: v for k, v in scope.names.items() if k not in own}
        for n in s.nonlocals:
            if n not in scope.names:
                raise Invalid(f"nonlocal {n} names no variable")
        return Scope(names, f"{scope.owner}/{s.name}")

    def group_type(self, s: P.GroupAssign, scope: Scope) -> T:
        """The type of a group operation's result: the value's (the init's, where a
        reduce or scan has a typed one; the tile's, for an exchange)."""
        vt = self.expr(s.value, scope)
        if isinstance(vt, Py):
            raise Invalid("a group operation over a constant")
        t = self.scalar(vt)
        if s.arg is not None:
            at = self.expr(s.arg, scope)
            if s.init and isinstance(at, Ty):
                t = at
            elif not s.init and self.scalar(at).is_float:
                raise Invalid("an index or delta is an integer")
        if s.func in ("any_of_group", "all_of_group", "none_of_group"):
            return BOOL
        if s.func in ("exchange", "local_sum"):
            return self.interp.global_types[s.target + "_tile"].elem
        if s.op is not None and t.is_bool:
            raise Invalid(f"{s.op} over bools")
        if s.op in ("bit_and", "bit_or", "bit_xor") and t.is_float:
            raise Invalid(f"{s.op} over floats")
        self.node_types[id(s)] = t
        return t

    # -- expressions ------------------------------------------------------------------
    def scalar(self, t: T) -> Ty:
        if isinstance(t, Py):
            return literal_type(t.obj)
        if not isinstance(t, Ty):
            raise Invalid(f"{t} is not a scalar")
        return t

    def stored(self, to: Ty, t: T) -> None:
        """A value that goes to memory, a field or an atomic: a literal takes the type, and
        the compiler refuses one the type cannot hold."""
        if isinstance(t, Py):
            literal(t.obj, to if not to.is_bool else None)
        else:
            self.scalar(t)

    def condition(self, e: P.Expr, scope: Scope) -> None:
        """A condition; one known when compiling (a literal, or a cast of one) is
        outside the model: the compiler lowers only the branch it takes, so the other's
        types do not count."""
        t = self.expr(e, scope)
        if isinstance(t, Py) or _constant(e):
            raise Invalid("a condition known at compile time")
        self.scalar(t)

    def index(self, t: T) -> None:
        t = self.scalar(t)
        if t.is_float:
            raise Invalid("a float index")

    def field_type(self, base: T, name: str) -> Ty:
        if not isinstance(base, StructT):
            raise Invalid(f"{base} has no fields")
        fields = self.interp.structs[base.name]
        if name not in fields:
            raise Invalid(f"{base.name} has no field {name}")
        return fields[name]

    def expr(self, e: P.Expr, scope: Scope) -> T:
        t = self._expr(e, scope)
        old = self.node_types.setdefault(id(e), t)
        if old != t:
            raise Invalid("one node typed twice")
        return t

    def _expr(self, e: P.Expr, scope: Scope) -> T:
        if isinstance(e, P.Lit):
            if isinstance(e.value, float) and not math.isfinite(e.value):
                raise Invalid("an infinite literal")
            return Py(e.value)
        if isinstance(e, P.Var):
            return self.lookup(scope, e.name)
        if isinstance(e, P.Bin):
            return binary_type(e.op, self.expr(e.left, scope), self.expr(e.right, scope))
        if isinstance(e, P.Unary):
            t = self.expr(e.operand, scope)
            _need_scalar(t)
            if isinstance(t, Py):
                return Py(_fold_unary(e.op, t.obj))
            if e.op == "not":
                return BOOL
            if e.op == "~" and t.is_float:
                raise Invalid("~ needs an integer")
            return t if t.is_float else int_promote(t)
        if isinstance(e, P.Compare):
            ts = [self.expr(x, scope) for x in e.operands]
            _need_scalar(*ts)
            if all(isinstance(t, Py) for t in ts):
                return Py(_fold_compare(e.ops, [t.obj for t in ts]))
            if any(isinstance(a, Py) and isinstance(b, Py) for a, b in pairwise(ts)):
                raise Invalid("a chained comparison of constants")
            return BOOL
        if isinstance(e, P.BoolOp):
            ts = [self.expr(x, scope) for x in e.values]
            _need_scalar(*ts)
            if isinstance(ts[0], Py):
                raise Invalid("and / or of a constant first operand")
            t = ts[0]
            for r in ts[1:]:
                r = literal(r.obj, weak_want(r.obj, t))[0] if isinstance(r, Py) else r
                t = BOOL if t.is_bool and r.is_bool else promote(t, r)
            return t
        if isinstance(e, P.IfExp):
            self.condition(e.test, scope)
            a, b = self.expr(e.body, scope), self.expr(e.orelse, scope)
            _need_scalar(a, b)
            (ta, _), (tb, _) = weak_pair((a, _sample(a)), (b, _sample(b)))
            return BOOL if ta.is_bool and tb.is_bool else promote(ta, tb)
        if isinstance(e, P.Cast):
            t = self.expr(e.operand, scope)
            _need_scalar(t)
            if e.builtin and isinstance(t, Py):
                return Py({"int": int, "float": float, "bool": bool}[e.to](t.obj))
            return {"int": I32, "float": F32, "bool": BOOL}[e.to] if e.builtin \
                else BY_NAME[e.to]
        if isinstance(e, P.Call):
            return self.call_type(e, scope)
        if isinstance(e, P.Index):
            base = self.lookup(scope, e.base)
            if not isinstance(base, ArrayT):
                raise Invalid(f"{e.base} cannot be indexed")
            self.index(self.expr(e.index, scope))
            return base.elem
        if isinstance(e, P.Field):
            return self.field_type(self.expr(e.base, scope), e.name)
        if isinstance(e, P.New):
            fields = self.interp.structs.get(e.struct)
            if fields is None or len(e.args) != len(fields):
                raise Invalid(f"{e.struct} takes one value per field")
            for a, ft in zip(e.args, fields.values(), strict=True):
                self.stored(ft, self.expr(a, scope))
            return StructT(e.struct)
        if isinstance(e, P.Query):
            if self.fn is not None:
                raise Invalid("a work-item query in a helper")
            if e.name != "id" and not self.interp.p.wg:
                raise Invalid(f"{e.name} needs an nd_range kernel")
            return I32
        raise Invalid(f"unknown expression {e}")

    def call_type(self, e: P.Call, scope: Scope) -> T:
        ts = [self.expr(a, scope) for a in e.args]
        if e.func in ("min", "max"):
            _need_scalar(*ts)
            if len(ts) < 2:
                raise Invalid("min/max of one value")
            if all(isinstance(t, Py) for t in ts):
                return Py((min if e.func == "min" else max)(t.obj for t in ts))
            t = ts[0]
            for r in ts[1:]:
                (a, _), (b, _) = weak_pair((t, _sample(t)), (r, _sample(r)))
                t = I32 if a.is_bool and b.is_bool else promote(a, b)
            return t
        if e.func == "abs":
            (t,) = ts
            _need_scalar(t)
            if isinstance(t, Py):
                raise Invalid("abs of a constant")
            return t if t.is_float else int_promote(t)
        if e.func.startswith("math."):
            (t,) = ts
            if not isinstance(t, Ty) or not t.is_float:
                raise Invalid("math functions here take float values")
            return t
        helper = self.interp.helpers.get(e.func)
        if helper is None:
            raise Invalid(f"unknown function {e.func}")
        if len(ts) != len(helper.params):
            raise Invalid(f"{e.func} takes {len(helper.params)} arguments")
        return self.interp.instance(helper, ts).ret


def range_type(ts: list[T]) -> Ty:
    """The type of a range loop's variable: its arguments' common type (a literal takes
    the others' type when it holds it), a signed one that holds them all when signed and
    unsigned values mix (Python's range counts mathematically: range(u, -1, -1) ends at
    0), never narrower than int32."""
    typed = [t for t in ts if not isinstance(t, Py)]
    if any(not isinstance(t, Ty) or t.is_float for t in typed) or \
            any(isinstance(t, Py) and not isinstance(t.obj, int) for t in ts):
        raise Invalid("range() takes integers")
    base = I32
    for t in typed:
        base = promote(base, t)
    types = [literal_type(t.obj, weak_want(t.obj, base)) if isinstance(t, Py) else t
             for t in ts]
    t = I32
    for u in types:
        t = promote(t, u)
    promoted = {int_promote(u).is_signed for u in types}
    return I64 if len(promoted) == 2 else t


def _constant(e: P.Expr) -> bool:
    """Whether the compiler knows a value: a literal, or a cast of one."""
    while isinstance(e, P.Cast):
        e = e.operand
    return isinstance(e, P.Lit)


def _fold_unary(op: str, x: Any) -> Any:
    return {"-": lambda: -x, "+": lambda: +x, "~": lambda: ~x, "not": lambda: not x}[op]()


def _fold_compare(ops: tuple[str, ...], xs: list[Any]) -> bool:
    return all({"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b, "==": a == b,
                "!=": a != b}[op] for op, a, b in zip(ops, xs, xs[1:], strict=False))


def assigned(stmts: tuple[P.Stmt, ...]) -> set[str]:
    """The names a block assigns, as Python scopes them (not inside nested bodies)."""
    out: set[str] = set()
    for s in stmts:
        if isinstance(s, P.Assign | P.AugAssign | P.GroupAssign):
            out.add(s.target)
        elif isinstance(s, P.TupleAssign):
            out.update(s.targets)
        elif isinstance(s, P.Array):
            out.add(s.name)
        elif isinstance(s, P.For):
            out.add(s.var)
            out |= assigned(s.body)
        elif isinstance(s, P.If):
            out |= assigned(s.body) | assigned(s.orelse)
        elif isinstance(s, P.While):
            out.add(s.counter)
            out |= assigned(s.body)
        elif isinstance(s, P.IfDevice):
            out.add(f"{s.name}_device")
            out.add(f"{s.name}_host")
    return out


# -- running --------------------------------------------------------------------------------

@dataclass
class Result:
    """What the host computed: every buffer's final contents, which work-items have a
    defined result, and whether the atomic and reduction targets' contents are."""

    memory: dict[str, list]
    valid: list[bool]
    shared_valid: bool  # atomic and reduction targets: every work-item is defined
    reasons: dict[int, str]
    tolerance: dict[tuple[str, int], float]  # how far an approximate result may be


class Item:
    """One work-item's state while it runs."""

    def __init__(self, gid: int, wg: int, sg: int) -> None:
        self.gid = gid
        self.lid = gid % wg if wg else gid
        self.group = gid // wg if wg else 0
        self.sg_lane = self.lid % sg
        self.sg_id = self.lid // sg
        self.steps = 0
        self.valid = True
        self.done = False


class Interpreter:
    """Runs a program on the host: every work-item, in lockstep across the group
    operations at the kernel's top level."""

    def __init__(self, program: P.Program, sub_group_size: int) -> None:
        self.p = program
        self.sg = sub_group_size
        self.structs = {s.name: {f: BY_NAME[t] for f, t in s.fields} for s in program.structs}
        self.struct_fields = {s.name: tuple(f for f, _ in s.fields) for s in program.structs}
        self.helpers = {f.name: f for f in program.helpers}
        self.instances: dict[tuple, Instance] = {}
        self.global_types: dict[str, T] = {}
        for b in program.buffers:
            elem = StructT(b.ty) if b.ty in self.structs else BY_NAME[b.ty]
            self.global_types[b.name] = ArrayT(elem, len(b.data), "global")
        for name, ty, length in program.local:
            self.global_types[name] = ArrayT(BY_NAME[ty], length, "local")
        self.global_types["i"] = I32
        self.captured = {name: (BY_NAME[ty], value) for name, ty, value in program.captures}
        self.global_types.update({name: t for name, (t, _) in self.captured.items()})
        self.reducers = {r[0]: r[1:] for r in program.reductions}
        self._stack: list[tuple] = []
        self.kernel = Instance(self, None, [], program.body)

    def instance(self, fn: P.Function, arg_types: list[T]) -> Instance:
        params = []
        for t in arg_types:
            if isinstance(t, Py):
                if not isinstance(t.obj, bool | int | float):
                    raise Invalid("a helper takes scalars and structs")
                t = literal_type(t.obj)
            if not isinstance(t, Ty | StructT):
                raise Invalid("a helper takes scalars and structs")
            params.append(t)
        key = (fn.name, tuple(params))
        inst = self.instances.get(key)
        if inst is None:
            if any(k[0] == fn.name for k in self._stack):
                raise Invalid("recursion")
            self._stack.append(key)
            try:
                inst = Instance(self, fn, list(zip(fn.params, params, strict=True)), fn.body)
            finally:
                self._stack.pop()
            self.instances[key] = inst
        return inst

    # -- the run ----------------------------------------------------------------------
    def run(self) -> Result:
        p = self.p
        self.memory = {b.name: [self._initial(b, v) for v in b.data] for b in p.buffers}
        self.writers: dict[tuple[str, int], int] = {}
        self.tolerance: dict[tuple[str, int], float] = {}
        self.reduced: dict[str, list] = {name: [] for name in self.reducers}
        items = [Item(g, p.wg, self.sg) for g in range(p.n)]
        self.reasons: dict[int, str] = {}
        groups = _split(p.body)
        envs = [self._kernel_frame(it) for it in items]
        self.local: dict[tuple[int, str], list] = {}
        for phase, group_stmt in groups:
            for it, env in zip(items, envs, strict=True):
                if it.valid and not it.done:
                    self._guarded(it, lambda it=it, env=env, phase=phase: self.block(
                        phase, env, it))
            if group_stmt is not None:
                self.group_op(group_stmt, items, envs)
        valid = [it.valid for it in items]
        shared = all(valid) and self.finish_reductions()
        return Result(self.memory, valid, shared, self.reasons, self.tolerance)

    def finish_reductions(self) -> bool:
        """Each reduction's target: its first value (or the identity) combined with every
        value a work-item gave its reducer, in any order; False where that is not
        defined."""
        try:
            self._reductions()
        except Undefined as ex:
            self.reasons.setdefault(-1, str(ex))
            return False
        return True

    def _reductions(self) -> None:
        for name, (buffer, op, identity_first) in self.reducers.items():
            t = self.global_types[buffer].elem
            mem = self.memory[buffer]
            values = self.reduced[name]
            start = identity(op, t) if identity_first else mem[0]
            if t.is_float and op in ("plus", "multiplies"):
                _order_free_sum(t, [start, *values] if op == "plus" else values)
            mem[0] = _combine_all(op, t, [start, *values])

    def _initial(self, b: P.Buffer, v: Any) -> Any:
        return dict(zip(self.struct_fields[b.ty], v, strict=True)) if b.ty in self.structs \
            else v

    def _guarded(self, it: Item, fn: Any) -> None:
        try:
            fn()
        except Undefined as ex:
            it.valid = False
            self.reasons.setdefault(it.gid, str(ex))
        except _Signal as sig:
            if sig.kind != "return":
                raise Invalid(f"{sig.kind} outside a loop") from None
            it.done = True

    def _kernel_frame(self, it: Item) -> Frame:
        frame = Frame(self.kernel, self.kernel.scope, {}, it)
        return frame

    # -- statements -------------------------------------------------------------------
    def block(self, stmts: tuple[P.Stmt, ...], f: Frame, it: Item) -> None:
        for s in stmts:
            it.steps += 1
            if it.steps > STEP_LIMIT:
                raise Invalid("a work-item runs too long")
            self.stmt(s, f, it)

    def stmt(self, s: P.Stmt, f: Frame, it: Item) -> None:
        inst = f.inst
        if isinstance(s, P.Assign):
            f.assign(s.target, self.ev(s.value, f))
        elif isinstance(s, P.TupleAssign):
            if len(s.values) == 1:  # divmod
                x, y = (self.ev(a, f) for a in s.values[0].args)
                types = inst.node_types[id(s)]
                values = [(types[0], binary("//", x, y, types[0])),
                          (types[1], binary("%", x, y, types[1]))]
            else:
                values = [self.ev(v, f) for v in s.values]
            for name, v in zip(s.targets, values, strict=True):
                f.assign(name, v)
        elif isinstance(s, P.AugAssign):
            cur = f.read(s.target)
            t = inst.node_types[id(s)]
            f.assign(s.target, (t, binary(s.op, cur, self.ev(s.value, f), t)))
        elif isinstance(s, P.SetField):
            st = f.read(s.base)
            ft = self.structs[st[0].name][s.name]
            st[1][s.name] = self.to_type(self.ev(s.value, f), ft)
        elif isinstance(s, P.Store):
            self.store(s, f)
        elif isinstance(s, P.If):
            if _truth(*self.ev(s.test, f)):
                self.block(s.body, f, it)
            else:
                self.block(s.orelse, f, it)
        elif isinstance(s, P.While):
            while True:
                counter = f.read(s.counter)[1]
                if not (counter < s.limit and _truth(*self.ev(s.test, f))):
                    break
                f.assign(s.counter, (I32, wrap(counter + 1, I32)))
                try:
                    self.block(s.body, f, it)
                except _Signal as sig:
                    if sig.kind == "break":
                        break
                    if sig.kind != "continue":
                        raise
        elif isinstance(s, P.For):
            self.for_loop(s, f, it)
        elif isinstance(s, P.Break):
            raise _Signal("break")
        elif isinstance(s, P.Continue):
            raise _Signal("continue")
        elif isinstance(s, P.Return):
            raise _Signal("return", None if s.value is None else self.ev(s.value, f))
        elif isinstance(s, P.Array):
            t = BY_NAME[s.ty]
            f.values[f.key(s.name)] = (ArrayT(t, s.length, "private"),
                                       [convert(0, I32, t)] * s.length)
        elif isinstance(s, P.IfDevice):
            if s.form in ("device", "device_otherwise", "host_otherwise"):
                inner = Frame(inst, inst.body_scope(s, f.scope), f.values, it)
                try:
                    self.block(s.device, inner, it)
                except _Signal as sig:
                    if sig.kind != "return":
                        raise
        elif isinstance(s, P.Atomic):
            self.atomic(s, f, it)
        elif isinstance(s, P.Approx):
            self.approx(s, f)
        elif isinstance(s, P.Reduce):
            buffer = self.reducers[s.reducer][0]
            elem = self.global_types[buffer].elem
            self.reduced[s.reducer].append(self.to_type(self.ev(s.value, f), elem))
        else:
            raise Invalid(f"{s} cannot run here")

    def for_loop(self, s: P.For, f: Frame, it: Item) -> None:
        t = f.inst.node_types[id(s)]
        vals = [self.ev(a, f) for a in s.args]
        if len(vals) == 1:
            vals.insert(0, (Py(0), 0))
        if len(vals) == 2:
            vals.append((Py(1), 1))
        start, stop, step = (int(v[1]) for v in vals)  # Python's range: the values
        if not all(t.lo <= v <= t.hi for v in (start, stop, step)):
            raise Undefined("a range argument the loop variable's type does not hold")
        if step == 0:
            raise Invalid("range() step of zero")
        counter = start
        while counter < stop if step > 0 else counter > stop:
            f.assign(s.var, (t, counter))
            try:
                self.block(s.body, f, it)
            except _Signal as sig:
                if sig.kind == "break":
                    break
                if sig.kind != "continue":
                    raise
            it.steps += 1
            if it.steps > STEP_LIMIT:
                raise Invalid("a work-item runs too long")
            counter = wrap(counter + step, t)

    def store(self, s: P.Store, f: Frame) -> None:
        base_t, mem = f.read(s.base)
        i = int(self.ev(s.index, f)[1])
        if not 0 <= i < len(mem):
            raise Invalid(f"{s.base}[{i}] is out of bounds")
        if base_t.space == "global":
            writer = self.writers.setdefault((s.base, i), f.item.gid)
            if writer != f.item.gid:
                raise Invalid(f"work-items {writer} and {f.item.gid} both write {s.base}[{i}]")
        value = self.ev(s.value, f)
        if s.field is not None:
            ft = self.structs[base_t.elem.name][s.field]
            mem[i] = dict(mem[i])
            mem[i][s.field] = self.to_type(value, ft)
        elif isinstance(base_t.elem, StructT):
            mem[i] = dict(value[1])
        else:
            elem = base_t.elem
            if s.op:
                t = f.inst.node_types[id(s)]
                value = (t, binary(s.op, (elem, mem[i]), value, t))
            vt, x = value
            if base_t.space == "global" and elem.is_float and isinstance(vt, Ty) and \
                    vt.is_float and math.isfinite(x) and not float_holds(elem, Fraction(x)):
                # the last step narrows a float: the device may round either way
                near = float(elem.dtype.type(x))
                if not math.isfinite(near) or abs(x) < MIN_NORMAL[elem.bits]:
                    raise Undefined(f"{x} is out of {elem!r}'s normal range")
                mem[i] = near
                self.tolerance[(s.base, i)] = _ulp(elem, near)
                return
            mem[i] = self.to_type(value, elem)

    def approx(self, s: P.Approx, f: Frame) -> None:
        """The exact result, and how far from it Vulkan lets the device's be: 2.5 ULP for
        a division, 5 for a square root (1 / InverseSqrt); float64 only as precise as
        float32."""
        t = f.inst.node_types[id(s)]
        _, mem = f.read(s.base)
        i = int(self.ev(s.index, f)[1])
        if self.writers.setdefault((s.base, i), f.item.gid) != f.item.gid:
            raise Invalid(f"two work-items write {s.base}[{i}]")
        args = [self.ev(a, f) for a in s.args]
        if s.func == "/":
            (ta, va), (tb, vb) = weak_pair(*args)
            x, y = _finite(convert(va, ta, t)), _finite(convert(vb, tb, t))
            if y == 0:
                raise Undefined("division by zero")
            exact, ulps = float(Fraction(x) / Fraction(y)), 2.5
        else:
            vt, x = args[0]
            x = _finite(convert(x, vt, t) if not isinstance(vt, Py) else float(vt.obj))
            if x < 0:
                raise Undefined("the square root of a negative value")
            exact, ulps = math.sqrt(x), 5.0
        precision = t if t.bits < 64 else F32
        if exact != 0 and not MIN_NORMAL[precision.bits] <= abs(exact) <= MAX[t.bits]:
            raise Undefined(f"{exact} is out of {t!r}'s normal range")
        mem[i] = exact
        self.tolerance[(s.base, i)] = ulps * _ulp(precision, exact)

    def atomic(self, s: P.Atomic, f: Frame, it: Item) -> None:
        base_t, mem = f.read(s.base)
        t = base_t.elem
        v = self.to_type(self.ev(s.value, f), t)
        cur = mem[s.index]
        if t.is_float:
            if s.method not in ("fetch_add", "fetch_sub", "fetch_min", "fetch_max"):
                raise Invalid(f"{s.method} on floats")
            x, y = Fraction(cur), Fraction(v)
            r = {"fetch_add": x + y, "fetch_sub": x - y, "fetch_min": min(x, y),
                 "fetch_max": max(x, y)}[s.method]
            mem[s.index] = _float(t, r)
            return
        r = {"fetch_add": cur + v, "fetch_sub": cur - v, "fetch_and": cur & v,
             "fetch_or": cur | v, "fetch_xor": cur ^ v, "fetch_min": min(cur, v),
             "fetch_max": max(cur, v)}[s.method]
        mem[s.index] = wrap(r, t)

    # -- group operations -------------------------------------------------------------
    def group_op(self, s: P.GroupAssign, items: list[Item], frames: list[Frame]) -> None:
        """Every work-item's value, then each one's result: a group whose members are
        not all defined (or returned early) gives none."""
        values: dict[int, Any] = {}
        args: dict[int, Any] = {}
        for it, f in zip(items, frames, strict=True):
            if not it.valid or it.done:
                continue

            def evaluate(it: Item = it, f: Frame = f) -> None:
                value = self.ev(s.value, f)
                if s.arg is not None:
                    args[it.gid] = self.ev(s.arg, f)
                values[it.gid] = value

            self._guarded(it, evaluate)
        for start, size in self._groups(len(items), s.group == "sg"):
            members = items[start:start + size]
            if any(it.gid not in values for it in members):
                for it in members:
                    if it.valid:
                        it.valid = False
                        self.reasons.setdefault(it.gid, "a group member is undefined")
                continue
            for it, f in zip(members, frames[start:start + size], strict=True):
                self._guarded(it, lambda it=it, f=f, members=members: f.assign(
                    s.target, self.group_result(s, it, members, values, args, f)))

    def _groups(self, n: int, sub_groups: bool) -> list[tuple[int, int]]:
        """(first item, size) of each work-group, or of each sub-group: the sub-groups of
        a work-group split it from its first item, and never reach into the next one (a
        work-group smaller than the device's sub-group size is one sub-group of its
        size)."""
        wg = self.p.wg or n
        out = []
        for first in range(0, n, wg):
            size = min(wg, n - first)
            if not sub_groups:
                out.append((first, size))
                continue
            out += [(first + k, min(self.sg, size - k)) for k in range(0, size, self.sg)]
        return out

    def group_result(self, s: P.GroupAssign, it: Item, members: list[Item],
                     values: dict[int, Any], args: dict[int, Any], f: Frame) -> Any:
        vals = [values[m.gid] for m in members]
        k = members.index(it)
        if s.func in ("any_of_group", "all_of_group", "none_of_group"):
            truths = [_truth(*v) for v in vals]
            r = {"any_of_group": any(truths), "all_of_group": all(truths),
                 "none_of_group": not any(truths)}[s.func]
            return BOOL, r
        if s.func in ("exchange", "local_sum"):
            vt = self.global_types[s.target + "_tile"].elem
        else:
            vt = f.inst.node_types[id(s.value)] if not s.init else f.inst.node_types[id(s)]
        typed = [convert(v[1], v[0], vt) for v in vals]
        if s.func in ("group_broadcast", "select_from_group", "permute_group_by_xor",
                      "shift_group_left", "shift_group_right", "exchange"):
            a = int(self.to_type(args[it.gid], I64))
            src = {"group_broadcast": a, "select_from_group": a, "exchange": a,
                   "permute_group_by_xor": k ^ a, "shift_group_left": k + a,
                   "shift_group_right": k - a}[s.func]
            if s.func == "group_broadcast" and len({int(self.to_type(args[m.gid], I64))
                                                   for m in members}) != 1:
                raise Invalid("a broadcast from different items")
            if not 0 <= src < len(members):
                return vt, POISON
            return vt, typed[src]
        if s.op == "plus" and vt.is_float:
            _order_free_sum(vt, typed)
        if s.func == "local_sum":
            return vt, _combine_all("plus", vt, typed)
        if s.func == "reduce_over_group":
            r = _combine_all(s.op, vt, typed)
        else:
            upto = typed[:k + 1] if s.func == "inclusive_scan_over_group" else typed[:k]
            r = _combine_all(s.op, vt, upto)
        if s.init:
            r = _combine(s.op, vt, self.to_type(args[it.gid], vt), r)
        return vt, r

    # -- expressions ------------------------------------------------------------------
    def to_type(self, v: tuple[T, Any], t: Ty) -> Any:
        """A value converted to `t` as a store or an argument converts it (a literal
        takes the type)."""
        vt, x = v
        if isinstance(vt, Py):
            vt, x = literal(vt.obj, t if not t.is_bool else None)
        return convert(x, vt, t)

    def ev(self, e: P.Expr, f: Frame) -> tuple[T, Any]:
        t = f.inst.node_types[id(e)]
        if isinstance(t, Py):
            return t, t.obj
        if isinstance(e, P.Var):
            return f.read(e.name)
        if isinstance(e, P.Bin):
            return t, binary(e.op, self.ev(e.left, f), self.ev(e.right, f), t)
        if isinstance(e, P.Unary):
            ot, x = self.ev(e.operand, f)
            if e.op == "not":
                return BOOL, not _truth(ot, x)
            x = convert(x, ot, t)
            if e.op == "+":
                return t, x
            if e.op == "~":
                return t, wrap(~x, t)
            if t.is_float:
                return t, _float(t, -Fraction(_finite(x)))
            return t, wrap(-x, t)
        if isinstance(e, P.Compare):
            left = self.ev(e.operands[0], f)
            for op, right_e in zip(e.ops, e.operands[1:], strict=True):
                right = self.ev(right_e, f)
                if not compare(op, left, right):
                    return BOOL, False
                left = right
            return BOOL, True
        if isinstance(e, P.BoolOp):
            # pairwise, as `(a and b) and c`: each step's value takes the two sides' type
            cur = self.ev(e.values[0], f)
            for operand in e.values[1:]:
                other = f.inst.node_types[id(operand)]
                lt = cur[0]
                rt = literal_type(other.obj, weak_want(other.obj, lt)) \
                    if isinstance(other, Py) else other
                step = BOOL if lt.is_bool and rt.is_bool else promote(lt, rt)
                if _truth(*cur) == (e.op == "and"):
                    rv = self.ev(operand, f)
                    if isinstance(rv[0], Py):
                        rv = literal(rv[0].obj, rt)
                    cur = (step, convert(rv[1], rv[0], step))
                else:
                    cur = (step, convert(cur[1], lt, step))
            return cur
        if isinstance(e, P.IfExp):
            chosen, other = (e.body, e.orelse) if _truth(*self.ev(e.test, f)) else \
                (e.orelse, e.body)
            vt, x = self.ev(chosen, f)
            if isinstance(vt, Py):
                ot = f.inst.node_types[id(other)]
                vt, x = literal(vt.obj, None if isinstance(ot, Py) else weak_want(vt.obj, ot))
            return t, convert(x, vt, t)
        if isinstance(e, P.Cast):
            v = self.ev(e.operand, f)
            if t.is_bool:
                return t, _truth(*v)
            vt, x = v
            if isinstance(vt, Py):
                if isinstance(vt.obj, float) and t.is_float:
                    return t, _float(t, Fraction(vt.obj))
                vt, x = literal(vt.obj, None)
            return t, convert(x, vt, t)
        if isinstance(e, P.Call):
            return self.call(e, t, f)
        if isinstance(e, P.Index):
            mem = f.read(e.base)[1]
            i = int(self.ev(e.index, f)[1])
            if not 0 <= i < len(mem):
                raise Invalid(f"{e.base}[{i}] is out of bounds")
            v = mem[i]
            return t, dict(v) if isinstance(t, StructT) else v
        if isinstance(e, P.Field):
            return t, self.ev(e.base, f)[1][e.name]
        if isinstance(e, P.New):
            fields = self.structs[e.struct]
            return t, {name: self.to_type(self.ev(a, f), ft)
                       for (name, ft), a in zip(fields.items(), e.args, strict=True)}
        if isinstance(e, P.Query):
            it = f.item
            return t, {"id": it.gid, "local_id": it.lid, "group_id": it.group,
                       "sg_lane": it.sg_lane, "sg_id": it.sg_id,
                       "sg_size": min(self.sg, (self.p.wg or self.p.n) - it.sg_id * self.sg)
                       }[e.name]
        raise Invalid(f"{e} cannot be evaluated")

    def call(self, e: P.Call, t: T, f: Frame) -> tuple[T, Any]:
        args = [self.ev(a, f) for a in e.args]
        if e.func in ("min", "max"):
            # Python's min(a, b): b if b < a else a, compared as `<` compares
            cur = args[0]
            for b in args[1:]:
                (ta, va), (tb, vb) = weak_pair(cur, b)
                pair = I32 if ta.is_bool and tb.is_bool else promote(ta, tb)
                less = compare("<", (tb, vb), (ta, va)) if e.func == "min" else \
                    compare("<", (ta, va), (tb, vb))
                cur = (pair, convert(vb, tb, pair) if less else convert(va, ta, pair))
            return cur
        if e.func == "abs":
            x = self.to_type(args[0], t)
            if t.is_float:
                return t, abs(x)
            if t.is_signed and x == t.lo:
                raise Undefined("abs of the most negative value")
            return t, abs(x)
        if e.func.startswith("math."):
            x = args[0][1]
            fn = {"math.floor": math.floor, "math.ceil": math.ceil, "math.trunc": math.trunc,
                  "math.fabs": abs}[e.func]
            return t, _float(t, Fraction(fn(_finite(x))))
        helper = self.helpers[e.func]
        inst = self.instance(helper, [f.inst.node_types[id(a)] for a in e.args])
        frame = Frame(inst, inst.scope, {}, f.item)
        for (name, pt), a in zip(inst.params, args, strict=True):
            frame.assign(name, (pt, self.to_type(a, pt) if isinstance(pt, Ty) else a[1]))
        try:
            self.block(inst.body, frame, f.item)
        except _Signal as sig:
            if sig.kind != "return" or sig.value is None:
                raise Invalid(f"{sig.kind} in {helper.name}") from None
            return inst.ret, self.to_type(sig.value, inst.ret)
        raise Invalid(f"{helper.name} ends without a return")


def _split(body: tuple[P.Stmt, ...]) -> list[tuple[tuple[P.Stmt, ...], P.GroupAssign | None]]:
    """The kernel body as runs of statements, each ended by a group operation."""
    out, run = [], []
    for s in body:
        if isinstance(s, P.GroupAssign):
            out.append((tuple(run), s))
            run = []
        else:
            run.append(s)
    out.append((tuple(run), None))
    return out


def _ulp(t: Ty, x: float) -> float:
    """The spacing of float type `t`'s values at `x`."""
    exp = math.frexp(x)[1] - 1 if x != 0 else 0
    return 2.0 ** (max(exp, MIN_EXP[t.bits]) - MANTISSA[t.bits] + 1)


def _order_free_sum(t: Ty, values: list[float]) -> None:
    """The device adds in its own order: every order gives the same exact sums when each
    value is a multiple of 2**-k and their absolute sum stays within the significand."""
    fractions = [Fraction(v) for v in values]
    k = max(f.denominator.bit_length() - 1 for f in fractions)
    if sum(abs(f) for f in fractions) * 2**k >= 2 ** MANTISSA[t.bits]:
        raise Undefined("a float sum that may round in another order")


def identity(op: str, t: Ty) -> Any:
    """The identity SYCL defines for a known binary operation."""
    if op in ("plus", "bit_or", "bit_xor"):
        return 0.0 if t.is_float else 0
    if op == "multiplies":
        return 1.0 if t.is_float else 1
    if op == "bit_and":
        return wrap(-1, t)
    if op == "minimum":
        return math.inf if t.is_float else t.hi
    return -math.inf if t.is_float else t.lo


def _combine(op: str, t: Ty, a: Any, b: Any) -> Any:
    if t.is_float:
        x, y = Fraction(a) if math.isfinite(a) else a, Fraction(b) if math.isfinite(b) else b
        if op == "minimum":
            return float(min(x, y))
        if op == "maximum":
            return float(max(x, y))
        return _float(t, {"plus": x + y, "multiplies": x * y}[op])
    r = {"plus": a + b, "multiplies": a * b, "minimum": min(a, b), "maximum": max(a, b),
         "bit_and": a & b, "bit_or": a | b, "bit_xor": a ^ b}[op]
    return wrap(r, t)


def _combine_all(op: str, t: Ty, values: list[Any]) -> Any:
    if not values:
        return identity(op, t)
    r = values[0]
    for v in values[1:]:
        r = _combine(op, t, r, v)
    return r


class Frame:
    """A function's variables while one work-item runs it (an inlined if_device body
    shares its enclosing frame's values, through its own scope)."""

    def __init__(self, inst: Instance, scope: Scope, values: dict, item: Item) -> None:
        self.inst = inst
        self.scope = scope
        self.values = values
        self.item = item

    def key(self, name: str) -> Any:
        k = self.scope.names.get(name)
        return k if k is not None else (self.scope.owner, name)

    def read(self, name: str) -> tuple[T, Any]:
        k = self.key(name)
        if k in self.values:
            v = self.values[k]
            if v[1] is POISON:
                raise Undefined(f"{name} is undefined")
            return v
        interp = self.inst.interp
        if name == "i" and name not in self.scope.names:
            return I32, self.item.gid
        if name in interp.captured:
            return interp.captured[name]
        if name in interp.global_types:
            t = interp.global_types[name]
            mem = interp.memory.get(name)
            if mem is None:
                mem = interp.local.setdefault((self.item.group, name), [0] * t.length)
            return t, mem
        raise Undefined(f"{name} is read before it is set")

    def assign(self, name: str, v: tuple[T, Any]) -> None:
        k = self.key(name)
        t = self.inst.types[k]
        vt, x = v
        if isinstance(t, StructT):
            self.values[k] = (t, dict(x))
            return
        if x is POISON:
            self.values[k] = (t, POISON)
            return
        if isinstance(vt, Py):
            vt, x = literal(vt.obj, t if not t.is_bool else None)
        self.values[k] = (t, convert(x, vt, t))
