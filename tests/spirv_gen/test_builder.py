"""The builder's guarantees: deduplication, automatic capabilities and extensions, entry
point interfaces, structured control flow, and errors that name what is wrong."""

import numpy as np
import pytest

from spirv_gen import BuildError, Id, ModuleBuilder, read, validate
from vksycl import _kp as kp


def compute(b: ModuleBuilder, fn) -> bytes:
    b.entry_point("GLCompute", fn, "main")
    b.execution_mode(fn, "LocalSize", 1, 1, 1)
    return b.to_bytes()


def decoded(spirv: bytes, opname: str) -> list[list]:
    return [ops for inst, _, _, ops in read(spirv).decoded() if inst.opname == opname]


def test_types_constants_and_decorations_are_deduplicated():
    b = ModuleBuilder()
    u32, f32 = b.type_uint(), b.type_float()
    assert b.type_uint(32) is u32 or b.type_uint(32) == u32
    assert b.type_int(32, signed=False) == u32 != b.type_int(32)
    assert b.type_pointer("StorageBuffer", u32) == b.op("TypePointer", "StorageBuffer", u32)
    assert b.constant(f32, 1) == b.constant(f32, 1.0) == b.f32(1.0)
    assert b.f32(0.0) != b.f32(-0.0) == b.constant(f32, -0.0)
    assert b.constant(b.type_float(64), np.float64(-0.0)) != b.constant(b.type_float(64), 0.0)
    assert b.u32(7) == b.constant(u32, 7) != b.i32(7)
    assert b.type_struct([u32]) != b.type_struct([u32])
    arr = b.type_runtime_array(u32, stride=4)
    assert arr == b.type_runtime_array(u32, stride=4) != b.type_runtime_array(u32)
    s = b.type_struct([arr])
    b.decorate(s, "Block")
    b.decorate(s, "Block")
    with b.function(b.type_void()) as fn:
        pass
    spirv = compute(b, fn)
    assert len(decoded(spirv, "OpDecorate")) == 2  # Block once, ArrayStride once
    assert len(decoded(spirv, "OpTypeInt")) == 2
    validate(spirv)


def test_capabilities_follow_what_is_used():
    b = ModuleBuilder()
    assert b.capabilities == ["Shader"]  # GLSL450 memory model needs it
    b.type_float(64)
    b.type_int(16)
    u64 = b.type_uint(64)
    u32 = b.type_uint()
    buf = b.storage_buffer(u64, binding=0)
    with b.function(b.type_void()) as fn:
        b.op("AtomicIAdd", u64, b.buffer_element(buf, b.u32(0)), "Device", "Relaxed",
             b.constant(u64, 1))
        b.op("GroupNonUniformIAdd", u32, "Subgroup", "ExclusiveScan", b.u32(1))
    spirv = compute(b, fn)
    assert set(b.capabilities) == {"Shader", "Float64", "Int16", "Int64", "Int64Atomics",
                                   "GroupNonUniformArithmetic"}
    assert "Kernel" not in b.capabilities
    caps = [ops[0] for ops in decoded(spirv, "OpCapability")]
    assert caps == b.capabilities
    validate(spirv)


@pytest.mark.parametrize("version,extensions", [((1, 3), ["SPV_KHR_8bit_storage"]),
                                                ((1, 5), [])])
def test_extensions_only_below_the_version_that_made_them_core(version, extensions):
    b = ModuleBuilder(version=version)
    b.capability("StorageBuffer8BitAccess")
    assert b.extensions == extensions


def test_storage_buffer_class_needs_its_extension_before_spirv_1_3():
    b = ModuleBuilder(version=(1, 0))
    b.type_pointer("StorageBuffer", b.type_uint())
    assert b.extensions == ["SPV_KHR_storage_buffer_storage_class"]
    assert ModuleBuilder(version=(1, 3)).extensions == []


def test_newer_instruction_in_an_older_module_is_refused():
    b = ModuleBuilder(version=(1, 3))
    u32 = b.type_uint()
    with b.function(b.type_void()), pytest.raises(BuildError, match=r"needs SPIR-V 1\.4"):
        b.op("CopyLogical", u32, b.u32(1))


@pytest.mark.parametrize("version,expected", [((1, 3), {"Input"}),
                                              ((1, 5), {"Input", "StorageBuffer", "Workgroup"})])
def test_entry_point_interface_depends_on_version(version, expected):
    b = ModuleBuilder(version=version)
    u32 = b.type_uint()
    buf = b.storage_buffer(u32, binding=0)
    shared = b.variable(b.type_array(u32, 4), "Workgroup")
    with b.function(b.type_void()) as fn:
        gid = b.load_builtin("GlobalInvocationId", b.type_vector(u32, 3))
        x = b.op("CompositeExtract", u32, gid, 0)
        b.op("Store", b.buffer_element(buf, x), x)
        b.op("Store", b.op("AccessChain", b.type_pointer("Workgroup", u32), shared, b.u32(0)), x)
    spirv = compute(b, fn)
    validate(spirv, "vulkan1.1" if version == (1, 3) else "vulkan1.2")
    interface = decoded(spirv, "OpEntryPoint")[0][3:]
    classes = {ops[0] for ops in decoded(spirv, "OpVariable")}
    assert len(interface) == len(expected) and classes == {"Input", "StorageBuffer", "Workgroup"}


def test_generated_methods_and_forward_references():
    b = ModuleBuilder()
    u32 = b.type_uint()
    with b.function(b.type_void()) as fn:
        later = b.new_id()
        with b.loop() as lp:
            i = b.phi(u32, (b.u32(0), lp.preheader), (later, lp.continue_label))
            lp.while_(b.ULessThan(b.type_bool(), i, b.u32(10)))
            lp.continuing()
            assert b.IAdd(u32, i, b.u32(1), result_id=later) == later
    validate(compute(b, fn))
    assert isinstance(later, Id) and repr(later) == f"%{int(later)}"


def test_function_variables_go_to_the_entry_block():
    b = ModuleBuilder()
    u32, boolean = b.type_uint(), b.type_bool()
    with b.function(b.type_void()) as fn, b.if_(b.constant(boolean, True)):
        v = b.variable(u32, "Function")
        b.op("Store", v, b.u32(3))
    spirv = compute(b, fn)
    validate(spirv)
    ops = [i.opname for i in read(spirv).instructions]
    first_label = ops.index("OpLabel")
    assert ops[first_label + 1] == "OpVariable"


def test_structured_helpers_produce_valid_control_flow():
    b = ModuleBuilder()
    u32, boolean = b.type_uint(), b.type_bool()
    t = b.constant(boolean, True)
    with b.function(u32, [u32]) as helper, b.if_(t) as sel:
        b.ret(helper.params[0])
        sel.else_()
        b.ret(b.u32(0))
    with b.function(b.type_void()) as fn, b.loop() as outer:
        outer.while_(t)
        with b.loop() as inner:
            with b.if_(t):
                inner.break_()
            with b.if_(t):
                inner.continue_()
        with b.switch(b.op("FunctionCall", u32, helper.id, b.u32(4))) as sw:
            with sw.case(0):
                outer.break_()
            with sw.default():
                pass
    validate(compute(b, fn))
    ops = [i.opname for i in read(b.to_bytes()).instructions]
    assert ops.count("OpLoopMerge") == 2 and ops.count("OpSelectionMerge") == 4
    assert "OpUnreachable" in ops  # the helper's merge block: both branches returned


@pytest.mark.parametrize("action,message", [
    (lambda b, u: b.op("Branch", b.new_id()), "structured helpers"),
    (lambda b, u: b.op("IAdd", u, 1, 2), "must be an id"),
    (lambda b, u: b.op("IAdd", u, b.u32(1)), "missing operand"),
    (lambda b, u: b.op("IAdd", u, b.u32(1), b.u32(1), b.u32(1)), "too many"),
    (lambda b, u: b.op("Frobnicate", u), "unknown SPIR-V instruction"),
    (lambda b, u: b.op("Load", u, b.u32(0), "Sometimes"), "not a MemoryAccess bit"),
    (lambda b, u: b.decorate(b.u32(0), "Bindingg", 1), "not a Decoration enumerant"),
    (lambda b, u: b.constant(u, -1), "does not fit an unsigned 32-bit"),
    (lambda b, u: (b.ret(), b.op("IAdd", u, b.u32(1), b.u32(1))), "unreachable"),
    (lambda b, u: b.begin_function(u), "cannot nest"),
    (lambda b, u: b.capability("Telepathy"), "unknown capability"),
])
def test_errors_say_what_is_wrong(action, message):
    b = ModuleBuilder()
    u32 = b.type_uint()
    b.begin_function(b.type_void())
    with pytest.raises(BuildError, match=message):
        action(b, u32)


def test_control_flow_misuse_is_refused():
    b = ModuleBuilder()
    u32, boolean = b.type_uint(), b.type_bool()
    t = b.constant(boolean, True)
    b.begin_function(u32)
    with pytest.raises(BuildError, match="without a return"):
        b.end_function()
    b = ModuleBuilder()
    t = b.constant(b.type_bool(), True)
    b.begin_function(b.type_void())
    with b.loop() as outer:
        outer.while_(t)
        with b.loop(), pytest.raises(BuildError, match="innermost loop"):
            outer.break_()
    b = ModuleBuilder()
    u32 = b.type_uint()
    b.begin_function(b.type_void())
    with b.switch(b.u32(1)) as sw:
        with sw.case(1):
            pass
        with pytest.raises(BuildError, match="twice"), sw.case(1):
            pass
    with pytest.raises(BuildError, match="must be inside a function"):
        ModuleBuilder().op("IAdd", u32, b.u32(1), b.u32(1))
    b2 = ModuleBuilder()
    b2.begin_function(b2.type_void())
    with pytest.raises(BuildError, match="still open"):
        b2.to_bytes()


def test_spec_constants_carry_their_spec_ids():
    b = ModuleBuilder()
    u32 = b.type_uint()
    s = b.spec_constant(u32, 64, spec_id=2, name="WIDTH")
    flag = b.spec_constant(b.type_bool(), False, spec_id=3)
    double = b.spec_constant_op(u32, "IMul", s, b.u32(2))
    size = b.spec_constant_composite(b.type_vector(u32, 3), [s, b.u32(1), b.u32(1)])
    b.decorate(size, "BuiltIn", "WorkgroupSize")
    with b.function(b.type_void()) as fn:
        b.op("Select", u32, flag, double, s)
    b.entry_point("GLCompute", fn, "main")
    spirv = b.to_bytes()
    validate(spirv)
    ids = {ops[0]: ops[2] for ops in decoded(spirv, "OpDecorate") if ops[1] == "SpecId"}
    assert ids == {s: 2, flag: 3}
    assert read(spirv).names()[s] == "WIDTH"


def test_glsl_std_450_calls_import_the_set_once():
    b = ModuleBuilder()
    f32 = b.type_float()
    with b.function(b.type_void()) as fn:
        x = b.glsl("Sqrt", f32, b.f32(2.0))
        b.glsl("Pow", f32, x, b.f32(3.0))
        with pytest.raises(BuildError, match=r"not in GLSL\.std\.450"):
            b.glsl("Sqrtt", f32, x)
        with pytest.raises(BuildError, match="too many"):
            b.glsl("Sqrt", f32, x, x)
    spirv = compute(b, fn)
    validate(spirv)
    assert decoded(spirv, "OpExtInstImport") == [["GLSL.std.450"]]
    assert [ops[1] for ops in decoded(spirv, "OpExtInst")] == ["Sqrt", "Pow"]


def test_loop_condition_computed_with_a_construct(mgr):
    """`while i < n and data[i] != 0`: the short-circuit `and` needs a selection, so the
    condition is tested after the header, as `if not c: break`."""
    b = ModuleBuilder()
    u32, boolean = b.type_uint(), b.type_bool()
    data = b.storage_buffer(u32, binding=0)
    out = b.storage_buffer(u32, binding=1)
    with b.function(b.type_void()) as fn:
        with b.loop() as lp:
            nxt = b.new_id()
            i = b.phi(u32, (b.u32(0), lp.preheader), (nxt, lp.continue_label))
            first = b.op("ULessThan", boolean, i, b.u32(16))
            with b.if_(first) as sel:
                nonzero = b.op("INotEqual", boolean, b.op("Load", u32, b.buffer_element(data, i)),
                               b.u32(0))
            c = b.phi(boolean, (nonzero, sel.then_end), (first, sel.else_end))
            lp.while_(c)
            lp.continuing()
            b.op("IAdd", u32, i, b.u32(1), result_id=nxt)
        b.op("Store", b.buffer_element(out, b.u32(0)), i)
    spirv = compute(b, fn)
    validate(spirv)
    values = np.array([3, 1, 4, 1, 5, 0, 2, 6] + [7] * 8, dtype=np.uint32)
    tensors = [mgr.tensor_t(values, kp.TensorTypes.host),
               mgr.tensor_t(np.zeros(1, np.uint32), kp.TensorTypes.host)]
    none = np.array([], dtype=np.uint32)
    seq = mgr.sequence()
    seq.record(kp.OpAlgoDispatch(mgr.algorithm(tensors, spirv, [1, 1, 1], none, none)))
    seq.eval()
    assert tensors[1].data()[0] == 5
