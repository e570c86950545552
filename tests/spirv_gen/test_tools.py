"""SPIRV-Tools in process: validation (with its diagnostics), disassembly, assembly and
the optimizer."""

import re

import kernels
import pytest

from spirv_gen import (
    ModuleBuilder,
    ToolsError,
    ValidationError,
    assemble,
    disassemble,
    optimize,
    read,
    validate,
)
from spirv_gen.tools import library_path, optimizer_library_path, version


def test_libraries_come_from_the_installed_packages():
    assert library_path().name == "libSPIRV-Tools-shared.so"
    assert optimizer_library_path().is_file()
    assert "SPIRV-Tools" in version()


@pytest.mark.parametrize("env", ["vulkan1.1", "vulkan1.2", "vulkan1.3", "spv1.3"])
def test_valid_module_passes_every_environment(env):
    validate(kernels.saxpy((1, 3)), env)
    validate(list(read(kernels.saxpy((1, 3))).words()), env)


def test_unknown_environment():
    with pytest.raises(ToolsError, match="unknown SPIR-V target environment"):
        validate(kernels.saxpy((1, 3)), "vulkan9")


def _bad_add() -> bytes:
    b = ModuleBuilder()
    u32 = b.type_uint()
    with b.function(b.type_void(), name="main") as fn:
        b.op("IAdd", u32, b.u32(1), b.f32(2.0))
    b.entry_point("GLCompute", fn, "main")
    b.execution_mode(fn, "LocalSize", 1, 1, 1)
    return b.to_bytes()


def test_type_error_names_the_instruction_and_shows_its_neighbourhood():
    with pytest.raises(ValidationError) as e:
        validate(_bad_add())
    msg = str(e.value)
    assert "Expected int scalar or vector type as operand" in msg
    assert "OpIAdd %uint %uint_1 %float_2" in e.value.neighbourhood
    marked = [line for line in e.value.neighbourhood.splitlines() if line.startswith(">")]
    assert len(marked) == 1 and "OpIAdd" in marked[0]
    assert "OpFunction" in e.value.neighbourhood  # lines around it too


def test_vulkan_rules_are_checked():
    b = ModuleBuilder()
    u32 = b.type_uint()
    st = b.type_struct([b.type_runtime_array(u32, stride=4)], offsets=[0])  # no Block
    var = b.variable(st, "StorageBuffer")
    b.decorate(var, "DescriptorSet", 0)
    b.decorate(var, "Binding", 0)
    with b.function(b.type_void()) as fn:
        b.op("Load", u32, b.op("AccessChain", b.type_pointer("StorageBuffer", u32), var,
                               b.u32(0), b.u32(0)))
    b.entry_point("GLCompute", fn, "main")
    b.execution_mode(fn, "LocalSize", 1, 1, 1)
    with pytest.raises(ValidationError, match="Block"):
        validate(b.to_bytes())


def test_unstructured_branch_is_rejected():
    m = read(kernels.saxpy((1, 3)))
    m.instructions = [i for i in m.instructions if i.opname != "OpSelectionMerge"]
    with pytest.raises(ValidationError, match=r"(?i)merge|structured"):
        validate(m.to_bytes())


def test_version_beyond_the_environment_is_rejected():
    with pytest.raises(ValidationError, match=r"(?i)version"):
        validate(kernels.saxpy((1, 5)), "vulkan1.1")


def test_garbage_is_rejected():
    with pytest.raises(ValidationError, match=r"(?i)magic"):
        validate(b"\x01\x02\x03\x04" * 8)


def _vec3_array(stride: int) -> bytes:
    b = ModuleBuilder()
    f32 = b.type_float()
    v3 = b.type_vector(f32, 3)
    buf = b.storage_buffer(v3, binding=0, stride=stride)
    with b.function(b.type_void()) as fn:
        b.op("Load", v3, b.buffer_element(buf, b.u32(1)))
    b.entry_point("GLCompute", fn, "main")
    b.execution_mode(fn, "LocalSize", 1, 1, 1)
    return b.to_bytes()


def test_validator_options():
    validate(_vec3_array(16))
    with pytest.raises(ValidationError, match=r"(?i)layout|stride"):
        validate(_vec3_array(12))
    validate(_vec3_array(12), scalar_block_layout=True)
    validate(_vec3_array(12), skip_block_layout=True)


def test_disassembly_friendly_and_raw():
    spirv = kernels.saxpy((1, 3))
    friendly = disassemble(spirv)
    raw = disassemble(spirv, friendly=False)
    assert "%main = OpFunction" in friendly and "%uint = OpTypeInt 32 0" in friendly
    assert "%main" not in raw.replace('"main"', "")
    assert re.search(r"^\s*%\d+ = OpTypeFloat 32$", raw, re.M)
    assert "; Version: 1.3" in friendly
    assert "; Version" not in disassemble(spirv, header=False)


def test_assemble_round_trips_the_disassembly():
    spirv = kernels.collatz((1, 3))
    again = assemble(disassemble(spirv, friendly=False))
    validate(again)
    assert [i.encode() for i in read(again).instructions] == [
        i.encode() for i in read(spirv).instructions]


def test_assemble_error_has_the_assembler_message():
    with pytest.raises(ToolsError, match="cannot assemble"):
        assemble("%1 = OpTypeInt 32\n")


@pytest.mark.parametrize("mode", ["performance", "size"])
def test_optimizer_removes_function_variables(mode):
    b = ModuleBuilder()
    u32 = b.type_uint()
    buf = b.storage_buffer(u32, binding=0)
    with b.function(b.type_void()) as fn:
        tmp = b.variable(u32, "Function")
        b.op("Store", tmp, b.op("IMul", u32, b.u32(6), b.u32(7)))
        b.op("Store", b.buffer_element(buf, b.u32(0)), b.op("Load", u32, tmp))
    b.entry_point("GLCompute", fn, "main")
    b.execution_mode(fn, "LocalSize", 1, 1, 1)
    spirv = b.to_bytes()
    out = optimize(spirv, mode)
    validate(out)
    assert len(out) < len(spirv)
    stores = [ops for inst, _, _, ops in read(out).decoded() if inst.opname == "OpStore"]
    consts = {rid: ops[0] for inst, _, rid, ops in read(out).decoded()
              if inst.opname == "OpConstant"}
    assert [consts[s[1]] for s in stores] == [42]


def test_optimizer_pass_list_and_errors():
    spirv = kernels.histogram((1, 3))
    validate(optimize(spirv, passes=["--eliminate-dead-code-aggressive", "--merge-blocks"]))
    with pytest.raises(ToolsError, match="unknown optimizer pass"):
        optimize(spirv, passes=["--make-it-faster"])
    with pytest.raises(ToolsError, match="unknown optimization mode"):
        optimize(spirv, "speed")
    with pytest.raises(ToolsError, match="spirv-opt"):
        optimize(_bad_add())


def test_neighbourhood_is_sized_by_context_lines():
    b = ModuleBuilder()
    u32, f32 = b.type_uint(), b.type_float()
    with b.function(b.type_void(), name="main") as fn:
        for _ in range(3):
            b.op("IAdd", u32, b.u32(1), b.u32(2))
        b.op("Store", b.variable(f32, "Function"), b.u32(1))  # stores a uint into a float
        b.op("IAdd", u32, b.u32(1), b.u32(2))
    b.entry_point("GLCompute", fn, "main")
    b.execution_mode(fn, "LocalSize", 1, 1, 1)
    with pytest.raises(ValidationError) as e:
        validate(b.to_bytes(), context_lines=1)
    lines = e.value.neighbourhood.splitlines()
    assert len(lines) == 3
    assert lines[1].startswith(">") and "OpStore" in lines[1]
