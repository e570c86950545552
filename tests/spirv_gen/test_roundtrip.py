"""Writer -> reader -> writer round trips: every instruction shape the builder emits, and
binaries produced by glslang, decode and re-encode bit for bit."""

import math
import struct
import subprocess
import sys
from pathlib import Path

import kernels
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spirv_gen import Bits, DecodeError, ModuleBuilder, SpirvError, read, validate
from spirv_gen.binary import entry_points, rename_entry_point
from spirv_gen.words import bytes_to_words, read_string
from vksycl import _kp as kp

GLSLANG = Path(sys.executable).parent / "glslangValidator"


def catalogue() -> bytes:
    """A valid module using every operand shape: strings, enumerants with parameters, bit
    masks with parameters, 8/16/32/64-bit literals (signed, float, NaN payloads), pairs,
    switch literals of 64 bits, spec-constant ops, extended instructions, debug lines."""
    b = ModuleBuilder(version=(1, 5))
    b.capability("Int8")
    b.capability("Int16")
    b.capability("Float16")
    b.capability("GroupNonUniformClustered")
    b.extension("SPV_KHR_non_semantic_info")
    void, boolean = b.type_void(), b.type_bool()
    i8, i16, u16 = b.type_int(8), b.type_int(16), b.type_uint(16)
    i32, u32, i64, u64 = b.type_int(), b.type_uint(), b.type_int(64), b.type_uint(64)
    f16, f32, f64 = b.type_float(16), b.type_float(), b.type_float(64)
    v4 = b.type_vector(f32, 4)
    uv3 = b.type_vector(u32, 3)
    source = b.op("String", "kernels/catalogue.py")
    b.op("Source", "Unknown", 100, source)
    b.op("ModuleProcessed", "built by the round-trip test")
    consts = [
        b.constant(i8, -5), b.constant(i16, -300), b.constant(u16, 65535),
        b.constant(i64, -(1 << 62) - 7), b.constant(u64, (1 << 64) - 1),
        b.constant(f16, -1.5), b.constant(f64, math.pi), b.constant(f32, -0.0),
        b.constant(f32, math.inf), b.constant(f32, Bits((0x7F800001,))),
        b.constant(f64, Bits((0x00000001, 0x7FF80000))),
        b.constant(boolean, True), b.constant(boolean, False),
        b.constant_null(v4), b.constant_composite(v4, [b.f32(1), b.f32(2), b.f32(3), b.f32(4)]),
    ]
    s0 = b.spec_constant(u32, 16, spec_id=3)
    b.spec_constant(boolean, True, spec_id=4)
    b.spec_constant(boolean, False, spec_id=5)
    s3 = b.spec_constant_op(u32, "IAdd", s0, b.u32(1))
    s4 = b.spec_constant_composite(uv3, [s0, b.u32(1), b.u32(1)])
    b.decorate(s4, "BuiltIn", "WorkgroupSize")
    buf = b.storage_buffer(f32, binding=0, name="buf")
    b.decorate(buf, "Restrict")
    pc = b.push_constants([u32, i64], name="pc")
    shared = b.variable(b.type_array(f32, s3), "Workgroup")
    with b.function(f32, [f32, f32], control="Inline|Pure", name="mix2") as helper:
        b.op("Line", source, 7, 3)
        b.ret(b.glsl("FClamp", f32, helper.params[0], helper.params[1], b.f32(1)))
    with b.function(void, name="main") as fn:
        b.op("NoLine")
        i = b.op("CompositeExtract", u32, b.load_builtin("LocalInvocationId", uv3), 0)
        p = b.buffer_element(buf, i)
        x = b.op("Load", f32, p, "Volatile|Aligned", 4)
        y = b.op("FunctionCall", f32, helper.id, x, b.f32(0.5))
        b.op("Store", p, b.glsl("Fma", f32, x, y, x), "Nontemporal")
        wide = b.push_constant(pc, 1)
        b.op("Store", b.op("AccessChain", b.type_pointer("Workgroup", f32), shared, i), y)
        b.op("ControlBarrier", "Workgroup", "Workgroup", "AcquireRelease|WorkgroupMemory")
        b.op("MemoryBarrier", "Device", "AcquireRelease|UniformMemory")
        red = b.op("GroupNonUniformFAdd", f32, "Subgroup", "ClusteredReduce", x, b.u32(4))
        vec = b.op("CompositeConstruct", v4, x, y, red, b.op("Undef", f32))
        vec = b.op("VectorShuffle", v4, vec, consts[14], 7, 0, 5, 0xFFFFFFFF)
        vec = b.op("CompositeInsert", v4, y, vec, 2)
        old = b.op("AtomicCompareExchange", u32, b.buffer_element(b.storage_buffer(
            u32, binding=1), i), "Device", "Relaxed", "Relaxed", i, b.u32(0))
        with b.if_(b.op("SLessThan", boolean, b.op("SConvert", i32, wide), b.i32(-2)),
                   control="Flatten") as sel:
            t = b.op("FAdd", f32, x, b.f32(1))
            sel.else_()
            e = b.op("FSub", f32, x, b.f32(1))
        b.phi(f32, (t, sel.then_end), (e, sel.else_end))
        with b.loop(control=("DependencyLength|Unroll", 4)):
            pass
        with b.switch(wide) as sw:
            with sw.case(-(1 << 40), 3):
                b.op("Store", p, b.op("CompositeExtract", f32, vec, 0))
            with sw.default():
                b.op("Store", p, b.op("ConvertUToF", f32, old))
        with b.switch(b.op("Bitcast", i32, i)) as sw, sw.case(-1):
            pass
    b.entry_point("GLCompute", fn, "main")
    return b.to_bytes()


def roundtrips(binary: bytes) -> None:
    m = read(binary)
    assert m.to_bytes() == binary
    assert m.reencode().to_bytes() == binary


def test_catalogue_is_valid_and_round_trips():
    spirv = catalogue()
    validate(spirv, "vulkan1.2")
    roundtrips(spirv)


def test_catalogue_covers_every_operand_category():
    m = read(catalogue())
    kinds = set()
    for inst, _, _, ops in m.decoded():
        info = inst.info
        kinds.update(o.kind for o in info.operands)
        if inst.opname == "OpConstant" and isinstance(ops[0], Bits):
            kinds.add("Bits")
    for k in ("LiteralString", "LiteralContextDependentNumber", "LiteralSpecConstantOpInteger",
              "LiteralExtInstInteger", "PairIdRefIdRef", "PairLiteralIntegerIdRef",
              "MemoryAccess", "LoopControl", "SelectionControl", "FunctionControl", "Decoration",
              "IdScope", "IdMemorySemantics", "GroupOperation", "Bits"):
        assert k in kinds, k


def test_decoded_operands_read_back_as_built():
    m = read(catalogue())
    by_op: dict[str, list] = {}
    for inst, rt, _, ops in m.decoded():
        by_op.setdefault(inst.opname, []).append((rt, ops))
    constants = [ops[0] for _, ops in by_op["OpConstant"]]
    assert -5 in constants and -300 in constants and 65535 in constants
    assert -(1 << 62) - 7 in constants and (1 << 64) - 1 in constants
    assert math.pi in constants and -1.5 in constants and math.inf in constants
    assert Bits((0x7F800001,)) in constants
    assert next(ops for _, ops in by_op["OpLoad"] if len(ops) > 1)[1:] == ["Volatile|Aligned", 4]
    assert next(ops for _, ops in by_op["OpLoopMerge"])[2:] == ["Unroll|DependencyLength", 4]
    switch_lits = [lit for _, ops in by_op["OpSwitch"] for lit, _ in ops[2:]]
    assert -(1 << 40) in switch_lits and -1 in switch_lits
    assert [ops[0] for _, ops in by_op["OpSpecConstantOp"]] == ["IAdd"]
    assert {ops[1] for _, ops in by_op["OpExtInst"]} == {"FClamp", "Fma"}
    assert m.names()[m.find("OpFunction")[0].result_id] == "mix2"


@pytest.mark.parametrize("name", sorted(kernels.ALL))
@pytest.mark.parametrize("version", [(1, 3), (1, 5)])
def test_kernel_modules_round_trip(name, version):
    roundtrips(kernels.ALL[name](version))


def test_numbers_round_trip_bit_for_bit():
    b = ModuleBuilder()
    f32, f64 = b.type_float(), b.type_float(64)
    for bits in (0x7F800001, 0xFFC00000, 0x80000000, 0x00000001, 0x3F800000):
        v = struct.unpack("<f", struct.pack("<I", bits))[0]
        value = v if struct.unpack("<I", struct.pack("<f", v))[0] == bits else Bits((bits,))
        b.constant(f32, value)
    b.constant(f64, 1e-310)
    roundtrips(b.to_bytes())


GLSLANG_FLAGS = {
    "vulkan1.1": ["--target-env", "vulkan1.1"],
    "vulkan1.2-debug": ["--target-env", "vulkan1.2", "-g"],
    "vulkan1.1-shader-debuginfo": ["--target-env", "vulkan1.1", "-gVS"],
}
GLSL = {
    "features": """
#version 450
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const int MODE = 2;
layout(std430, binding = 0) buffer Data { float x[]; } data;
layout(std430, binding = 1) buffer Wide { double d[]; } wide;
layout(std430, binding = 2) buffer Out { uint counter; int64_t q[]; } o;
layout(push_constant) uniform P { float scale; uint n; } pc;
shared float tile[64];
float helper(float v) { return v > 0.0 ? sqrt(v) : -v; }
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= pc.n) return;
    tile[gl_LocalInvocationID.x] = data.x[i];
    barrier();
    float acc = 0.0;
    for (int k = 0; k < 8; ++k) {
        if (k == 5) continue;
        acc += tile[(gl_LocalInvocationID.x + k) % 64] * pc.scale;
        if (acc > 100.0) break;
    }
    switch (MODE) {
        case 0: acc = helper(acc); break;
        case 2: acc = subgroupAdd(acc); break;
        default: acc = -acc;
    }
    data.x[i] = acc;
    wide.d[i] = double(acc) * 0.1LF;
    o.q[i] = int64_t(i) * -3000000007L;
    atomicAdd(o.counter, 1u);
}
""",
    "plain": """
#version 450
layout(local_size_x = 32) in;
layout(binding = 0) buffer B { uint v[]; };
void main() { v[gl_GlobalInvocationID.x] *= 2u; }
""",
}


@pytest.mark.parametrize("name", sorted(GLSL))
@pytest.mark.parametrize("flags", sorted(GLSLANG_FLAGS))
def test_glslang_binaries_round_trip(tmp_path, name, flags):
    src = tmp_path / f"{name}.comp"
    src.write_text(GLSL[name])
    out = tmp_path / f"{name}.spv"
    cmd = [str(GLSLANG), "-V", *GLSLANG_FLAGS[flags], str(src), "-o", str(out)]
    subprocess.run(cmd, check=True, capture_output=True)
    binary = out.read_bytes()
    roundtrips(binary)
    m = read(binary)
    assert len(m.instructions) > 20
    if flags == "vulkan1.1-shader-debuginfo":  # NonSemantic.Shader.DebugInfo.100: raw words
        sets = [read_string(i.words, 1)[0] for i in m.find("ExtInstImport")]
        assert "NonSemantic.Shader.DebugInfo.100" in sets


def test_reader_accepts_words_and_either_byte_order():
    spirv = kernels.saxpy((1, 3))
    words = list(bytes_to_words(spirv))
    assert read(words).to_bytes() == spirv
    swapped = b"".join(spirv[i : i + 4][::-1] for i in range(0, len(spirv), 4))
    assert read(swapped).to_bytes() == spirv


def test_patching_a_decoded_module():
    spirv = kernels.spec_scale((1, 3))
    m = read(spirv)
    for inst, _, _, ops in m.decoded():
        if inst.opname == "OpDecorate" and ops[1] == "SpecId":
            index = m.instructions.index(inst)
            m.instructions[index] = m.instruction("Decorate", ops[0], "SpecId", 9)
    patched = m.to_bytes()
    validate(patched)
    specs = [ops for inst, _, _, ops in read(patched).decoded() if ops[1:2] == ["SpecId"]]
    assert specs and specs[0][2] == 9


def test_entry_points_are_listed_and_renamed(mgr):
    b = ModuleBuilder()
    u32 = b.type_uint()
    buf = b.storage_buffer(u32, binding=0)
    with b.function(b.type_void()) as fn:
        gid = b.load_builtin("GlobalInvocationId", b.type_vector(u32, 3))
        i = b.op("CompositeExtract", u32, gid, 0)
        b.op("Store", b.buffer_element(buf, i), b.op("IAdd", u32, i, b.u32(5)))
    b.entry_point("GLCompute", fn, "__sycl_kernel_iota")
    b.execution_mode(fn, "LocalSize", 8, 1, 1)
    spirv = b.to_bytes()
    assert entry_points(spirv) == [("GLCompute", fn.id, "__sycl_kernel_iota")]
    renamed = rename_entry_point(spirv, "__sycl_kernel_iota", "main")
    validate(renamed)
    assert entry_points(renamed) == [("GLCompute", fn.id, "main")]
    t = mgr.tensor_t(np.zeros(16, np.uint32), kp.TensorTypes.host)
    none = np.array([], dtype=np.uint32)
    seq = mgr.sequence()
    seq.record(kp.OpAlgoDispatch(mgr.algorithm([t], renamed, [2, 1, 1], none, none)))
    seq.eval()
    np.testing.assert_array_equal(t.data(), np.arange(16) + 5)
    with pytest.raises(SpirvError, match="no entry point named 'nope'"):
        rename_entry_point(spirv, "nope", "main")


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_constants_of_every_width_read_back_equal(data):
    width = data.draw(st.sampled_from([8, 16, 32, 64]))
    signed = data.draw(st.booleans())
    lo, hi = (-(1 << (width - 1)), (1 << (width - 1)) - 1) if signed else (0, (1 << width) - 1)
    ints = data.draw(st.lists(st.integers(lo, hi), min_size=1, max_size=8))
    fwidth = data.draw(st.sampled_from([16, 32, 64]))
    floats = data.draw(st.lists(st.floats(width=fwidth, allow_nan=False), min_size=1,
                                max_size=8))
    b = ModuleBuilder()
    it, ft = b.type_int(width, signed), b.type_float(fwidth)
    made = {b.constant(it, v): v for v in ints} | {b.constant(ft, v): v for v in floats}
    spirv = b.to_bytes()
    roundtrips(spirv)
    got = {rid: ops[0] for inst, _, rid, ops in read(spirv).decoded()
           if inst.opname == "OpConstant"}
    for rid, v in made.items():
        assert got[rid] == v and math.copysign(1, got[rid]) == math.copysign(1, v)


@pytest.mark.parametrize("binary,message", [
    (b"\x03\x02\x23\x07\x00", "multiple of 4"),
    (b"\x03\x02\x23\x07" * 2, "too short"),
    (struct.pack("<5I", 0xDEADBEEF, 0x10300, 0, 1, 0), "bad magic"),
    (struct.pack("<7I", 0x07230203, 0x10300, 0, 1, 0, (5 << 16) | 17, 1), "bad word count"),
])
def test_malformed_binaries_are_refused(binary, message):
    with pytest.raises(DecodeError, match=message):
        read(binary)
