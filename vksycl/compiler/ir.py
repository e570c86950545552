"""The typed IR between the frontend and codegen.

Expressions are DAGs (an operand may be shared) whose operations are already resolved to
SPIR-V operations with exact types (the frontend applied promotion and Python semantics);
statements form structured control flow. Memory is reached through a `Place` (a root
plus a position and struct member indices). Global memory is one root per element type,
its positions 64-bit device addresses (uint64 values: pointer arithmetic, comparisons,
variables and pointers stored in memory are integer operations); codegen turns an
address into a `PhysicalStorageBuffer` pointer only to load, store or update through it.
Work-group and private memory keep SPIR-V's logical model: a static array and an int32
element offset.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from .typesys import Type

# operations on behalf of a whole group: never evaluated speculatively, moved or duplicated
COLLECTIVE_OPS = ("OpControlBarrier", "OpGroupNonUniform")


def each_once(stack: list[Any]) -> Iterator[Any]:
    """Pops `stack` until it is empty, yielding each node once; callers push the children
    they want walked. Shared operands make a walk as a tree exponential."""
    seen: set[int] = set()
    while stack:
        x = stack.pop()
        if id(x) not in seen:
            seen.add(id(x))
            yield x


class Value:
    ty: Type


@dataclass(eq=False)
class Const(Value):
    ty: Type
    value: Any


@dataclass(eq=False)
class Local:
    """A function-scope variable (an OpVariable in the Function storage class)."""

    name: str
    ty: Type  # Scalar, or ArrayType for private arrays


@dataclass(eq=False)
class Read(Value):
    local: Local
    ty: Type = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
        self.ty = self.local.ty


@dataclass(eq=False)
class Param:
    """A SPIR-V function parameter: a scalar value or a pointer to a memory root."""

    name: str
    ty: Type
    root: Root | None = None  # set for pointer parameters


@dataclass(eq=False)
class ArgRead(Value):
    param: Param
    ty: Type = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
        self.ty = self.param.ty


@dataclass(eq=False)
class PushField(Value):
    """A kernel argument: a push-constant field, or a field of the argument block in
    device memory for a kernel compiled with its arguments there."""

    index: int
    ty: Type


@dataclass(eq=False)
class Builtin(Value):
    """A component of a compute built-in input (GlobalInvocationId, ...), as int32."""

    name: str
    component: int
    ty: Type


@dataclass(eq=False)
class Op(Value):
    """One SPIR-V instruction; `args` are Values or `Lit` literal operands."""

    opname: str
    ty: Type
    args: list[Any]


@dataclass(frozen=True)
class Lit:
    """A literal (non-id) operand."""

    value: Any


@dataclass(frozen=True)
class TypeRef:
    """A type operand (OpCooperativeMatrixLengthKHR takes the matrix type itself)."""

    ty: Type


@dataclass(frozen=True)
class ScopeId:
    """An id operand holding a uint32 constant (scopes, memory semantics)."""

    value: int


@dataclass(eq=False)
class Ext(Value):
    """A GLSL.std.450 extended instruction."""

    name: str
    ty: Type
    args: list[Value]


@dataclass(eq=False)
class Cond(Value):
    """`a if c else b`, evaluating only the taken side."""

    cond: Value
    a: Value
    b: Value
    ty: Type
    pre_a: list[Stmt] = field(default_factory=list)
    pre_b: list[Stmt] = field(default_factory=list)


@dataclass(eq=False)
class Call(Value):
    fn: Function
    args: list[Any]  # Values, or Root for pointer parameters
    ty: Type


@dataclass(eq=False)
class Extract(Value):
    """A member of a composite value (multi-value returns)."""

    base: Value
    index: int
    ty: Type


@dataclass(eq=False)
class Compose(Value):
    ty: Type
    parts: list[Value]


@dataclass(eq=False)
class Seq(Value):
    """Statements then a value: lets an expression need control flow (loops)."""

    stmts: list[Stmt]
    value: Value
    ty: Type = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
        self.ty = self.value.ty


# -- memory ----------------------------------------------------------------------------

class Root:
    """Something memory hangs off: global memory, a shared array, a private array, or a
    pointer parameter of a device function."""

    elem: Type
    space: str


@dataclass(eq=False)
class GlobalRoot(Root):
    """Global memory seen as `elem`s: positions in it are device addresses."""

    elem: Type
    space: str = "global"


@dataclass(eq=False)
class SharedRoot(Root):
    """Work-group memory: a Workgroup array of `length` elements."""

    elem: Type
    length: int
    name: str = "shared"
    space: str = "local"
    shape: tuple[int, ...] = ()


@dataclass(eq=False)
class PrivateRoot(Root):
    """A fixed-size private array (a Function-scope array variable)."""

    elem: Type
    length: int
    local: Local = None  # type: ignore[assignment]
    space: str = "private"
    shape: tuple[int, ...] = ()


@dataclass(eq=False)
class ParamRoot(Root):
    """A pointer parameter of a device function: which root shape it carries."""

    shape: Root
    param: Param = None  # type: ignore[assignment]

    @property
    def elem(self) -> Type:  # type: ignore[override]
        return self.shape.elem

    @property
    def space(self) -> str:  # type: ignore[override]
        return self.shape.space


@dataclass(eq=False)
class Place:
    """An element of a root at `index` (an int32 element index; in global memory the
    element's uint64 device address), then struct member indices `members`. `align` is
    the alignment a global access through it may assume, where that is not its type's
    (a vector at an address known only to be aligned to its elements)."""

    root: Root
    index: Value
    members: tuple[int, ...]
    ty: Type
    align: int = 0


@dataclass(eq=False)
class Load(Value):
    place: Place
    ty: Type = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
        self.ty = self.place.ty


@dataclass(eq=False)
class MatrixLoad(Value):
    """A cooperative matrix loaded from memory starting at `place`: rows (or columns, by
    `layout`: 0 row major, 1 column major) `stride` elements apart."""

    place: Place
    layout: int
    stride: Value
    ty: Type
    align: int  # what Vulkan requires of a row's (column's) start: its alignment in memory


@dataclass(eq=False)
class Atomic(Value):
    opname: str
    place: Place
    args: list[Value]
    ty: Type
    scope: int
    semantics: int


# -- statements --------------------------------------------------------------------------

class Stmt:
    pass


@dataclass(eq=False)
class Assign(Stmt):
    local: Local
    value: Value


@dataclass(eq=False)
class Store(Stmt):
    place: Place
    value: Value


@dataclass(eq=False)
class MatrixStore(Stmt):
    """A cooperative matrix stored to memory, as `MatrixLoad` reads it."""

    place: Place
    value: Value
    layout: int
    stride: Value
    align: int


@dataclass(eq=False)
class Eval(Stmt):
    value: Value


@dataclass(eq=False)
class If(Stmt):
    cond: Value
    then: list[Stmt]
    orelse: list[Stmt]


@dataclass(eq=False)
class Switch(Stmt):
    """Runs the body whose integer literals include the selector's value; none runs when
    no case matches (a virtual call's dispatch on a type tag)."""

    selector: Value
    cases: list[tuple[tuple[int, ...], list[Stmt]]]


@dataclass(eq=False)
class Loop(Stmt):
    """while True: pre; if not cond: break; body; (continue lands here) step. `control`
    is its SPIR-V loop control: "Unroll" asks the driver to unroll it (a short loop of a
    known count, or one the code asks to unroll), "DontUnroll" not to."""

    pre: list[Stmt]
    cond: Value | None
    body: list[Stmt]
    step: list[Stmt]
    control: str = "None"


class Break(Stmt):
    pass


class Continue(Stmt):
    pass


@dataclass(eq=False)
class Return(Stmt):
    value: Value | None


@dataclass(eq=False)
class Function:
    """A device function instance (one specialisation of a Python function)."""

    name: str
    params: list[Param]
    ret: Type
    body: list[Stmt] = field(default_factory=list)
    locals: list[Local] = field(default_factory=list)
    calls: list[Function] = field(default_factory=list)


def walk(fn: Function) -> list[Any]:
    """Every IR node of a function and of the device functions it calls, each once."""
    out: list[Any] = []
    stack: list[Any] = [fn.body]
    for x in each_once(stack):
        out.append(x)
        if isinstance(x, Call):
            stack.append(x.fn.body)
        if isinstance(x, list | tuple):
            stack.extend(x)
        elif dataclasses.is_dataclass(x) and not isinstance(x, Function | Local | Param | Root):
            stack.extend(getattr(x, f.name) for f in dataclasses.fields(x)
                         if f.name not in ("ty", "fn", "local", "param"))
    return out
