"""Lowering of `joint_matrix` (sycl_ext_oneapi_matrix), two ways chosen per device.

- **Cooperative**: on a device with cooperative matrices (`KernelSpec.matrix` lists the
  combinations it multiplies), a joint_matrix is a variable of a SPIR-V cooperative
  matrix type in sub-group scope, and loads, stores and multiply-adds are the
  `SPV_KHR_cooperative_matrix` instructions: tensor cores on NVIDIA.
- **Portable**: elsewhere each work-item holds the whole tile in a private array, row
  after row, and computes all of it. Loads and multiply-adds are loops; a store writes
  each element from one work-item of the sub-group (element e from the work-item whose
  sub-group id is e modulo the sub-group size), so the sub-group writes each once. The
  results are those of the cooperative form, since every work-item of the sub-group makes
  the same calls on the same data.

  lavapipe stops a work-item's loops once they have run 65535 iterations together (each
  loop entered after that runs once), so the portable loops take few: an iteration
  handles a block of a row's elements (`PORTABLE_BLOCK`), and consecutive fills, copies,
  loads and multiply-adds of tiles alike share one loop (a sweep) where that keeps every
  result. A loop per call and element spent them within 10 steps of a k loop loading
  four A and four B 16x16 tiles into sixteen accumulators; a step now takes 131.

A load may read through a pointer to unsigned integers that pack several elements each,
or to vectors of them (local memory filled 8 or 16 bytes at a time); its stride then
counts those words or vectors, as SPIR-V's does. In the cooperative form the pointer and
stride of a load or store must keep each row (or column) aligned to the lesser of 16 bytes
and the row's size, as Vulkan requires: the code tells the driver so (it then moves rows
whole), and constant strides are checked here.

Elements reached by `joint_matrix_apply` are those a work-item owns: all of them in the
portable form, its share (OpCooperativeMatrixLengthKHR) in the cooperative one, so `fn`
must compute each element from that element alone.
"""

from __future__ import annotations

import ast
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..exceptions import errc
from . import if_device, ir
from .matrix import FUNCTIONS, layout, use
from .type_registry import element_type
from .typesys import BOOL, I32, U32, ArrayType, MatrixType, Scalar, VecType, mem_type
from .typesys import layout as memory_layout
from .values import AccessorV, ItemV, PtrV, PyV

# tiles larger than this are refused in the portable form, where each work-item holds one
MAX_PORTABLE_ELEMENTS = 64 * 64
# elements of a row one portable loop iteration handles: fewer iterations leave more of
# lavapipe's 65535 to the kernel's own loops, more elements make more code to compile
PORTABLE_BLOCK = 4
_SIGNED_OPERANDS = (1, 2, 4, 8)  # MatrixA/B/C/ResultSignedComponentsKHR
COOPERATIVE_ASPECT = "ext_oneapi_cooperative_matrix"


@dataclass(frozen=True)
class MatrixTarget:
    """How a device runs joint_matrix: with cooperative matrices of the listed
    combinations (element types of A, B, C and the result as dtype names, then M, N, K),
    or portably; and its sub-group size, which a work-group must be a multiple of."""

    cooperative: bool
    sub_group_size: int
    combinations: tuple[tuple[str, str, str, str, int, int, int], ...] = ()


@dataclass(eq=False)
class MatrixV:
    """A joint_matrix in device code: its variable, and its elements as a private root
    (the array of the portable form, or the work-item's share of the cooperative one)."""

    ty: MatrixType
    layout: layout
    local: ir.Local
    root: ir.PrivateRoot

    def describe(self) -> str:
        return f"a {self.ty.rows}x{self.ty.cols} {self.ty.elem!r} joint_matrix " \
            f"(use.{self.ty.use})"


def is_matrix_function(name: str) -> bool:
    return name in FUNCTIONS


def call(fl: Any, name: str, args: list[Any], kwargs: dict[str, Any], node: ast.AST) -> Any:
    """A call of one of the joint_matrix functions in device code."""
    fl.m.need_nd(fl, node, name)
    if not args or not (isinstance(args[0], ItemV) and args[0].kind == "sub_group"):
        raise fl.err(node, f"{name} takes the sub_group first (sg = "
                     "item.get_sub_group())")
    fl.m.uses_subgroups = True
    rest = args[1:]
    if name == "joint_matrix":
        return _new(fl, rest, kwargs, node)
    handler = _FUNCTIONS[name]
    return handler(fl, rest, kwargs, node)


# -- creation --------------------------------------------------------------------------------

def _new(fl: Any, args: list[Any], kwargs: dict[str, Any], node: ast.AST) -> MatrixV:
    names = ("dtype", "use", "rows", "cols", "layout")
    given = dict(zip(names, args, strict=False))
    for k, v in kwargs.items():
        if k not in names or k in given:
            raise fl.err(node, f"joint_matrix() got an unexpected argument '{k}'")
        given[k] = v
    missing = [n for n in names[:4] if n not in given]
    if missing:
        raise fl.err(node, f"joint_matrix() is missing '{missing[0]}': joint_matrix(sg, "
                     "dtype, use, rows, cols[, layout])")
    const = {k: fl.m.intr.const(fl, v, node) for k, v in given.items()}
    try:
        elem = element_type(const["dtype"])
    except Exception:
        elem = None
    if not isinstance(elem, Scalar) or elem.is_bool:
        raise fl.err(node, f"a joint_matrix holds numbers, not {const['dtype']!r}")
    role = const["use"]
    if not isinstance(role, use):
        raise fl.err(node, f"joint_matrix's use must be a matrix.use, got {role!r}")
    rows, cols = const["rows"], const["cols"]
    if not all(isinstance(n, int) and n > 0 for n in (rows, cols)):
        raise fl.err(node, f"joint_matrix's rows and cols must be positive constants, got "
                     f"{rows!r} and {cols!r}")
    lay = const.get("layout", layout.dynamic)
    if not isinstance(lay, layout):
        raise fl.err(node, f"joint_matrix's layout must be a matrix.layout, got {lay!r}")
    if role is use.accumulator and lay is not layout.dynamic:
        raise fl.err(node, "an accumulator's layout is given where it is loaded or stored: "
                     "leave it out (layout.dynamic)")
    if role is not use.accumulator and lay is layout.dynamic:
        raise fl.err(node, f"a use.{role.value} matrix needs layout.row_major or "
                     "layout.col_major")
    fl.m.use_type(elem)
    ty = MatrixType(elem, rows, cols, role.value)
    target = _target(fl)
    _check_group(fl, target, node)
    _check_shape(fl, target, ty, node)
    if target.cooperative:
        fl.m.aspects.add(COOPERATIVE_ASPECT)
        local = fl.new_local("joint_matrix", ty)
    else:
        if rows * cols > MAX_PORTABLE_ELEMENTS:
            raise fl.err(node, f"a {rows}x{cols} joint_matrix is larger than this device "
                         f"holds without cooperative matrices ({MAX_PORTABLE_ELEMENTS} "
                         "elements)")
        local = fl.new_local("joint_matrix", ArrayType(mem_type(elem), rows * cols))
    return MatrixV(ty, lay, local, ir.PrivateRoot(elem, rows * cols, local))


def _target(fl: Any) -> MatrixTarget:
    return fl.m.spec.matrix or MatrixTarget(False, 0)


def _check_group(fl: Any, target: MatrixTarget, node: ast.AST) -> None:
    size = target.sub_group_size
    local = 1
    for n in fl.m.local:
        local *= n
    if size and local % size:
        raise fl.err(node, f"joint_matrix needs whole sub-groups: the work-group size "
                     f"{tuple(fl.m.local)} is not a multiple of this device's sub-group "
                     f"size {size}")


def _check_shape(fl: Any, target: MatrixTarget, ty: MatrixType, node: ast.AST) -> None:
    """A tile must be the A, B or accumulator of a combination the device multiplies,
    cooperative or portable (a target of no device lists none, and checks nothing)."""
    if not target.combinations:
        return
    name = ty.elem.dtype.name
    for a, b, c, d, m, n, k in target.combinations:
        roles = {"a": ((a,), m, k), "b": ((b,), k, n), "accumulator": ((c, d), m, n)}
        types, rows, cols = roles[ty.use]
        if name in types and (ty.rows, ty.cols) == (rows, cols):
            return
    raise _unsupported(fl, node, f"a {ty.rows}x{ty.cols} {name} matrix of use.{ty.use}",
                       target)


def _unsupported(fl: Any, node: ast.AST, what: str, target: MatrixTarget) -> Exception:
    listed = ", ".join(f"{a}x{b}->{d} {m}x{n}x{k}" for a, b, c, d, m, n, k in
                       target.combinations)
    return fl.err(node, f"{what} is not among the joint_matrix combinations this device "
                  f"multiplies ({listed}); query them with "
                  "device.get_info(syclexp.info.device.matrix_combinations)",
                  errc.kernel_not_supported)


def _matrix(fl: Any, v: Any, node: ast.AST, what: str) -> MatrixV:
    if not isinstance(v, MatrixV):
        raise fl.err(node, f"{what} must be a joint_matrix")
    return v


def _elements(fl: Any, m: MatrixV, body: Callable[[ir.Value], None]) -> None:
    """Emits `body(i)` for each element index i this work-item holds."""
    if not _cooperative(fl):
        _blocks(fl, m, _each(m, body))
        return
    count = ir.Op("OpBitcast", I32, [ir.Op("OpCooperativeMatrixLengthKHR", U32,
                                           [ir.TypeRef(m.ty)])])
    _loop(fl, "matrix.i", ir.Const(I32, 0), count, ir.Const(I32, 1), body)


def _block(m: MatrixV) -> int:
    """Elements of a portable tile one loop iteration handles: PORTABLE_BLOCK, or the
    largest power of two below it that divides a row, so that a block lies in one row."""
    n = 1
    while n * 2 <= PORTABLE_BLOCK and m.ty.cols % (n * 2) == 0:
        n *= 2
    return n


def _each(m: MatrixV, body: Callable[[ir.Value], None]) -> Callable[[ir.Value], None]:
    """A block's body running `body(i)` for each element index i of the block."""
    def block(first: ir.Value) -> None:
        for j in range(_block(m)):
            body(_add(first, ir.Const(I32, j)))

    return block


def _row_and_column(first: ir.Value, cols: int) -> tuple[ir.Value, ir.Value]:
    """The row of a block starting at element `first`, and the block's first column."""
    return (ir.Op("OpSDiv", I32, [first, ir.Const(I32, cols)]),
            ir.Op("OpSMod", I32, [first, ir.Const(I32, cols)]))


def _blocks(fl: Any, m: MatrixV,
            block: Callable[[ir.Value], None]) -> tuple[ir.Loop, ir.Local]:
    """A loop running `block(first)` for the first element index of each block of m."""
    return _loop(fl, "matrix.i", ir.Const(I32, 0), ir.Const(I32, m.ty.rows * m.ty.cols),
                 ir.Const(I32, _block(m)), block)


@dataclass(eq=False)
class _Sweep:
    """A loop over the blocks of portable tiles: their elements and block size, the
    tiles its body writes (each at the iteration's elements) and those it reads at any."""

    counter: ir.Local
    shape: tuple[int, int]
    writes: set[ir.Local]
    gathers: set[ir.Local]


# the sweeps of the code being lowered, by their loops (an entry goes with its loop)
_SWEEPS: weakref.WeakKeyDictionary[ir.Loop, _Sweep] = weakref.WeakKeyDictionary()


def _sweep(fl: Any, m: MatrixV, block: Callable[[ir.Value], None], writes: MatrixV,
           gathers: tuple[MatrixV, ...] = ()) -> None:
    """Emits `block(first)` for each block of the portable tile m; a block writes tile
    `writes` at its own elements only, and may read `gathers` at any. It joins the sweep
    emitted just before when that has blocks alike and neither writes a tile the other
    gathers: each iteration then runs the earlier calls on its elements before this one,
    as separate loops would."""
    shape = (m.ty.rows * m.ty.cols, _block(m))
    reads = {g.local for g in gathers}
    last = fl.out[-1] if fl.out else None
    sweep = _SWEEPS.get(last) if isinstance(last, ir.Loop) else None
    if sweep is None or sweep.shape != shape or reads & sweep.writes or \
            writes.local in sweep.gathers:
        loop, counter = _blocks(fl, m, block)
        _SWEEPS[loop] = _Sweep(counter, shape, {writes.local}, reads)
        return
    saved = fl.out
    fl.out = last.body
    block(ir.Read(sweep.counter))
    fl.out = saved
    sweep.writes.add(writes.local)
    sweep.gathers |= reads


def _loop(fl: Any, name: str, start: ir.Value, stop: ir.Value, step: ir.Value,
          body: Callable[[ir.Value], None]) -> tuple[ir.Loop, ir.Local]:
    counter = fl.new_local(name, I32)
    fl.emit(ir.Assign(counter, start))
    saved = fl.out
    fl.out = []
    body(ir.Read(counter))
    inner = fl.out
    fl.out = saved
    loop = ir.Loop([], ir.Op("OpSLessThan", BOOL, [ir.Read(counter), stop]), inner,
                   [ir.Assign(counter, ir.Op("OpIAdd", I32, [ir.Read(counter), step]))])
    fl.emit(loop)
    return loop, counter


def _element(m: MatrixV, i: ir.Value) -> ir.Place:
    return ir.Place(m.root, i, (), mem_type(m.ty.elem))


def _add(a: ir.Value, b: ir.Value) -> ir.Value:
    if isinstance(b, ir.Const) and b.value == 0:
        return a
    return ir.Op("OpIAdd", I32, [a, b])


def _mul(a: ir.Value, b: ir.Value) -> ir.Value:
    return ir.Op("OpIMul", I32, [a, b])


def _cooperative(fl: Any) -> bool:
    return _target(fl).cooperative


# -- fill, copy, apply -------------------------------------------------------------------------

def _fill(fl: Any, args: list[Any], kwargs: dict[str, Any], node: ast.AST) -> PyV:
    if len(args) != 2 or kwargs:
        raise fl.err(node, "joint_matrix_fill(sg, m, value)")
    m = _matrix(fl, args[0], node, "joint_matrix_fill's m")
    v = fl.convert(fl.scalar(args[1], node, m.ty.elem), m.ty.elem, node)
    if _cooperative(fl):
        fl.emit(ir.Assign(m.local, ir.Compose(m.ty, [v])))
    else:
        _sweep(fl, m, _each(m, lambda i: fl.emit(ir.Store(_element(m, i), v))), m)
    return PyV(None)


def _copy(fl: Any, args: list[Any], kwargs: dict[str, Any], node: ast.AST) -> PyV:
    if len(args) != 2 or kwargs:
        raise fl.err(node, "joint_matrix_copy(sg, src, dst)")
    src = _matrix(fl, args[0], node, "joint_matrix_copy's src")
    dst = _matrix(fl, args[1], node, "joint_matrix_copy's dst")
    s, d = src.ty, dst.ty
    if (s.rows, s.cols, s.use) != (d.rows, d.cols, d.use):
        raise fl.err(node, f"joint_matrix_copy from {src.describe()} to {dst.describe()}: "
                     "the shapes and uses must match")
    if _cooperative(fl):
        value: ir.Value = ir.Read(src.local)
        if s.elem != d.elem:
            value = ir.Op(_convert_op(fl, s.elem, d.elem, node), d, [value])
        fl.emit(ir.Assign(dst.local, value))
        return PyV(None)

    def body(i: ir.Value) -> None:
        x = fl.convert(ir.Load(_element(src, i)), d.elem, node)
        fl.emit(ir.Store(_element(dst, i), x))

    _sweep(fl, src, _each(src, body), dst)
    return PyV(None)


def _convert_op(fl: Any, src: Scalar, dst: Scalar, node: ast.AST) -> str:
    if src.is_float and dst.is_float:
        return "OpFConvert"
    if src.is_float:
        return "OpConvertFToS" if dst.is_signed else "OpConvertFToU"
    if dst.is_float:
        return "OpConvertSToF" if src.is_signed else "OpConvertUToF"
    if src.is_signed == dst.is_signed:
        return "OpSConvert" if src.is_signed else "OpUConvert"
    raise fl.err(node, f"joint_matrix_copy cannot convert {src!r} to {dst!r} elements")


def _apply(fl: Any, args: list[Any], kwargs: dict[str, Any], node: ast.AST) -> PyV:
    if len(args) != 2 or kwargs:
        raise fl.err(node, "joint_matrix_apply(sg, m, fn), where fn takes an element and "
                     "returns its new value")
    m = _matrix(fl, args[0], node, "joint_matrix_apply's m")
    fn = args[1]
    t = m.ty.elem

    def body(i: ir.Value) -> None:
        place = _element(m, i)
        x = fl.convert(ir.Load(place), t, node) if place.ty != t else ir.Load(place)
        y = _call_element_function(fl, fn, x, node)
        fl.emit(ir.Store(place, fl.convert(fl.scalar(y, node, t), t, node)))

    _elements(fl, m, body)
    return PyV(None)


def _call_element_function(fl: Any, fn: Any, x: ir.Value, node: ast.AST) -> Any:
    if isinstance(fn, PyV) and isinstance(fn.obj, if_device.Body):
        return if_device.call_lambda(fl, fn.obj, [x], node, "joint_matrix_apply")
    if isinstance(fn, PyV) and callable(fn.obj):
        return fl.m.intr.call(fl, fn, [x], {}, node)
    raise fl.err(node, "joint_matrix_apply's fn must be a lambda or a function that takes "
                 "an element and returns its new value")


# -- memory ------------------------------------------------------------------------------------

def _pointer(fl: Any, v: Any, m: MatrixV, node: ast.AST, what: str,
             write: bool) -> PtrV:
    if isinstance(v, AccessorV):
        if write and not v.mode.writes:
            raise fl.err(node, f"{what}: a read_only accessor cannot be written")
        v = v.ptr
    if not isinstance(v, PtrV):
        raise fl.err(node, f"{what} must be a pointer to {m.ty.elem!r} (a USM pointer, "
                     "local memory or an accessor)")
    if mem_type(v.elem) != mem_type(m.ty.elem) and (write or not _packs(v.elem, m.ty.elem)):
        also = "" if write else f", or to unsigned integers packing {m.ty.elem!r}s"
        raise fl.err(node, f"{what} points to {v.elem!r}; {m.describe()} holds "
                     f"{m.ty.elem!r}: it must point to {m.ty.elem!r}{also}")
    return v


def _packs(word: Any, elem: Scalar) -> bool:
    """Whether `word` is an unsigned integer holding several `elem`s, or a vector of such
    integers (a load may read a tile through such a pointer: local memory filled 8 or 16
    bytes at a time, say)."""
    if isinstance(word, VecType):
        return word.count <= 4 and _packs(word.elem, elem)
    return isinstance(word, Scalar) and word.kind == "u" and word.bits > elem.bits and \
        word.bits % elem.bits == 0


def _layout_of(fl: Any, m: MatrixV, given: Any, node: ast.AST, what: str) -> layout:
    if given is None:
        if m.layout is layout.dynamic:
            raise fl.err(node, f"{what} of an accumulator needs its layout "
                         "(layout.row_major or layout.col_major)")
        return m.layout
    lay = fl.m.intr.const(fl, given, node)
    if lay not in (layout.row_major, layout.col_major):
        raise fl.err(node, f"{what}'s layout must be layout.row_major or layout.col_major, "
                     f"got {lay!r}")
    if m.layout is not layout.dynamic and lay is not m.layout:
        raise fl.err(node, f"{what}: {m.describe()} is {m.layout.name}, not {lay.name}")
    return lay


def _memory_args(fl: Any, name: str, args: list[Any], kwargs: dict[str, Any],
                 node: ast.AST) -> tuple[MatrixV, PtrV, ir.Value, layout]:
    names = ("m", "ptr", "stride", "layout")
    given = dict(zip(names, args, strict=False))
    for k, v in kwargs.items():
        if k not in names or k in given:
            raise fl.err(node, f"{name}() got an unexpected argument '{k}'")
        given[k] = v
    if len(given) < 3 or "stride" not in given:
        raise fl.err(node, f"{name}(sg, m, ptr, stride[, layout])")
    m = _matrix(fl, given["m"], node, f"{name}'s m")
    ptr = _pointer(fl, given["ptr"], m, node, f"{name}'s ptr", name == "joint_matrix_store")
    stride = fl.scalar(given["stride"], node, I32)
    if not stride.ty.is_int:
        raise fl.err(node, f"{name}'s stride must be an integer, got {stride.ty!r}")
    lay = _layout_of(fl, m, given.get("layout"), node, name)
    if _cooperative(fl) and isinstance(stride, ir.Const):
        _check_stride(fl, m, ptr, stride.value, lay, node, name)
    return m, ptr, fl.convert(stride, I32, node), lay


def _row_alignment(m: MatrixV, lay: layout) -> int:
    """Vulkan's rule for cooperative loads and stores: rows (columns) start on the lesser
    of 16 bytes and their own size. The code may assume it (so the driver can load rows
    whole); a pointer that breaks it is the caller's error, as in Vulkan."""
    return min(16, (m.ty.cols if lay is layout.row_major else m.ty.rows) * m.ty.elem.nbytes)


def _check_stride(fl: Any, m: MatrixV, ptr: PtrV, stride: int, lay: layout,
                  node: ast.AST, name: str) -> None:
    size = memory_layout(ptr.elem)[0]
    need = _row_alignment(m, lay)
    if stride * size % need:
        raise fl.err(node, f"{name}: a stride of {stride} elements puts rows {stride * size} "
                     f"bytes apart; cooperative matrices need a multiple of {need}")


def _position(fl: Any, ptr: PtrV, r: ir.Value, c: ir.Value, stride: ir.Value,
              lay: layout, node: ast.AST) -> ir.Place:
    index = _add(_mul(r, stride), c) if lay is layout.row_major else \
        _add(_mul(c, stride), r)
    return fl.index_place(ptr, index, node)


def _packed(fl: Any, ptr: PtrV, m: MatrixV, r: ir.Value, c: ir.Value, stride: ir.Value,
            lay: layout, node: ast.AST) -> ir.Value:
    """Element (r, c) read through a pointer to words packing several elements, or to
    vectors of such words: rows (columns) are `stride` words (vectors) apart, elements lie
    in a row from the low bits of the first word up."""
    word = ptr.elem
    lane = word.elem if isinstance(word, VecType) else word
    per_lane = lane.bits // m.ty.elem.bits
    per = per_lane * (word.count if isinstance(word, VecType) else 1)
    major, minor = (r, c) if lay is layout.row_major else (c, r)
    index = _add(_mul(major, stride), ir.Op("OpSDiv", I32, [minor, ir.Const(I32, per)]))
    within = ir.Op("OpSMod", I32, [minor, ir.Const(I32, per)])
    bits: ir.Value = ir.Load(fl.index_place(ptr, index, node))
    if isinstance(word, VecType):
        bits = ir.Op("OpVectorExtractDynamic", lane,
                     [bits, ir.Op("OpSDiv", I32, [within, ir.Const(I32, per_lane)])])
        within = ir.Op("OpSMod", I32, [within, ir.Const(I32, per_lane)])
    shift = _mul(within, ir.Const(I32, m.ty.elem.bits))
    narrow = Scalar("u", m.ty.elem.bits)
    return ir.Op("OpBitcast", m.ty.elem, [ir.Op("OpUConvert", narrow, [
        ir.Op("OpShiftRightLogical", lane, [bits, shift])])])


def _start(fl: Any, ptr: PtrV, node: ast.AST) -> ir.Place:
    return fl.index_place(ptr, ir.Const(I32, 0), node)


def _load(fl: Any, args: list[Any], kwargs: dict[str, Any], node: ast.AST) -> PyV:
    m, ptr, stride, lay = _memory_args(fl, "joint_matrix_load", args, kwargs, node)
    if _cooperative(fl):
        fl.emit(ir.Assign(m.local, ir.MatrixLoad(_start(fl, ptr, node), lay.value,
                                                 stride, m.ty, _row_alignment(m, lay))))
        return PyV(None)
    packed = mem_type(ptr.elem) != mem_type(m.ty.elem)

    def block(first: ir.Value) -> None:
        r, start = _row_and_column(first, m.ty.cols)
        for j in range(_block(m)):
            c = _add(start, ir.Const(I32, j))
            value = _packed(fl, ptr, m, r, c, stride, lay, node) if packed else \
                ir.Load(_position(fl, ptr, r, c, stride, lay, node))
            fl.emit(ir.Store(_element(m, _add(first, ir.Const(I32, j))), value))

    _sweep(fl, m, block, m)
    return PyV(None)


def _store(fl: Any, args: list[Any], kwargs: dict[str, Any], node: ast.AST) -> PyV:
    m, ptr, stride, lay = _memory_args(fl, "joint_matrix_store", args, kwargs, node)
    if _cooperative(fl):
        fl.emit(ir.MatrixStore(_start(fl, ptr, node), ir.Read(m.local), lay.value, stride,
                               _row_alignment(m, lay)))
        return PyV(None)
    cols = m.ty.cols
    lane = fl.m.queries.sub_group_value("sg_local_id")
    size = fl.m.queries.sub_group_value("sg_local_range")

    def body(e: ir.Value) -> None:
        r, c = _row_and_column(e, cols)
        fl.emit(ir.Store(_position(fl, ptr, r, c, stride, lay, node),
                         ir.Load(_element(m, e))))

    _loop(fl, "matrix.e", lane, ir.Const(I32, m.ty.rows * cols), size, body)
    return PyV(None)


# -- multiply-add ------------------------------------------------------------------------------

def _mad(fl: Any, args: list[Any], kwargs: dict[str, Any], node: ast.AST) -> PyV:
    if len(args) != 4 or kwargs:
        raise fl.err(node, "joint_matrix_mad(sg, d, a, b, c) computes d = a * b + c")
    d, a, b, c = (_matrix(fl, v, node, f"joint_matrix_mad's {n}")
                  for v, n in zip(args, "dabc", strict=True))
    for m, role, n in ((a, "a", "a"), (b, "b", "b"), (c, "accumulator", "c"),
                       (d, "accumulator", "d")):
        if m.ty.use != role:
            raise fl.err(node, f"joint_matrix_mad's {n} must be a use.{role} matrix, got "
                         f"{m.describe()}")
    rows, inner, cols = a.ty.rows, a.ty.cols, b.ty.cols
    if b.ty.rows != inner or (c.ty.rows, c.ty.cols) != (rows, cols) or \
            (d.ty.rows, d.ty.cols) != (rows, cols):
        raise fl.err(node, f"joint_matrix_mad of {a.ty.rows}x{a.ty.cols} (a), "
                     f"{b.ty.rows}x{b.ty.cols} (b), {c.ty.rows}x{c.ty.cols} (c) into "
                     f"{d.ty.rows}x{d.ty.cols} (d): a is MxK, b KxN, c and d MxN")
    target = _target(fl)
    combo = (a.ty.elem.dtype.name, b.ty.elem.dtype.name, c.ty.elem.dtype.name,
             d.ty.elem.dtype.name, rows, cols, inner)
    if target.combinations and combo not in target.combinations:
        raise _unsupported(fl, node, f"{combo[0]}x{combo[1]}+{combo[2]}->{combo[3]} at "
                           f"{rows}x{cols}x{inner}", target)
    if target.cooperative:
        mask = 0
        for bit, m in zip(_SIGNED_OPERANDS, (a, b, c, d), strict=True):
            if m.ty.elem.is_signed:
                mask |= bit
        operands: list[Any] = [ir.Read(a.local), ir.Read(b.local), ir.Read(c.local)]
        if mask:
            operands.append(ir.Lit(mask))
        fl.emit(ir.Assign(d.local, ir.Op("OpCooperativeMatrixMulAddKHR", d.ty, operands)))
        return PyV(None)
    _portable_mad(fl, d, a, b, c, node)
    return PyV(None)


def _portable_mad(fl: Any, d: MatrixV, a: MatrixV, b: MatrixV, c: MatrixV,
                  node: ast.AST) -> None:
    """d[r][n] = c[r][n] + sum over k of a[r][k] * b[k][n], in d's element type, k in
    order; a block of a row of d at a time, reading that row of a once."""
    t = d.ty.elem
    inner, cols = a.ty.cols, b.ty.cols
    add, mul = ("OpFAdd", "OpFMul") if t.is_float else ("OpIAdd", "OpIMul")

    def block(first: ir.Value) -> None:
        r, start = _row_and_column(first, cols)
        row = _mul(r, ir.Const(I32, inner))
        xs = [fl.convert(ir.Load(_element(a, _add(row, ir.Const(I32, k)))), t, node)
              for k in range(inner)]
        for j in range(_block(d)):
            e = _add(first, ir.Const(I32, j))
            n = _add(start, ir.Const(I32, j))
            acc = fl.convert(ir.Load(_element(c, e)), t, node)
            for k, x in enumerate(xs):
                y = fl.convert(ir.Load(_element(b, _add(ir.Const(I32, k * cols), n))), t,
                               node)
                acc = ir.Op(add, t, [acc, ir.Op(mul, t, [x, y])])
            fl.emit(ir.Store(_element(d, e), acc))

    _sweep(fl, d, block, d, (a, b))


_FUNCTIONS = {
    "joint_matrix_fill": _fill, "joint_matrix_copy": _copy, "joint_matrix_apply": _apply,
    "joint_matrix_load": _load, "joint_matrix_store": _store, "joint_matrix_mad": _mad,
}

__all__ = ["MatrixTarget", "MatrixV", "call", "is_matrix_function"]
