"""Generated programs as trees, and their Python source.

A program is one kernel with the structs and helper functions it uses, and the data of
its buffers. The trees are immutable, so the reducer can build variants by replacing
parts; `render` writes the source the compiler reads (kernels must live in files)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# -- expressions ------------------------------------------------------------------------


class Expr:
    """An expression."""


@dataclass(frozen=True)
class Lit(Expr):
    value: int | float | bool


@dataclass(frozen=True)
class Var(Expr):
    name: str


@dataclass(frozen=True)
class Bin(Expr):
    op: str  # + - * / // % & | ^ << >> **
    left: Expr
    right: Expr


@dataclass(frozen=True)
class Unary(Expr):
    op: str  # - + ~ not
    operand: Expr


@dataclass(frozen=True)
class Compare(Expr):
    ops: tuple[str, ...]
    operands: tuple[Expr, ...]


@dataclass(frozen=True)
class BoolOp(Expr):
    op: str  # and, or
    values: tuple[Expr, ...]


@dataclass(frozen=True)
class IfExp(Expr):
    test: Expr
    body: Expr
    orelse: Expr


@dataclass(frozen=True)
class Cast(Expr):
    to: str  # a scalar type name (int8 ... float64, bool), or int / float / bool builtins
    operand: Expr
    builtin: bool = False


@dataclass(frozen=True)
class Call(Expr):
    """A call of a helper function, of min / max / abs, or of math.floor / ceil / trunc /
    fabs."""

    func: str
    args: tuple[Expr, ...]


@dataclass(frozen=True)
class Index(Expr):
    """An element of a buffer, a private array or work-group memory."""

    base: str
    index: Expr


@dataclass(frozen=True)
class Field(Expr):
    base: Expr  # a struct variable or a buffer element
    name: str


@dataclass(frozen=True)
class New(Expr):
    struct: str
    args: tuple[Expr, ...]


@dataclass(frozen=True)
class Query(Expr):
    """A work-item query: the id of a range kernel, or of an nd_item, its group or its
    sub-group (all int32 in vksycl)."""

    name: str  # id, local_id, group_id, sg_lane, sg_size, sg_id


# -- statements -------------------------------------------------------------------------


class Stmt:
    """A statement."""


@dataclass(frozen=True)
class Assign(Stmt):
    target: str
    value: Expr


@dataclass(frozen=True)
class TupleAssign(Stmt):
    """`a, b = x, y` (every value is computed before any is stored), or
    `q, r = divmod(x, y)` when `values` is one such call."""

    targets: tuple[str, ...]
    values: tuple[Expr, ...]


@dataclass(frozen=True)
class AugAssign(Stmt):
    target: str
    op: str
    value: Expr


@dataclass(frozen=True)
class SetField(Stmt):
    base: str
    name: str
    value: Expr


@dataclass(frozen=True)
class Store(Stmt):
    """`base[index] = value`, `base[index].field = value`, or `base[index] op= value`."""

    base: str
    index: Expr
    value: Expr
    field: str | None = None
    op: str | None = None


@dataclass(frozen=True)
class If(Stmt):
    test: Expr
    body: tuple[Stmt, ...]
    orelse: tuple[Stmt, ...] = ()


@dataclass(frozen=True)
class While(Stmt):
    """`while counter < limit and test:` whose body starts with `counter += 1`, so every
    loop ends (the counter is an int32 variable set before the loop)."""

    counter: str
    limit: int
    test: Expr
    body: tuple[Stmt, ...]


@dataclass(frozen=True)
class For(Stmt):
    var: str
    args: tuple[Expr, ...]  # range(...)'s arguments
    body: tuple[Stmt, ...]


@dataclass(frozen=True)
class Break(Stmt):
    pass


@dataclass(frozen=True)
class Continue(Stmt):
    pass


@dataclass(frozen=True)
class Return(Stmt):
    value: Expr | None = None


@dataclass(frozen=True)
class Array(Stmt):
    """A private array: `name = np.zeros(length, np.<ty>)`."""

    name: str
    ty: str
    length: int


@dataclass(frozen=True)
class IfDevice(Stmt):
    """`syclexp.if_device(d).otherwise(h)` and its other forms around two nested
    functions: `device` is what the device runs (nothing for `if_host(h)` alone), with
    `nonlocal` for the enclosing names it assigns; the host body is Python the compiler
    must never read."""

    form: str  # device, device_otherwise, host, host_otherwise
    name: str
    device: tuple[Stmt, ...]
    nonlocals: tuple[str, ...] = ()


@dataclass(frozen=True)
class Atomic(Stmt):
    """`sycl.atomic_ref(base[index]).method(value)` on global or work-group memory."""

    base: str
    index: int
    method: str
    value: Expr


@dataclass(frozen=True)
class Reduce(Stmt):
    """`reducer += value` (or *=, &=, |=, ^=, whichever its combiner has), or
    `reducer.combine(value)`."""

    reducer: str
    value: Expr
    operator: str | None = None  # + * & | ^ (its combiner's), or None: combine()


@dataclass(frozen=True)
class Approx(Stmt):
    """`base[index] = a / b` or `base[index] = math.sqrt(a)`: a float operation Vulkan
    lets round by a few ULP, whose result is compared within that."""

    base: str
    index: Expr
    func: str  # / or math.sqrt
    args: tuple[Expr, ...]


@dataclass(frozen=True)
class GroupAssign(Stmt):
    """`target = sycl.<func>(group, value, ...)`, or through work-group memory with
    barriers (func `exchange`: every item writes its value, then reads that of item
    `arg`). Only at the top level of a kernel, where every work-item of the group runs
    it."""

    target: str
    func: str
    group: str  # sg or wg
    value: Expr
    op: str | None = None  # plus, maximum ... for reduce and scans
    arg: Expr | None = None  # index, delta, mask, or init
    init: bool = False  # arg is the init of a reduce or scan


# -- programs ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Struct:
    name: str
    fields: tuple[tuple[str, str], ...]  # (name, scalar type name)


@dataclass(frozen=True)
class Function:
    name: str
    params: tuple[str, ...]
    body: tuple[Stmt, ...]


@dataclass(frozen=True)
class Buffer:
    """A USM allocation the kernel captures: `data` is its initial contents (a struct
    buffer's elements are tuples of field values)."""

    name: str
    ty: str  # a scalar type name or a struct name
    role: str  # in, out, atomic
    data: tuple = ()


@dataclass(frozen=True)
class Program:
    name: str
    n: int  # work-items
    wg: int  # work-group size; 0: a range kernel
    buffers: tuple[Buffer, ...]
    body: tuple[Stmt, ...]
    structs: tuple[Struct, ...] = ()
    helpers: tuple[Function, ...] = ()
    local: tuple[tuple[str, str, int], ...] = ()  # work-group memory: (name, type, length)
    # sycl.reduction: (its reducer's name, target buffer, combiner, initialize_to_identity)
    reductions: tuple[tuple[str, str, str, bool], ...] = ()
    memory: str = "usm"  # or buffer: the kernel takes accessors of sycl.buffers
    captures: tuple[tuple[str, str, Any], ...] = ()  # numpy scalars: (name, type, value)
    shape: tuple[int, ...] = ()  # a range of several dimensions (of n items in all)
    front: str = "closure"  # or free: an nd_range free function kernel, typed parameters
    notes: tuple[str, ...] = field(default=(), compare=False)


# -- source -----------------------------------------------------------------------------

_PRECEDENCE = {"or": 1, "and": 2, "not": 3, "cmp": 4, "|": 5, "^": 6, "&": 7, "<<": 8,
               ">>": 8, "+": 9, "-": 9, "*": 10, "/": 10, "//": 10, "%": 10, "unary": 11,
               "atom": 13}


def expr_source(e: Expr) -> str:
    return _src(e)[0]


def _wrap(part: tuple[str, int], need: int) -> str:
    return part[0] if part[1] >= need else f"({part[0]})"


def _src(e: Expr) -> tuple[str, int]:
    """Source and precedence of an expression (parentheses only where Python needs them,
    except that a comparison or conditional inside an operand is always parenthesised)."""
    atom = _PRECEDENCE["atom"]
    if isinstance(e, Lit):
        text = repr(e.value)
        return (text, atom) if not text.startswith("-") else (text, _PRECEDENCE["unary"])
    if isinstance(e, Var):
        return e.name, atom
    if isinstance(e, Bin) and e.op == "**":  # binds tighter than unary minus, to the right
        return f"{_wrap(_src(e.left), atom)} ** {_wrap(_src(e.right), 11)}", 12
    if isinstance(e, Bin):
        p = _PRECEDENCE[e.op]
        left = _wrap(_src(e.left), p)
        right = _wrap(_src(e.right), p + 1)
        return f"{left} {e.op} {right}", p
    if isinstance(e, Unary):
        if e.op == "not":
            return f"not {_wrap(_src(e.operand), _PRECEDENCE['not'])}", _PRECEDENCE["not"]
        p = _PRECEDENCE["unary"]
        inner = _wrap(_src(e.operand), p)
        return f"{e.op}{inner}" if not inner.startswith(("-", "+")) else f"{e.op}({inner})", p
    if isinstance(e, Compare):
        p = _PRECEDENCE["cmp"]
        parts = [_wrap(_src(e.operands[0]), p + 1)]
        for op, operand in zip(e.ops, e.operands[1:], strict=True):
            parts += [op, _wrap(_src(operand), p + 1)]
        return " ".join(parts), p
    if isinstance(e, BoolOp):
        p = _PRECEDENCE[e.op]
        return f" {e.op} ".join(_wrap(_src(v), p + 1) for v in e.values), p
    if isinstance(e, IfExp):
        return (f"{_wrap(_src(e.body), 1)} if {_wrap(_src(e.test), 1)} else "
                f"{_wrap(_src(e.orelse), 1)}", 0)
    if isinstance(e, Cast):
        name = e.to if e.builtin else ("sycl.bool_" if e.to == "bool" else f"sycl.{e.to}")
        return f"{name}({_src(e.operand)[0]})", atom
    if isinstance(e, Call):
        return f"{e.func}({', '.join(_src(a)[0] for a in e.args)})", atom
    if isinstance(e, Index):
        return f"{e.base}[{_src(e.index)[0]}]", atom
    if isinstance(e, Field):
        return f"{_wrap(_src(e.base), atom)}.{e.name}", atom
    if isinstance(e, New):
        return f"{e.struct}({', '.join(_src(a)[0] for a in e.args)})", atom
    if isinstance(e, Query):
        return _QUERIES[e.name], atom
    raise TypeError(e)


_QUERIES = {"id": "i", "local_id": "it.get_local_id(0)", "group_id": "it.get_group(0)",
            "sg_lane": "sg.get_local_id()", "sg_size": "sg.get_local_range()",
            "sg_id": "sg.get_group_id()"}
_HOST_BODY = ("print('only the host runs this', [k for k in range(3)], {'a': 1})",
              "import os", "raise RuntimeError('the device never runs this')",
              "class Host:\n    pass", "with open(os.devnull) as f:\n    f.read()")


def _block(stmts: tuple[Stmt, ...], indent: str, out: list[str]) -> None:
    if not stmts:
        out.append(indent + "pass")
    for s in stmts:
        _stmt(s, indent, out)


def _stmt(s: Stmt, ind: str, out: list[str]) -> None:
    if isinstance(s, Assign):
        out.append(f"{ind}{s.target} = {expr_source(s.value)}")
    elif isinstance(s, AugAssign):
        out.append(f"{ind}{s.target} {s.op}= {expr_source(s.value)}")
    elif isinstance(s, TupleAssign):
        out.append(f"{ind}{', '.join(s.targets)} = {', '.join(map(expr_source, s.values))}")
    elif isinstance(s, SetField):
        out.append(f"{ind}{s.base}.{s.name} = {expr_source(s.value)}")
    elif isinstance(s, Store):
        target = f"{s.base}[{expr_source(s.index)}]" + (f".{s.field}" if s.field else "")
        out.append(f"{ind}{target} {s.op or ''}= {expr_source(s.value)}")
    elif isinstance(s, If):
        out.append(f"{ind}if {expr_source(s.test)}:")
        _block(s.body, ind + "    ", out)
        if s.orelse:
            out.append(f"{ind}else:")
            _block(s.orelse, ind + "    ", out)
    elif isinstance(s, While):
        out.append(f"{ind}while {s.counter} < {s.limit} and ({expr_source(s.test)}):")
        out.append(f"{ind}    {s.counter} += 1")
        _block(s.body, ind + "    ", out)
    elif isinstance(s, For):
        out.append(f"{ind}for {s.var} in range({', '.join(map(expr_source, s.args))}):")
        _block(s.body, ind + "    ", out)
    elif isinstance(s, Break):
        out.append(ind + "break")
    elif isinstance(s, Continue):
        out.append(ind + "continue")
    elif isinstance(s, Return):
        out.append(ind + "return" + (f" {expr_source(s.value)}" if s.value else ""))
    elif isinstance(s, Array):
        dtype = "bool_" if s.ty == "bool" else s.ty
        out.append(f"{ind}{s.name} = np.zeros({s.length}, np.{dtype})")
    elif isinstance(s, IfDevice):
        _if_device(s, ind, out)
    elif isinstance(s, Atomic):
        out.append(f"{ind}sycl.atomic_ref({s.base}[{s.index}]).{s.method}("
                   f"{expr_source(s.value)})")
    elif isinstance(s, Reduce):
        value = expr_source(s.value)
        out.append(f"{ind}{s.reducer} {s.operator}= {value}" if s.operator else
                   f"{ind}{s.reducer}.combine({value})")
    elif isinstance(s, GroupAssign):
        _group(s, ind, out)
    elif isinstance(s, Approx):
        value = Bin("/", *s.args) if s.func == "/" else Call(s.func, s.args)
        out.append(f"{ind}{s.base}[{expr_source(s.index)}] = {expr_source(value)}")
    else:
        raise TypeError(s)


def _if_device(s: IfDevice, ind: str, out: list[str]) -> None:
    inner = ind + "    "
    dev, host = f"{s.name}_device", f"{s.name}_host"
    out.append(f"{ind}def {dev}():")
    if s.nonlocals:
        out.append(f"{inner}nonlocal {', '.join(s.nonlocals)}")
    _block(s.device, inner, out)
    out.append(f"{ind}def {host}():")
    host_lines = _HOST_BODY[sum(map(ord, s.name)) % len(_HOST_BODY)].split("\n")
    if s.nonlocals:
        out.append(f"{inner}nonlocal {', '.join(s.nonlocals)}")
        host_lines.append(f"{s.nonlocals[0]} = 'a string'")
    out.extend(inner + line for line in host_lines)
    call = {"device": f"syclexp.if_device({dev})",
            "device_otherwise": f"syclexp.if_device({dev}).otherwise({host})",
            "host": f"syclexp.if_host({host})",
            "host_otherwise": f"syclexp.if_host({host}).otherwise({dev})"}[s.form]
    out.append(ind + call)


def _group(s: GroupAssign, ind: str, out: list[str]) -> None:
    g = "sg" if s.group == "sg" else "it.get_group()"
    value = expr_source(s.value)
    if s.func == "local_sum":
        tile = f"{s.target}_tile"
        out.append(f"{ind}if it.get_local_id(0) == 0:")
        out.append(f"{ind}    {tile}[0] = 0")
        out.append(f"{ind}sycl.group_barrier(it.get_group())")
        out.append(f"{ind}sycl.atomic_ref({tile}).fetch_add({value})")
        out.append(f"{ind}sycl.group_barrier(it.get_group())")
        out.append(f"{ind}{s.target} = {tile}[0]")
        out.append(f"{ind}sycl.group_barrier(it.get_group())")
        return
    if s.func == "exchange":
        out.append(f"{ind}{s.target}_tile[it.get_local_id(0)] = {value}")
        out.append(f"{ind}sycl.group_barrier(it.get_group())")
        out.append(f"{ind}{s.target} = {s.target}_tile[{expr_source(s.arg)}]")
        out.append(f"{ind}sycl.group_barrier(it.get_group())")
        return
    args = [g, value]
    if s.op is not None:
        if s.init:
            args.append(expr_source(s.arg))
        args.append(f"sycl.{s.op}()")
    elif s.arg is not None:
        args.append(expr_source(s.arg))
    out.append(f"{ind}{s.target} = sycl.{s.func}({', '.join(args)})")


def render(p: Program) -> str:
    """The program's module source: a `make_<name>` function that takes the buffers and
    returns the kernel (a closure over them), after the structs and helpers."""
    out = [f"# {note}" for note in p.notes]
    for st in p.structs:
        out += ["", "", "@sycl.struct", f"class {st.name}:"]
        out += [f"    {f}: sycl.{t if t != 'bool' else 'bool_'}" for f, t in st.fields]
    for fn in p.helpers:
        out += ["", "", f"def {fn.name}({', '.join(fn.params)}):"]
        _block(fn.body, "    ", out)
    if p.front == "free":
        _free_function(p, out)
        return "\n".join(out) + "\n"
    args = ", ".join([b.name for b in p.buffers] + [c[0] for c in p.captures])
    out += ["", "", f"def make_{p.name}({args}):"]
    for name, ty, length in p.local:
        out.append(f"    {name} = syclexp.work_group_memory(sycl.{ty}, ({length},))")
    params = ["it" if p.wg or len(p.shape) > 1 else "i", *(r[0] for r in p.reductions)]
    out.append(f"    def {p.name}({', '.join(params)}):")
    if p.wg:
        out.append("        i = it.get_global_id(0)")
        out.append("        sg = it.get_sub_group()")
    elif len(p.shape) > 1:
        out.append("        i = it.get_linear_id()")
    _block(p.body, "        ", out)
    out.append(f"    return {p.name}")
    return "\n".join(out) + "\n"


def _free_function(p: Program, out: list[str]) -> None:
    """The program as `@syclexp.nd_range_kernel(1)`: buffers and captured scalars are its
    typed parameters, in that order."""
    params = [f"{b.name}: sycl.ptr[{b.ty if b.ty in {s.name for s in p.structs} else _type(b.ty)}]"
              for b in p.buffers] + [f"{name}: {_type(ty)}" for name, ty, _ in p.captures]
    out += ["", "", "@syclexp.nd_range_kernel(1)", f"def {p.name}({', '.join(params)}):",
            "    it = this_work_item.get_nd_item(1)", "    i = it.get_global_id(0)",
            "    sg = it.get_sub_group()"]
    for name, ty, length in p.local:
        out.append(f"    {name} = syclexp.work_group_memory(sycl.{ty}, ({length},))")
    _block(p.body, "    ", out)


def _type(name: str) -> str:
    return "sycl.bool_" if name == "bool" else f"sycl.{name}"


HEADER = ("import math  # noqa: F401\n\nimport numpy as np  # noqa: F401\n\n"
          "import vksycl as sycl  # noqa: F401\n"
          "from vksycl.ext.oneapi import experimental as syclexp  # noqa: F401\n"
          "from vksycl.ext.oneapi import this_work_item  # noqa: F401\n")


def module_source(programs: list[Program]) -> str:
    return HEADER + "".join("\n" + render(p) for p in programs)
