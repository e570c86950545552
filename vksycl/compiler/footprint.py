"""Where a kernel's global memory accesses land, as functions of the work-item: what
kernel fusion needs to prove that running two kernels' bodies in one work-item keeps
their semantics.

Each load, store or atomic on global memory gets a symbolic address: an integer-weighted
sum of monomials over atoms, the work-item's local id and group id per Vulkan component,
the kernel's argument fields, and opaque values (anything else: loaded data, loop
variables). A variable assigned once is its value. Given the arguments' values at a
launch, an address whose monomials are left with work-item atoms only is exact: its byte
footprint per work-item is known. Otherwise only the allocation its one root pointer
argument points into is known, or nothing.

`relate` compares two concrete accesses over every pair of work-items: never the same
bytes ("disjoint"), the same bytes only for the same work-item ("same" for the very same
address and size, "item" otherwise), only within one work-group ("group"), or perhaps
across work-groups ("conflict"). Exact addresses with equal weights are compared by a
bounded search over the differences of work-item ids in mixed radix; anything the search
cannot settle is a conflict."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import ir
from .checking import TABLE_ROOT
from .intervals import is_group_linear
from .printing import DEBUG_ROOT
from .typesys import Struct, field_offsets, layout, mem_type

Atom = tuple
Mono = tuple  # sorted atoms, () the constant term
Form = dict[Mono, int]
_EVERYTHING = (0, 1 << 64)
_SEARCH_BUDGET = 4096
_LINEAR_OPS = ("OpSConvert", "OpUConvert", "OpBitcast")
# memory kernels reach that orders nothing between kernels: the debug buffer (prints
# reserve room of their own), checked mode's table of allocations (read only)
_UNORDERED = (DEBUG_ROOT, TABLE_ROOT)


@dataclass
class Access:
    """One access to global memory in a kernel: `node` is its IR node."""

    node: Any
    write: bool
    read: bool
    form: Form
    size: int


@dataclass(frozen=True)
class Concrete:
    """An access at a launch: its exact per-work-item form (work-item atoms only), or
    None, and the byte range it may touch at all."""

    form: tuple | None
    size: int
    lo: int
    hi: int


@dataclass(frozen=True)
class Domain:
    """The launch's work-item atoms and how many values each takes."""

    extents: tuple[tuple[Atom, int], ...]
    # work-items per Vulkan component that run the bodies (the range kernels' guard)
    sizes: tuple[int, int, int] = (0, 0, 0)

    def extent(self, atom: Atom) -> int:
        return dict(self.extents).get(atom, 0)


def domain(local_xyz: tuple[int, int, int], groups_xyz: tuple[int, int, int],
           sizes: tuple[int, int, int] = (0, 0, 0)) -> Domain:
    atoms = [(("lid", c), local_xyz[c]) for c in range(3)]
    atoms += [(("grp", c), groups_xyz[c]) for c in range(3)]
    return Domain(tuple(atoms), sizes)


# -- symbolic addresses ------------------------------------------------------------------

def _add(a: Form, b: Form, k: int = 1) -> Form:
    out = dict(a)
    for m, c in b.items():
        out[m] = out.get(m, 0) + k * c
        if not out[m]:
            del out[m]
    return out


def _mul(a: Form, b: Form) -> Form:
    out: Form = {}
    for ma, ca in a.items():
        for mb, cb in b.items():
            m = tuple(sorted(ma + mb))
            out[m] = out.get(m, 0) + ca * cb
            if not out[m]:
                del out[m]
    return out


def _const(v: int) -> Form:
    return {(): v} if v else {}


class Forms:
    """Symbolic addresses of one function's values; `assigned` maps each variable
    assigned exactly once to its value."""

    def __init__(self, assigned: dict[int, ir.Value], dims: int) -> None:
        self.assigned = assigned
        self.dims = dims
        self.memo: dict[int, Form] = {}
        self.busy: set[int] = set()

    def of(self, v: Any) -> Form:
        key = id(v)
        hit = self.memo.get(key)
        if hit is None:
            if key in self.busy:
                return {(("opaque", key),): 1}
            self.busy.add(key)
            hit = self.memo[key] = self._of(v)
            self.busy.discard(key)
        return hit

    def _of(self, v: Any) -> Form:
        opaque = {(("opaque", id(v)),): 1}
        if isinstance(v, ir.Const) and isinstance(v.value, int) and \
                not isinstance(v.value, bool):
            return _const(int(v.value))
        if isinstance(v, ir.PushField):
            return {(("push", v.index),): 1}
        if isinstance(v, ir.Builtin):
            if v.name == "LocalInvocationId":
                return {(("lid", v.component),): 1}
            if v.name == "WorkgroupId" and self.dims > 1:
                return {(("grp", v.component),): 1}
            return opaque
        if isinstance(v, ir.Read | ir.ArgRead):
            key = id(v.local) if isinstance(v, ir.Read) else id(v.param)
            value = self.assigned.get(key)
            return opaque if value is None else self.of(value)
        if not isinstance(v, ir.Op):
            return opaque
        if is_group_linear(v) and self.dims == 1:
            return {(("grp", 0),): 1}
        args = v.args
        if v.opname in _LINEAR_OPS and len(args) == 1:
            return self.of(args[0])
        if v.opname == "OpIAdd":
            return _add(self.of(args[0]), self.of(args[1]))
        if v.opname == "OpISub":
            return _add(self.of(args[0]), self.of(args[1]), -1)
        if v.opname == "OpIMul":
            return _mul(self.of(args[0]), self.of(args[1]))
        if v.opname == "OpSNegate":
            return _add({}, self.of(args[0]), -1)
        if v.opname == "OpShiftLeftLogical" and isinstance(args[1], ir.Const):
            return _mul(self.of(args[0]), _const(1 << int(args[1].value)))
        return opaque


def _member_offset(elem: Any, members: tuple[int, ...]) -> int:
    off, t = 0, mem_type(elem)
    for m in members:
        assert isinstance(t, Struct)
        off += field_offsets(t)[m]
        t = mem_type(t.fields[m][1])
    return off


def assignments(fn: ir.Function) -> dict[int, ir.Value]:
    """The variables of `fn` and of its device functions assigned exactly once, and the
    parameters of device functions called from one place, and their values."""
    count: dict[int, int] = {}
    value: dict[int, ir.Value] = {}
    for x in ir.walk(fn):
        pairs = [(x.local, x.value)] if isinstance(x, ir.Assign) else \
            list(zip(x.fn.params, x.args, strict=False)) if isinstance(x, ir.Call) else []
        for target, v in pairs:
            count[id(target)] = count.get(id(target), 0) + 1
            if isinstance(v, ir.Value):
                value[id(target)] = v
    return {k: v for k, v in value.items() if count[k] == 1}


def summarize(fn: ir.Function, dims: int) -> tuple[list[Access], Forms]:
    """Every global memory access of a kernel (its device functions included), in no
    particular order, and the symbolic forms it was computed with."""
    forms = Forms(assignments(fn), dims)
    out = []
    for x in ir.walk(fn):
        if isinstance(x, ir.Load | ir.Store | ir.Atomic | ir.MatrixLoad | ir.MatrixStore):
            place = x.place
            if not isinstance(place.root, ir.GlobalRoot) or place.root in _UNORDERED:
                continue
            form = _add(forms.of(place.index), _const(_member_offset(place.root.elem,
                                                                     place.members)))
            matrix = isinstance(x, ir.MatrixLoad | ir.MatrixStore)
            if matrix:  # strided rows: only the root pointer counts
                form = _add(form, {(("opaque", id(x)),): 1})
            write = isinstance(x, ir.Store | ir.Atomic | ir.MatrixStore)
            read = isinstance(x, ir.Load | ir.Atomic | ir.MatrixLoad)
            out.append(Access(x, write, read, form, layout(place.ty)[0]))
    return out, forms


# -- at a launch ---------------------------------------------------------------------------

Locate = Callable[[int], tuple[int, int] | None]


def concrete(a: Access, values: dict[int, int], pointers: set[int], dom: Domain,
             locate: Locate) -> Concrete:
    """The access with the argument values of a launch. `pointers` are the argument
    fields holding addresses; `locate` gives the allocation holding an address."""
    exact: dict[Mono, int] = {}
    ok = True
    for mono, c in a.form.items():
        rest = []
        for atom in mono:
            if atom[0] == "push" and atom[1] in values:
                c *= values[atom[1]]
            elif atom[0] in ("lid", "grp"):
                rest.append(atom)
            else:
                ok = False
        if ok:
            key = tuple(rest)
            exact[key] = exact.get(key, 0) + c
    if ok:
        lo, hi = _span(exact, dom)
        form = tuple(sorted((m, c) for m, c in exact.items() if c))
        return Concrete(form, a.size, lo, hi + a.size)
    roots = [m[0][1] for m, c in a.form.items() if len(m) == 1 and m[0][0] == "push" and
             m[0][1] in pointers and c == 1]
    where = locate(values[roots[0]]) if len(roots) == 1 and roots[0] in values else None
    lo, hi = where if where is not None else _EVERYTHING
    return Concrete(None, a.size, lo, hi)


def _span(form: dict[Mono, int], dom: Domain) -> tuple[int, int]:
    """The least and greatest value of a form over the work-items that run."""
    form = dict(form)
    lo = hi = form.pop((), 0)
    local = dict(dom.extents)
    for comp, size in enumerate(dom.sizes):
        g, lid = (("grp", comp),), (("lid", comp),)
        c = form.get(lid, 0)
        if size and c and form.get(g) == c * local[lid[0]]:
            # c * (group * local + lid): c times the global id, below the range
            del form[g], form[lid]
            lo += min(0, c * (size - 1))
            hi += max(0, c * (size - 1))
    for mono, c in form.items():
        top = 1
        for atom in mono:
            top *= max(dom.extent(atom) - 1, 0)
        lo += min(0, c * top)
        hi += max(0, c * top)
    return lo, hi


def _linear(form: tuple) -> dict[Atom, int] | None:
    out = {}
    for mono, c in form:
        if len(mono) > 1:
            return None
        if mono:
            out[mono[0]] = c
    return out


def _hits(terms: list[tuple[int, int]], lo: int, hi: int, nonzero: bool) -> bool:
    """Whether some differences d_i (|d_i| < e_i), not all zero when `nonzero`, put
    sum(c_i * d_i) in [lo, hi]; True where the search runs out of budget."""
    # an id the address does not depend on moves freely
    free = any(not c and e > 1 for c, e in terms)
    terms = sorted(((abs(c), e) for c, e in terms if c and e > 1), reverse=True)
    budget = [_SEARCH_BUDGET]

    def go(i: int, lo: int, hi: int, moved: bool) -> bool:
        budget[0] -= 1
        if budget[0] < 0:
            return True
        if i == len(terms):
            return lo <= 0 <= hi and (moved or not nonzero)
        c, e = terms[i]
        reach = sum(cc * (ee - 1) for cc, ee in terms[i + 1:])
        first = max(-(e - 1), -((reach - lo) // c))  # c*d >= lo - reach
        last = min(e - 1, (hi + reach) // c)
        for d in range(first, last + 1):
            if go(i + 1, lo - c * d, hi - c * d, moved or d != 0):
                return True
        return False

    return go(0, lo, hi, free)


def relate(x: Concrete, y: Concrete, dom: Domain) -> str:
    """How x (of an earlier kernel) and y (of a later one) may overlap across
    work-items: "disjoint", "same", "item", "group" or "conflict"."""
    if x.hi <= y.lo or y.hi <= x.lo:
        return "disjoint"
    if x.form is None or y.form is None:
        return "conflict"
    fx, fy = _linear(x.form), _linear(y.form)
    if fx is None or fy is None:
        return "conflict"
    kx, ky = dict(x.form).get((), 0), dict(y.form).get((), 0)
    lo, hi = ky - kx - x.size + 1, ky - kx + y.size - 1
    if fx == fy:
        terms = [(fx.get(a, 0), e) for a, e in dom.extents]
        if not _hits(terms, lo, hi, True):
            if not lo <= 0 <= hi:
                return "disjoint"
            return "same" if kx == ky and x.size == y.size else "item"
    gx = {a: c for a, c in fx.items() if a[0] == "grp"}
    gy = {a: c for a, c in fy.items() if a[0] == "grp"}
    if gx != gy or not gx:
        return "conflict"
    lx = _span({(a,): c for a, c in fx.items() if a[0] == "lid"}, dom)
    ly = _span({(a,): c for a, c in fy.items() if a[0] == "lid"}, dom)
    terms = [(gx.get(a, 0), e) for a, e in dom.extents if a[0] == "grp"]
    if _hits(terms, lo - (lx[1] - ly[0]), hi - (lx[0] - ly[1]), True):
        return "conflict"
    return "group"


__all__ = ["Access", "Concrete", "Domain", "Forms", "concrete", "domain", "relate",
           "summarize"]
