"""Compiling a kernel: frontend, passes, codegen, validation, reflection, and the caches.

A compiled kernel is cached in memory (keyed cheaply by code object, launch shape and the
types of captured values) and on disk (keyed by a fingerprint of the sources along the
static call tree, the types, the options and the compiler version), so a second process
loads the SPIR-V and its reflection instead of compiling again.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import logging
import os
import pickle
import sys
import types as pytypes
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import spirv_gen

from ..config import CHECKS, SPIRV_OPT, cache_dir
from ..exceptions import errc, exception
from ..types import dtype_key
from . import disk_cache
from .adjoint import adjoint_kernel
from .captures import captured_value, plain_object, runtime_number
from .codegen import Codegen, analyse
from .device_global import declared, device_global
from .host_bodies import device_view
from .module import ArgSlot, KernelModule, KernelSpec
from .source import code_span, function_source, source_text
from .typesys import layout, mem_type

COMPILER_VERSION = "vksycl-compiler-4"  # 2: pointers are device addresses; 3: device_global;
# 4: virtual calls


def _compiler_digest() -> str:
    """The compiler's own sources: editing the compiler invalidates the disk cache."""
    h = hashlib.sha256(COMPILER_VERSION.encode())
    for f in sorted(Path(__file__).parent.rglob("*.py")):
        h.update(f.read_bytes())
    return h.hexdigest()


_DIGEST = _compiler_digest()
TARGET_ENV = "vulkan1.1"  # what kernels are validated for, compiled or loaded from disk
log = logging.getLogger("vksycl.compiler")


@dataclass
class CompiledKernel:
    """A validated SPIR-V kernel and its reflection record."""

    name: str
    entry: str
    binary: bytes
    spec: KernelSpec
    args: list[ArgSlot]  # the arguments the code uses, at their offsets in the packed bytes
    push_size: int  # bytes of push constants: the arguments, or the argument block address
    args_size: int  # bytes of packed arguments (as push constants, or in the block)
    local_size: tuple[int, int, int]  # Vulkan order x, y, z
    aspects: frozenset[str]
    capabilities: tuple[str, ...] = ()
    # captured values compiled in as constants (paths), and the values they had
    specialized: tuple[tuple, ...] = ()
    spec_values: tuple = ()
    coarsen: int = 1  # ids each work-item runs (range kernels)
    device_globals: list[Any] = field(default_factory=list)
    virtual_tables: list[Any] = field(default_factory=list)
    local_bytes: int = 0  # work-group memory (local accessors, work_group_memory)
    # the records its prints and assertions write to the debug buffer, by id (`printing`)
    debug_records: dict[int, dict[str, Any]] = field(default_factory=dict)
    # an adjoint kernel's: for each of its gradient arguments (after the kernel's own),
    # the capture path of the forward pointer it belongs to and how the kernel uses that
    # memory ("r", "w", "rw" or "": `adjoint.adjoint_kernel`)
    gradients: tuple[tuple, ...] = ()
    # an adjoint kernel's: whether its launch may run parts of a loop's reverse along z
    split_loop: bool = False

    def spirv(self) -> bytes:
        return self.binary

    def spirv_asm(self) -> str:
        return spirv_gen.disassemble(self.binary)

    def reflection(self) -> dict[str, Any]:
        return {
            "entry": self.entry, "local_size": self.local_size, "push_size": self.push_size,
            "args_size": self.args_size, "args_in_memory": self.spec.args_in_memory,
            "aspects": sorted(self.aspects), "capabilities": list(self.capabilities),
            "args": [{"path": a.path, "kind": a.kind, "push_offset": a.push_offset,
                      "dtype": None if a.dtype is None else str(a.dtype)} for a in self.args],
            "device_globals": self.device_globals, "virtual_tables": self.virtual_tables,
            "debug_records": self.debug_records,
        }


def finished(binary: bytes) -> bytes:
    """An emitted module, validated; with `VKSYCL_SPIRV_OPT=1`, then run through
    spirv-opt's performance passes and validated again. A module the optimizer broke
    never reaches a driver: the emitted one runs instead, and the log says so (the
    passes have made invalid modules of a few of the differential campaign's kernels)."""
    spirv_gen.validate(binary, TARGET_ENV)
    if not SPIRV_OPT:
        return binary
    try:
        optimised = spirv_gen.tools.optimize(binary, "performance", TARGET_ENV)
        spirv_gen.validate(optimised, TARGET_ENV)
    except spirv_gen.SpirvError as ex:
        log.warning("spirv-opt's result is not valid SPIR-V; the module runs as emitted: "
                    "%s", ex)
        return binary
    return optimised


def kernel_name(pyfn: Any) -> str:
    name = getattr(pyfn, "__name__", "kernel")
    return "".join(c if c.isalnum() or c == "_" else "_" for c in name) or "kernel"


def local_size_xyz(local: tuple[int, ...]) -> tuple[int, int, int]:
    rev = (*reversed(local), 1, 1, 1)
    return rev[0], rev[1], rev[2]


def compile_kernel(pyfn: Any, spec: KernelSpec) -> CompiledKernel:
    """Compile without caches: lower, analyse, emit, validate."""
    try:
        return _compile(pyfn, spec)
    except exception:
        raise
    except Exception as ex:  # a compiler bug: still say which kernel, and keep the cause
        src = function_source(pyfn)
        raise exception(errc.build, f"{src.filename}:{src.node.lineno}: internal compiler "
                        f"error in kernel {spec.name}: {type(ex).__name__}: {ex}") from ex


def _compile(pyfn: Any, spec: KernelSpec) -> CompiledKernel:
    module = KernelModule(pyfn, spec)
    lowered = module.lower()
    gradients: tuple[tuple, ...] = ()
    if spec.adjoint:
        lowered, gradients = adjoint_kernel(module, lowered, len(spec.params or ()))
    usage = analyse(lowered.kernel)
    entry = f"__sycl_kernel_{spec.name}"
    cg = Codegen(entry, local_size_xyz(spec.local), spec.args_in_memory, spec.ieee_floats,
                 spec.fp_contract)
    try:
        binary = finished(cg.module(lowered.kernel, usage, lowered.push_types, frozenset(
            a.push_index for a in lowered.args if a.kind == "device_global")))
    except spirv_gen.SpirvError as ex:
        src = function_source(pyfn)
        raise exception(errc.build, f"{src.filename}:{src.node.lineno}: internal compiler "
                        f"error in kernel {spec.name}: {ex}") from ex
    args = [dataclasses.replace(a, push_offset=cg.push_offsets[a.push_index])
            for a in lowered.args if a.push_index in cg.push_offsets]
    # the "SYCL/device globals" property set: each variable the code still reaches, and
    # where the launch puts its address
    globals_ = [{**lowered.device_globals[a.path].metadata(), "argument_offset": a.push_offset}
                for a in args if a.kind == "device_global"]
    return CompiledKernel(spec.name, entry, binary, spec, args, cg.push_size, cg.args_size,
                          local_size_xyz(spec.local),
                          frozenset(lowered.aspects), tuple(cg.b.capabilities),
                          tuple(lowered.specialized),
                          tuple(captured_value(pyfn, p) for p in lowered.specialized),
                          lowered.coarsen, globals_,
                          local_bytes=sum(layout(mem_type(r.elem))[0] * r.length
                                          for r in usage.shared),
                          debug_records=lowered.debug_records, gradients=gradients,
                          split_loop=lowered.split_loop)


# -- caches ----------------------------------------------------------------------------------

_MEMORY: dict[Any, CompiledKernel] = {}


def _describe(v: Any, seen: set[int], depth: int = 0) -> Any:
    """A stable description of a value a kernel refers to, for the disk-cache key."""
    if hasattr(v, "allocation") and hasattr(v, "byte_offset"):
        return ("ptr", repr(dtype_key(v.dtype)))
    if isinstance(v, device_global):
        return ("device_global", v.unique_id, v.metadata_key())
    accessor = getattr(type(v), "__vksycl_accessor__", None)
    if accessor is not None:  # a local accessor's shape is compiled in
        what = tuple(v.shape) if accessor == "local" else v.access_mode.name
        return ("accessor", accessor, repr(dtype_key(v.dtype)), v.dims, what)
    if isinstance(v, bool | int | float | np.generic | str | type(None)):
        return (type(v).__name__, repr(v))
    if isinstance(v, pytypes.FunctionType):
        return ("fn", _fingerprint(v, seen, depth + 1))
    if isinstance(v, pytypes.ModuleType):
        return ("module", v.__name__)
    if isinstance(v, type):
        st = getattr(v, "__vksycl_struct__", None)
        return ("type", v.__module__, v.__qualname__, repr(st.fields) if st else "")
    if isinstance(v, tuple):
        return tuple(_describe(x, seen, depth) for x in v)
    st = getattr(type(v), "__vksycl_struct__", None)
    if st is not None:
        return ("struct", repr(st.fields), tuple(_describe(getattr(v, n), seen, depth)
                                                 for n, _ in st.fields))
    if callable(v):  # builtins, ufuncs, function objects: by name
        return ("callable", type(v).__qualname__, getattr(v, "__module__", None),
                getattr(v, "__qualname__", None) or getattr(v, "__name__", repr(v)))
    if plain_object(v) and depth < 4:
        # a captured object's attributes are kernel arguments: their types are the key
        return ("object", type(v).__module__, type(v).__qualname__, tuple(
            (k, type(x).__name__ if isinstance(x, bool | int | float | np.generic) else
             _describe(x, seen, depth + 1)) for k, x in sorted(vars(v).items())))
    return ("object", type(v).__module__, type(v).__qualname__,
            repr(getattr(v, "__dict__", ""))[:200])


def _names(code: Any) -> set[str]:
    out = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, pytypes.CodeType):
            out |= _names(c)
    return out


def _fingerprint(pyfn: Any, seen: set[int], depth: int = 0) -> str:
    if id(pyfn) in seen or depth > 16:
        return "rec:" + getattr(pyfn, "__qualname__", "?")
    seen.add(id(pyfn))
    view = device_view(pyfn)  # host bodies are never device code: they stay out
    try:
        src = view.text if view is not None else source_text(pyfn)
    except exception:
        return "nosrc:" + getattr(pyfn, "__qualname__", "?")
    skip = view.host_names if view is not None else frozenset()
    h = hashlib.sha256(src.encode())
    h.update(f"{pyfn.__module__}.{pyfn.__qualname__}".encode())
    # where it is: its prints, assertions and checked accesses record their file and lines
    h.update(f"{pyfn.__code__.co_filename}:{pyfn.__code__.co_firstlineno}".encode())
    if pyfn.__code__.co_name == "<lambda>":  # lambdas sharing a line: where each starts
        span = code_span(pyfn.__code__)
        h.update(repr(span and span[0]).encode())
    # defaults are compiled in: their values are part of the key
    h.update(repr(_describe((pyfn.__defaults__ or (), tuple(sorted(
        (pyfn.__kwdefaults__ or {}).items()))), seen, depth)).encode())
    g = pyfn.__globals__
    for name in sorted(_names(pyfn.__code__) - skip):
        if name in g:
            h.update(repr((name, _describe(g[name], seen, depth))).encode())
    for name, cell in zip(pyfn.__code__.co_freevars, pyfn.__closure__ or (), strict=False):
        if name in skip:
            continue
        with contextlib.suppress(ValueError):
            v = cell.cell_contents  # captured numbers are arguments: their type is the key
            d = type(v).__name__ if runtime_number(v) else _describe(v, seen, depth)
            h.update(repr((name, d)).encode())
    return h.hexdigest()


def fingerprint(pyfn: Any) -> str:
    """What the disk cache knows a device function by: its source, defaults, and the
    globals and cells it reads."""
    return _fingerprint(pyfn, set())


def disk_key(pyfn: Any, spec: KernelSpec, extra: Any = ()) -> str:
    h = hashlib.sha256(_DIGEST.encode())
    h.update(repr(extra).encode())
    if sys.flags.optimize:  # `python -O` compiles no assertions
        h.update(b"-O")
    if CHECKS:  # checked mode's kernels are others
        h.update(repr(sorted(CHECKS)).encode())
    if SPIRV_OPT:  # and optimised kernels
        h.update(b"spirv-opt")
    h.update(_fingerprint(pyfn, set()).encode())
    h.update(repr(spec).encode())
    h.update(_TOOLS_VERSION.encode())
    return h.hexdigest()


_TOOLS_VERSION = spirv_gen.tools.version()
_DIRS: dict[tuple, Path | None] = {}


def _disk_dir() -> Path | None:
    env = os.environ
    key = (env.get("VKSYCL_CACHE_DIR"), env.get("XDG_CACHE_HOME"))
    if key not in _DIRS:
        try:
            _DIRS[key] = cache_dir("kernels")
        except OSError:
            _DIRS[key] = None
    return _DIRS[key]


def _globals_current(ck: CompiledKernel) -> bool:
    """Whether the device_globals a cached kernel recorded are still declared so (a class
    attribute's properties are not in the source the disk key covers)."""
    for entry in ck.device_globals:
        decl = declared(entry["unique_id"])
        if decl is not None and decl.metadata() != {k: v for k, v in entry.items()
                                                    if k != "argument_offset"}:
            return False
    return True


def _load(path: Path) -> CompiledKernel | None:
    """The kernel cached at `path`, if its entry is intact and holds a usable kernel; a
    corrupt entry is discarded, so its SPIR-V never reaches a driver."""
    payload = disk_cache.read(path)
    if payload is None:
        return None
    try:
        ck = pickle.loads(payload)
    except Exception as ex:  # a record that does not parse
        disk_cache.discard(path, f"its record does not load: {type(ex).__name__}: {ex}")
        return None
    why = _unusable(ck)
    if why is not None:
        disk_cache.discard(path, why)
        return None
    return ck


# the fields of a cached kernel a launch reads, and their types
_FIELD_TYPES = {"name": str, "entry": str, "binary": bytes, "spec": KernelSpec, "args": list,
                "push_size": int, "args_size": int, "local_size": tuple, "aspects": frozenset,
                "capabilities": tuple, "specialized": tuple, "spec_values": tuple,
                "coarsen": int, "device_globals": list, "virtual_tables": list,
                "local_bytes": int, "debug_records": dict, "gradients": tuple,
                "split_loop": bool}


def _unusable(ck: Any) -> str | None:
    """Why a record from the disk cache is no compiled kernel to launch (None if it is
    one): its fields have their types, and its SPIR-V validates and has its entry
    point."""
    if not isinstance(ck, CompiledKernel):
        return f"it holds a {type(ck).__name__}, not a compiled kernel"
    for name, kind in _FIELD_TYPES.items():
        if not isinstance(getattr(ck, name, None), kind):
            return f"its {name} is not a {kind.__name__}"
    if not all(isinstance(a, ArgSlot) for a in ck.args):
        return "its arguments are not argument slots"
    if len(ck.local_size) != 3 or not all(isinstance(n, int) and n > 0
                                          for n in ck.local_size):
        return f"its local size {ck.local_size!r} is not 3 positive integers"
    try:
        spirv_gen.validate(ck.binary, TARGET_ENV)
    except (spirv_gen.SpirvError, ValueError) as ex:  # ValueError: not whole words
        return f"its SPIR-V does not validate: {str(ex).splitlines()[0]}"
    if ck.entry.encode() + b"\0" not in ck.binary:
        return f"its SPIR-V has no entry point {ck.entry}"
    return None


def _store(path: Path, ck: CompiledKernel) -> None:
    try:
        payload = pickle.dumps(ck)
    except (pickle.PicklingError, AttributeError, TypeError) as ex:  # local classes
        log.debug("cannot write the kernel cache: %s", ex)
        return
    disk_cache.write(path, payload)


def load_or_compile(pyfn: Any, spec: KernelSpec, memory_key: Any,
                    extra: Any = ()) -> CompiledKernel:
    """The compiled kernel from memory, disk, or a fresh compile. `extra` keys variants
    specialised on captured values."""
    hit = _MEMORY.get(memory_key)
    if hit is not None:
        return hit
    key = disk_key(pyfn, spec, extra)
    d = _disk_dir()
    path = d / f"{key}.kc" if d is not None else None
    ck = _load(path) if path is not None else None
    if ck is not None and not _globals_current(ck):
        ck = None
    if ck is None:
        ck = compile_kernel(pyfn, spec)
        if path is not None:
            _store(path, ck)
    dump = os.environ.get("VKSYCL_DUMP_SPIRV")
    if dump:
        out = Path(dump)
        out.mkdir(parents=True, exist_ok=True)
        (out / f"{spec.name}_{key[:12]}.spv").write_bytes(ck.binary)
        (out / f"{spec.name}_{key[:12]}.spvasm").write_text(ck.spirv_asm())
    _MEMORY[memory_key] = ck
    return ck
