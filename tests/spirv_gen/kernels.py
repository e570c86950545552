"""Compute kernels built with spirv_gen, one per feature the compiler relies on. Each
function returns the module's bytes for a SPIR-V version; tests run them on lavapipe."""

from __future__ import annotations

from spirv_gen import ModuleBuilder

LOCAL = 64


class Kernel:
    """Common scaffolding: scalar types, the global / local invocation ids, the entry."""

    def __init__(self, version: tuple[int, int], local: int = LOCAL) -> None:
        self.b = b = ModuleBuilder(version=version)
        self.local = local
        self.void = b.type_void()
        self.bool = b.type_bool()
        self.u32 = b.type_uint()
        self.i32 = b.type_int()
        self.f32 = b.type_float()
        self.uvec3 = b.type_vector(self.u32, 3)

    def builtin_x(self, name: str):
        return self.b.op("CompositeExtract", self.u32, self.b.load_builtin(name, self.uvec3), 0)

    def load(self, buf, index, t):
        return self.b.op("Load", t, self.b.buffer_element(buf, index))

    def store(self, buf, index, value) -> None:
        self.b.op("Store", self.b.buffer_element(buf, index), value)

    def finish(self, fn) -> bytes:
        self.b.entry_point("GLCompute", fn, "main")
        self.b.execution_mode(fn, "LocalSize", self.local, 1, 1)
        return self.b.to_bytes()


def saxpy(version) -> bytes:
    """y[i] = fma(a, x[i], y[i]) for i < n; a and n are push constants."""
    k = Kernel(version)
    b = k.b
    x = b.storage_buffer(k.f32, binding=0, readonly=True, name="x")
    y = b.storage_buffer(k.f32, binding=1, name="y")
    pc = b.push_constants([k.f32, k.u32], name="params")
    with b.function(k.void, name="main") as fn:
        i = k.builtin_x("GlobalInvocationId")
        a = b.push_constant(pc, 0)
        n = b.push_constant(pc, 1)
        with b.if_(b.op("ULessThan", k.bool, i, n)):
            r = b.glsl("Fma", k.f32, a, k.load(x, i, k.f32), k.load(y, i, k.f32))
            k.store(y, i, r)
    return k.finish(fn)


def workgroup_sum(version) -> bytes:
    """out[group] = sum of the group's 64 inputs: a tree in workgroup memory, a loop whose
    stride is a header phi, and barriers between the steps."""
    k = Kernel(version)
    b = k.b
    src = b.storage_buffer(k.u32, binding=0, readonly=True)
    out = b.storage_buffer(k.u32, binding=1)
    shared = b.variable(b.type_array(k.u32, LOCAL), "Workgroup", name="shared")
    ptr_w = b.type_pointer("Workgroup", k.u32)
    with b.function(k.void) as fn:
        gid = k.builtin_x("GlobalInvocationId")
        lid = k.builtin_x("LocalInvocationId")
        group = k.builtin_x("WorkgroupId")
        b.op("Store", b.op("AccessChain", ptr_w, shared, lid), k.load(src, gid, k.u32))
        b.op("ControlBarrier", "Workgroup", "Workgroup", "AcquireRelease|WorkgroupMemory")
        with b.loop() as lp:
            nxt = b.new_id()
            stride = b.phi(k.u32, (b.u32(LOCAL // 2), lp.preheader), (nxt, lp.continue_label))
            lp.while_(b.op("UGreaterThan", k.bool, stride, b.u32(0)))
            with b.if_(b.op("ULessThan", k.bool, lid, stride)):
                mine = b.op("AccessChain", ptr_w, shared, lid)
                other = b.op("AccessChain", ptr_w, shared, b.op("IAdd", k.u32, lid, stride))
                s = b.op("IAdd", k.u32, b.op("Load", k.u32, mine), b.op("Load", k.u32, other))
                b.op("Store", mine, s)
            b.op("ControlBarrier", "Workgroup", "Workgroup", "AcquireRelease|WorkgroupMemory")
            lp.continuing()
            b.op("ShiftRightLogical", k.u32, stride, b.u32(1), result_id=nxt)
        with b.if_(b.op("IEqual", k.bool, lid, b.u32(0))):
            k.store(out, group, b.op("Load", k.u32, b.op("AccessChain", ptr_w, shared, b.u32(0))))
    return k.finish(fn)


def histogram(version) -> bytes:
    """bins[data[i] % 16] += 1 with OpAtomicIAdd; peak = atomic max of data."""
    k = Kernel(version)
    b = k.b
    data = b.storage_buffer(k.u32, binding=0, readonly=True)
    bins = b.storage_buffer(k.u32, binding=1)
    peak = b.storage_buffer(k.u32, binding=2)
    with b.function(k.void) as fn:
        i = k.builtin_x("GlobalInvocationId")
        v = k.load(data, i, k.u32)
        slot = b.op("UMod", k.u32, v, b.u32(16))
        b.op("AtomicIAdd", k.u32, b.buffer_element(bins, slot), "Device", "Relaxed", b.u32(1))
        b.op("AtomicUMax", k.u32, b.buffer_element(peak, b.u32(0)), "Device", "Relaxed", v)
    return k.finish(fn)


def subgroups(version) -> bytes:
    """Per invocation: the sub-group sum and inclusive scan of its value, the sub-group's
    first value (broadcast) and, to check against, its sub-group id, local index and size."""
    k = Kernel(version)
    b = k.b
    src = b.storage_buffer(k.u32, binding=0, readonly=True)
    out = b.storage_buffer(k.u32, binding=1)  # 6 words per invocation
    with b.function(k.void) as fn:
        i = k.builtin_x("GlobalInvocationId")
        v = k.load(src, i, k.u32)
        base = b.op("IMul", k.u32, i, b.u32(6))
        values = [
            b.op("GroupNonUniformIAdd", k.u32, "Subgroup", "Reduce", v),
            b.op("GroupNonUniformIAdd", k.u32, "Subgroup", "InclusiveScan", v),
            b.op("GroupNonUniformBroadcastFirst", k.u32, "Subgroup", v),
            b.op("Load", k.u32, b.builtin("SubgroupId", k.u32)),
            b.op("Load", k.u32, b.builtin("SubgroupLocalInvocationId", k.u32)),
            b.op("Load", k.u32, b.builtin("SubgroupSize", k.u32)),
        ]
        for j, value in enumerate(values):
            k.store(out, b.op("IAdd", k.u32, base, b.u32(j)), value)
    return k.finish(fn)


def wide(version) -> bytes:
    """64-bit types: d[i] = sqrt(x[i]) * 2.5 + x[i] in double; q[i] = a[i] * 3000000007 -
    (a[i] >> 3) in int64; total += a[i] with a 64-bit atomic."""
    k = Kernel(version)
    b = k.b
    f64 = b.type_float(64)
    i64 = b.type_int(64)
    u64 = b.type_uint(64)
    x = b.storage_buffer(f64, binding=0, readonly=True)
    d = b.storage_buffer(f64, binding=1)
    a = b.storage_buffer(i64, binding=2, readonly=True)
    q = b.storage_buffer(i64, binding=3)
    total = b.storage_buffer(u64, binding=4)
    with b.function(k.void) as fn:
        i = k.builtin_x("GlobalInvocationId")
        xv = k.load(x, i, f64)
        r = b.op("FAdd", f64, b.op("FMul", f64, b.glsl("Sqrt", f64, xv),
                                   b.constant(f64, 2.5)), xv)
        k.store(d, i, r)
        av = k.load(a, i, i64)
        prod = b.op("IMul", i64, av, b.constant(i64, 3_000_000_007))
        k.store(q, i, b.op("ISub", i64, prod, b.op("ShiftRightArithmetic", i64, av,
                                                      b.constant(i64, 3))))
        b.op("AtomicIAdd", u64, b.buffer_element(total, b.u32(0)), "Device", "Relaxed",
             b.op("Bitcast", u64, av))
    return k.finish(fn)


def collatz(version) -> bytes:
    """Collatz step counts (a loop with phis, an if/else whose merge has a phi, a capped
    break), then a switch on i % 4 through a Function variable, and a call to a helper."""
    k = Kernel(version)
    b = k.b
    src = b.storage_buffer(k.u32, binding=0, readonly=True)
    out = b.storage_buffer(k.u32, binding=1)
    with b.function(k.u32, [k.u32], name="twice") as helper:
        b.ret(b.op("IAdd", k.u32, helper.params[0], helper.params[0]))
    with b.function(k.void, name="main") as fn:
        i = k.builtin_x("GlobalInvocationId")
        start = k.load(src, i, k.u32)
        result = b.variable(k.u32, "Function", name="result")
        with b.loop() as lp:
            n_next, steps_next = b.new_id(), b.new_id()
            n = b.phi(k.u32, (start, lp.preheader), (n_next, lp.continue_label))
            steps = b.phi(k.u32, (b.u32(0), lp.preheader), (steps_next, lp.continue_label))
            lp.while_(b.op("INotEqual", k.bool, n, b.u32(1)))
            with b.if_(b.op("UGreaterThanEqual", k.bool, steps, b.u32(1000))):
                lp.break_()
            odd = b.op("IEqual", k.bool, b.op("BitwiseAnd", k.u32, n, b.u32(1)), b.u32(1))
            with b.if_(odd) as sel:
                up = b.op("IAdd", k.u32, b.op("IMul", k.u32, n, b.u32(3)), b.u32(1))
                sel.else_()
                down = b.op("ShiftRightLogical", k.u32, n, b.u32(1))
            b.phi(k.u32, (up, sel.then_end), (down, sel.else_end), result_id=n_next)
            lp.continuing()
            b.op("IAdd", k.u32, steps, b.u32(1), result_id=steps_next)
        b.op("Store", result, steps)
        with b.switch(b.op("UMod", k.u32, i, b.u32(4))) as sw:
            with sw.case(1):
                b.op("Store", result, b.op("FunctionCall", k.u32, helper.id, steps))
            with sw.case(2, 3):
                b.op("Store", result, b.op("IAdd", k.u32, steps, b.u32(100)))
        k.store(out, i, b.op("Load", k.u32, result))
    return k.finish(fn)


def spec_scale(version) -> bytes:
    """out[i] = in[i] * S, S a specialization constant (SpecId 0, default 3)."""
    k = Kernel(version)
    b = k.b
    src = b.storage_buffer(k.u32, binding=0, readonly=True)
    out = b.storage_buffer(k.u32, binding=1)
    s = b.spec_constant(k.u32, 3, spec_id=0, name="S")
    with b.function(k.void) as fn:
        i = k.builtin_x("GlobalInvocationId")
        k.store(out, i, b.op("IMul", k.u32, k.load(src, i, k.u32), s))
    return k.finish(fn)


ALL = {
    "saxpy": saxpy,
    "workgroup_sum": workgroup_sum,
    "histogram": histogram,
    "subgroups": subgroups,
    "wide": wide,
    "collatz": collatz,
    "spec_scale": spec_scale,
}
