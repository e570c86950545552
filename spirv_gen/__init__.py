"""spirv_gen: build, encode, read and check SPIR-V modules from Python.

A standalone package (it knows nothing of SYCL) in four parts:

- :mod:`spirv_gen.grammar` — opcodes, operand kinds, enumerants and their required
  capabilities/extensions, and GLSL.std.450, read from the Khronos grammar JSON.
- :mod:`spirv_gen.builder` — :class:`ModuleBuilder`: ``b.op("IAdd", t, x, y)`` (or
  ``b.IAdd(t, x, y)``) for any instruction, deduplicated types and constants,
  decorations, names, entry points, execution modes, functions, GLSL.std.450 calls,
  spec constants, automatic capabilities and extensions, and the structured control-flow
  helpers ``b.if_``, ``b.loop``, ``b.switch`` (:mod:`spirv_gen.control`); its type and
  constant methods live in :mod:`spirv_gen.types`, variables and kernel resources
  (storage buffers, push constants, built-ins) in :mod:`spirv_gen.resources`.
- :mod:`spirv_gen.reader` — :func:`read` decodes a binary (ours or glslang's) into
  instructions that can be inspected, patched and encoded again.
- :mod:`spirv_gen.binary` — small edits of encoded modules: ``entry_points``,
  ``rename_entry_point``.
- :mod:`spirv_gen.tools` — SPIRV-Tools in process: :func:`validate`,
  :func:`disassemble`, :func:`assemble`, :func:`optimize` (errors: :class:`ValidationError`,
  :class:`ToolsError`, both :class:`SpirvError`).

Example::

    b = ModuleBuilder()                      # SPIR-V 1.3, for Vulkan 1.1
    u32 = b.type_uint()
    buf = b.storage_buffer(u32, binding=0)
    with b.function(b.type_void()) as fn:
        gid = b.load_builtin("GlobalInvocationId", b.type_vector(u32, 3))
        i = b.op("CompositeExtract", u32, gid, 0)
        p = b.buffer_element(buf, i)
        b.op("Store", p, b.op("IMul", u32, b.op("Load", u32, p), b.u32(2)))
    b.entry_point("GLCompute", fn, "main")
    b.execution_mode(fn, "LocalSize", 64, 1, 1)
    spirv = b.to_bytes(); validate(spirv)
"""

from .builder import VULKAN_SPIRV_VERSION, Function, ModuleBuilder
from .control import Loop, Selection, Switch
from .errors import BuildError, DecodeError, SpirvError, ToolsError, ValidationError
from .grammar import Grammar, grammar
from .reader import Instruction, Module, read
from .tools import assemble, disassemble, optimize, validate
from .words import Bits, Id

__all__ = [
    "VULKAN_SPIRV_VERSION",
    "Bits",
    "BuildError",
    "DecodeError",
    "Function",
    "Grammar",
    "Id",
    "Instruction",
    "Loop",
    "Module",
    "ModuleBuilder",
    "Selection",
    "SpirvError",
    "Switch",
    "ToolsError",
    "ValidationError",
    "assemble",
    "disassemble",
    "grammar",
    "optimize",
    "read",
    "validate",
]
