"""The Khronos validation layer on request (VKSYCL_VALIDATE), the device features kernels
use, enabled and checked before any driver call, and what the layer found."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import numpy as np
import pytest
import vulkan as vk

import vksycl as sycl
from vksycl.ext.oneapi import experimental as syclexp
from vksycl.runtime import validation
from vksycl.runtime.context import scheduler_for
from vksycl.runtime.glsl import compile_glsl
from vksycl.runtime.shader_features import required_features

sys.path.append(str(Path(__file__).parent))
from validation_hooks import LAYER_GAPS, reportable

ROOT = Path(__file__).resolve().parent.parent
TESTS = Path(__file__).resolve().parent


def code_and_message(fn) -> tuple[sycl.errc, str]:
    with pytest.raises(sycl.exception) as info:
        fn()
    return info.value.code(), str(info.value)


def run_child(code: str, **env: str) -> subprocess.CompletedProcess:
    """`code` run as a script by a fresh interpreter importing this checkout's vksycl,
    with `env` added (an empty value removes the variable)."""
    full = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    for k, v in env.items():
        if v:
            full[k] = v
        else:
            full.pop(k, None)
    script = Path(tempfile.mkdtemp()) / "child.py"  # kernels need a source file
    script.write_text(textwrap.dedent(code))
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=300, env=full)


# -- the switch ----------------------------------------------------------------------------

LAYER_LOADED = 'Insert instance layer "VK_LAYER_KHRONOS_validation"'
QUICKSTART = """
    import numpy as np, vksycl as sycl
    q = sycl.queue()
    y = sycl.malloc_shared(64, sycl.float32, q)
    def body(i):
        y[i] = 2.0
    q.parallel_for(sycl.range(64), body).wait()
    assert np.all(np.asarray(y) == 2.0)
"""


def test_the_layer_loads_only_when_asked():
    # installed by ci/setup.sh, yet no instance of vksycl's loads it unasked: it slows
    # every Vulkan call (Kompute 0.9.0 loaded it wherever it was installed)
    quiet = run_child(QUICKSTART, VK_LOADER_DEBUG="layer", VKSYCL_VALIDATE="")
    assert quiet.returncode == 0, quiet.stderr
    assert LAYER_LOADED not in quiet.stderr
    asked = run_child(QUICKSTART, VK_LOADER_DEBUG="layer", VKSYCL_VALIDATE="1")
    assert asked.returncode == 0, asked.stderr
    # the discovery instance and the device's Kompute manager
    assert asked.stderr.count(LAYER_LOADED) == 2
    echoed = [line.removeprefix("Vulkan validation ") for line in asked.stderr.splitlines()
              if line.startswith("Vulkan validation ")]
    assert reportable(echoed) == []


def test_a_missing_layer_is_named_with_its_package():
    child = run_child("""
        import vksycl as sycl
        try:
            sycl.queue()
        except sycl.exception as e:
            print(e.code() is sycl.errc.runtime, e)
    """, VKSYCL_VALIDATE="1", VK_LAYER_PATH="/nonexistent", VK_ADD_LAYER_PATH="")
    assert child.returncode == 0, child.stderr
    assert child.stdout.startswith("True ")
    assert validation.LAYER in child.stdout and "vulkan-validationlayers" in child.stdout


def test_a_bad_switch_value_is_refused(monkeypatch):
    monkeypatch.setenv(validation.ENV, "sometimes")
    code, message = code_and_message(validation.requested)
    assert code is sycl.errc.invalid and "sometimes" in message
    monkeypatch.setenv(validation.ENV, "0")
    assert not validation.requested()


INVALID_CALL = """
    import vulkan as vk
    import vksycl as sycl
    from vksycl.runtime.context import scheduler_for


    def test_an_invalid_call():
        q = sycl.queue()
        device = scheduler_for(q.get_device()).engine.native_handles()[2]
        device = vk.ffi.cast("VkDevice", device)
        # VUID-VkBufferCreateInfo-size-00912: a buffer of no bytes
        buffer = vk.vkCreateBuffer(device, vk.VkBufferCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, size=0,
            usage=vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
            sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE), None)
        vk.vkDestroyBuffer(device, buffer, None)


    def test_a_valid_launch():
        q = sycl.queue()
        y = sycl.malloc_shared(8, sycl.int32, q)
        def body(i):
            y[i] = i
        q.parallel_for(sycl.range(8), body).wait()
        assert list(y[k] for k in range(8)) == list(range(8))
"""


def _suite_with_the_hooks(pytester: pytest.Pytester, source: str) -> None:
    pytester.makeconftest(f"""
        import sys
        sys.path.append({str(TESTS)!r})
        from validation_hooks import (
            pytest_runtest_call, pytest_runtest_setup, pytest_runtest_teardown)
    """)
    pytester.makepyfile(test_child=textwrap.dedent(source))


def test_a_validation_error_fails_the_test_that_caused_it(pytester, monkeypatch):
    monkeypatch.setenv(validation.ENV, "1")
    monkeypatch.delenv(validation.LOG_ENV, raising=False)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
    _suite_with_the_hooks(pytester, INVALID_CALL)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*test_an_invalid_call*", "*VUID-VkBufferCreateInfo-size-00912*"])
    assert "test_a_valid_launch FAILED" not in result.stdout.str()


def test_a_subprocess_reports_through_the_log(tmp_path):
    log = tmp_path / "validation.log"
    child = run_child(textwrap.dedent(INVALID_CALL) + "\ntest_an_invalid_call()\n",
                      VKSYCL_VALIDATE="1",
                      VKSYCL_VALIDATE_LOG=str(log))
    assert child.returncode == 0, child.stderr
    assert "VUID-VkBufferCreateInfo-size-00912" in child.stderr  # echoed at once
    assert "VUID-VkBufferCreateInfo-size-00912" in log.read_text()  # and never taken


def test_only_the_layers_own_gaps_are_forgiven():
    # what Debian 12's layer said on an H100 of cooperative matrices, which it predates
    gaps = [
        "warning: Validation Warning: [ VUID_Undefined ] | Device Extension "
        "VK_KHR_cooperative_matrix is not supported by this layer.  Using this extension "
        "may adversely affect validation results",
        "error: Validation Error: [ VUID-VkDeviceCreateInfo-pNext-pNext ] | vkCreateDevice: "
        "pCreateInfo->pNext chain includes a structure with unknown VkStructureType "
        "(1000593000); Allowed structures are [...]",
        "error: Validation Error: [ VUID-VkShaderModuleCreateInfo-pCode-04146 ] | "
        "vkCreateShaderModule(): A SPIR-V Extension (SPV_KHR_cooperative_matrix) was "
        "declared that is not supported by Vulkan.",
        "error: Validation Error: [ UNASSIGNED-CoreValidation-Shader-InconsistentSpirv ] | "
        "SPIR-V module not valid: Invalid capability operand: 6022",
    ]
    real = [
        "error: Validation Error: [ VUID-VkDeviceCreateInfo-pNext-pNext ] | unknown "
        "VkStructureType (1000506001)",
        "error: Validation Error: [ VUID-VkShaderModuleCreateInfo-pCode-04146 ] | A SPIR-V "
        "Extension (SPV_KHR_float_controls2) was declared that is not supported by Vulkan.",
        "error: Validation Error: SPIR-V module not valid: Invalid capability operand: 60221",
    ]
    assert reportable(gaps + real) == real
    assert all(any(g.search(m) for g in LAYER_GAPS) for m in gaps)


# -- features kernels use ----------------------------------------------------------------

def test_float_atomics_in_usm_and_work_group_memory(q, usm):
    dev = q.get_device()
    if not (dev.has(sycl.aspect.atomic_float32_add) and
            dev.has(sycl.aspect.atomic_float32_minmax)):
        pytest.skip("the device has no float32 atomics")  # lavapipe and NVIDIA have them
    out = usm.of(np.array([0.0, 1e9, -1e9, 0.0], np.float32))

    def body(it):
        i = it.get_global_id(0)
        tile = syclexp.work_group_memory(sycl.float32, (2,))
        if it.get_local_id(0) == 0:
            tile[0] = 0.0
            tile[1] = -1e9
        sycl.group_barrier(it.get_group())
        x = sycl.float32(i) * 0.5
        sycl.atomic_ref(out).fetch_add(x)
        sycl.atomic_ref(out + 1).fetch_min(x)
        sycl.atomic_ref(out + 2).fetch_max(x)
        sycl.atomic_ref(tile).fetch_add(1.0)
        sycl.atomic_ref(tile + 1).fetch_max(x)
        sycl.group_barrier(it.get_group())
        if it.get_local_id(0) == 0:
            sycl.atomic_ref(out + 3).fetch_add(tile[0] + tile[1])

    q.parallel_for(sycl.nd_range((256,), (64,)), body).wait()
    got = usm.read(out, 4)
    halves = np.arange(256) * 0.5
    # each group adds its 64 items and its largest half-index: 63.5 + 127.5 + ...
    want = [halves.sum(), 0.0, 127.5, 4 * 64 + sum(64 * g * 0.5 + 31.5 for g in range(4))]
    assert got.tolist() == want


def test_int64_atomics_and_narrow_storage(q, usm):
    wide = usm.of(np.zeros(2, np.int64))
    narrow8 = usm.of(np.arange(64, dtype=np.int8))
    narrow16 = usm.of(np.arange(64, dtype=np.int16))

    def body(it):
        i = it.get_global_id(0)
        tile = syclexp.work_group_memory(sycl.int64, (1,))
        if it.get_local_id(0) == 0:
            tile[0] = sycl.int64(0)
        sycl.group_barrier(it.get_group())
        sycl.atomic_ref(tile).fetch_add(sycl.int64(1) << 33)
        sycl.atomic_ref(wide).fetch_add(sycl.int64(narrow8[i]) + sycl.int64(narrow16[i]))
        narrow16[i] = sycl.int16(narrow16[i] * 3)
        sycl.group_barrier(it.get_group())
        if it.get_local_id(0) == 0:
            sycl.atomic_ref(wide + 1).fetch_max(tile[0])

    q.parallel_for(sycl.nd_range((64,), (32,)), body).wait()
    assert usm.read(wide, 2).tolist() == [2 * sum(range(64)), 32 << 33]
    assert usm.read(narrow16, 64).tolist() == [3 * k for k in range(64)]


def test_the_features_each_kernel_needs_are_read_from_its_spirv():
    # the same capability needs one feature on work-group memory and another on buffers
    source = """
        #version 450
        #extension GL_EXT_shader_atomic_float : require
        #extension GL_EXT_shader_atomic_int64 : require
        #extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
        layout(local_size_x = 64) in;
        layout(std430, binding = 0) buffer B { float b[]; int64_t w[]; };
        shared float s[1];
        void main() {
            atomicAdd(s[0], 1.0);
            atomicAdd(w[0], 1l);
            b[0] = s[0];
        }
    """
    needs = required_features(compile_glsl(textwrap.dedent(source), "vulkan1.2"))
    assert {"shaderSharedFloat32AtomicAdd", "shaderBufferInt64Atomics", "shaderInt64"} <= needs
    assert "shaderBufferFloat32AtomicAdd" not in needs
    assert "shaderSharedInt64Atomics" not in needs


def test_a_kernel_needing_a_hidden_feature_is_refused_before_the_driver(q, usm, monkeypatch):
    out = usm.of(np.zeros(1, np.float32))

    def adds_floats(i):
        sycl.atomic_ref(out).fetch_add(2.0)

    monkeypatch.setenv("VKSYCL_HIDE_ASPECTS", "atomic_float32_add")
    code, message = code_and_message(lambda: q.parallel_for(sycl.range(8), adds_floats))
    assert code is sycl.errc.kernel_not_supported
    assert "shaderBufferFloat32AtomicAdd" in message and "atomic_float32_add" in message
    monkeypatch.delenv("VKSYCL_HIDE_ASPECTS")
    if q.get_device().has(sycl.aspect.atomic_float32_add):
        q.parallel_for(sycl.range(8), adds_floats).wait()
        assert usm.read(out)[0] == 16.0


def test_sub_group_operations_on_narrow_and_wide_values(q, usm):
    if not q.get_device().has(sycl.aspect.subgroup_extended_types):
        pytest.skip("the device has no sub-group extended types")  # lavapipe and NVIDIA do
    size = q.get_device().vulkan.subgroup_size
    src16 = usm.of(np.arange(size, dtype=np.int16))
    src64 = usm.of(np.arange(size, dtype=np.int64) << 40)
    out = usm.of(np.zeros(2, np.int64))

    def reduces_narrow_and_wide(it):
        i = it.get_global_id(0)
        sg = it.get_sub_group()
        a = sycl.reduce_over_group(sg, src16[i], sycl.plus())
        b = sycl.reduce_over_group(sg, src64[i], sycl.maximum())
        if i == 0:
            out[0] = sycl.int64(a)
            out[1] = b

    q.parallel_for(sycl.nd_range((size,), (size,)), reduces_narrow_and_wide).wait()
    assert usm.read(out, 2).tolist() == [sum(range(size)), (size - 1) << 40]
    ck = next(iter(_compiled(reduces_narrow_and_wide)))
    assert "shaderSubgroupExtendedTypes" in required_features(ck.binary)


def _compiled(pyfn):
    """The compiled kernels of a Python kernel function launched in this process."""
    import gc
    return [o for o in gc.get_objects() if type(o).__name__ == "CompiledKernel"
            and o.name == pyfn.__name__]


@pytest.mark.parametrize(("hidden", "feature"), [
    ("subgroup_extended_types", "shaderSubgroupExtendedTypes"),
    ("storage_buffer_8bit", "storageBuffer8BitAccess"),
    ("atomic_float32_minmax", "shaderSharedFloat32AtomicMinMax"),
])
def test_each_hidden_feature_refuses_its_kernels(q, usm, monkeypatch, hidden, feature):
    size = q.get_device().vulkan.subgroup_size
    narrow = usm.of(np.arange(size, dtype=np.int8))
    out = usm.of(np.zeros(1, np.int32))

    def sub_group_int16(it):
        out[0] = sycl.int32(sycl.reduce_over_group(
            it.get_sub_group(), sycl.int16(it.get_global_id(0)), sycl.plus()))

    def loads_int8(it):
        out[0] = sycl.int32(narrow[it.get_global_id(0)])

    def local_float_max(it):
        tile = syclexp.work_group_memory(sycl.float32, (1,))
        sycl.atomic_ref(tile).fetch_max(sycl.float32(it.get_global_id(0)))

    uses_it = {"subgroup_extended_types": sub_group_int16,
               "storage_buffer_8bit": loads_int8,
               "atomic_float32_minmax": local_float_max}[hidden]
    monkeypatch.setenv("VKSYCL_HIDE_ASPECTS", hidden)
    code, message = code_and_message(
        lambda: q.parallel_for(sycl.nd_range((size,), (size,)), uses_it))
    assert code is sycl.errc.kernel_not_supported
    assert feature in message and hidden in message


def test_float64_atomic_add_names_its_feature_where_missing(q, usm):
    if q.get_device().has(sycl.aspect.atomic_float64_add):
        pytest.skip("the device adds float64 atomically")  # lavapipe does not
    out = usm.of(np.zeros(1, np.float64))

    def adds_doubles(i):
        sycl.atomic_ref(out).fetch_add(1.0)

    code, message = code_and_message(lambda: q.parallel_for(sycl.range(8), adds_doubles))
    assert code is sycl.errc.kernel_not_supported
    assert "shaderBufferFloat64AtomicAdd" in message


def test_every_feature_aspect_follows_the_device():
    dev = sycl.device()
    f = dev.vulkan.features
    pairs = {sycl.aspect.atomic_float32_add: "shaderBufferFloat32AtomicAdd",
             sycl.aspect.atomic_float64_add: "shaderBufferFloat64AtomicAdd",
             sycl.aspect.atomic_float16_minmax: "shaderBufferFloat16AtomicMinMax",
             sycl.aspect.storage_buffer_8bit: "storageBuffer8BitAccess",
             sycl.aspect.storage_buffer_16bit: "storageBuffer16BitAccess",
             sycl.aspect.subgroup_extended_types: "shaderSubgroupExtendedTypes"}
    for asp, feature in pairs.items():
        assert dev.has(asp) == bool(f.get(feature)), asp
    assert dev.has(sycl.aspect.vulkan_memory_model) == bool(
        f.get("vulkanMemoryModel") and f.get("vulkanMemoryModelDeviceScope"))


def test_the_device_enables_the_float_atomic_extensions_it_offers(q):
    engine = scheduler_for(q.get_device()).engine
    assert engine.native_handles()[2]  # a device of vksycl's own
    offered = q.get_device().vulkan.extensions
    from vksycl.runtime.context import optional_extensions
    wanted = optional_extensions(q.get_device().vulkan)
    for ext in ("VK_EXT_shader_atomic_float", "VK_EXT_shader_atomic_float2"):
        assert (ext in wanted) == (ext in offered)


# -- what the layer found ----------------------------------------------------------------

def test_external_buffer_properties_are_asked_with_their_stype(q):
    from vksycl.runtime.external_memory import USAGE, _Vulkan
    if "VK_KHR_external_memory_fd" not in q.get_device().vulkan.extensions:
        pytest.skip("the device cannot export memory")
    features = _Vulkan(q.get_device(), "test").features(USAGE)
    assert features & vk.VK_EXTERNAL_MEMORY_FEATURE_EXPORTABLE_BIT


def test_a_second_make_device_checks_its_features():
    from test_interop import NEEDED, App
    app = App()
    try:
        dev = app.make_device()
        code, message = code_and_message(lambda: sycl.make_device(
            instance=app.instance, physical_device=app.physical, device=app.device,
            queue_family_index=app.family, enabled_features=(*NEEDED, "warpDrive")))
        assert code is sycl.errc.invalid and "warpDrive" in message
        code, message = code_and_message(lambda: sycl.make_device(
            instance=app.instance, physical_device=app.physical, device=app.device,
            queue_family_index=app.family, enabled_features=(*NEEDED, "shaderFloat64")))
        assert code is sycl.errc.invalid and "shaderFloat64" in message
        assert app.make_device() is dev
    finally:
        from vksycl.runtime.interop import release_native_device
        release_native_device(dev)
        app.destroy()


@pytest.mark.parametrize("data", [np.array([1, "a", None], dtype=object),
                                  np.array(["ab", "cd"]),
                                  np.array([1, 2], dtype="datetime64[s]")],
                         ids=["object", "str", "datetime"])
def test_a_buffer_of_what_no_kernel_holds_is_refused(data):
    code, message = code_and_message(lambda: sycl.buffer(data))
    assert code is sycl.errc.invalid and str(data.dtype) in message
    code, _ = code_and_message(lambda: sycl.buffer(sycl.range(4), data.dtype))
    assert code is sycl.errc.invalid


def test_the_portable_joint_matrix_refuses_an_unlisted_shape(q, usm):
    from vksycl.ext.oneapi.experimental import matrix as jm
    a = usm.of(np.ones(49, np.float32))

    def body(it):
        sg = it.get_sub_group()
        c = jm.joint_matrix(sg, sycl.float32, jm.use.accumulator, 7, 7)
        jm.joint_matrix_load(sg, c, a, 7, jm.layout.row_major)
        jm.joint_matrix_store(sg, c, a, 7, jm.layout.row_major)

    monkeypatch_free = os.environ.get("VKSYCL_HIDE_ASPECTS")
    assert monkeypatch_free is None or "cooperative" not in monkeypatch_free
    size = q.get_device().vulkan.subgroup_size
    code, message = code_and_message(
        lambda: q.parallel_for(sycl.nd_range((size,), (size,)), body))
    assert code is sycl.errc.kernel_not_supported
    assert "7x7 float32 matrix of use.accumulator" in message
    assert "matrix_combinations" in message and "test_validation.py" in message


def test_float16_floor_mod_then_products_keep_ieee_zero(q, usm):
    # found by the differential campaign (seed 777, program 873): without
    # SignedZeroInfNanPreserve lavapipe folded 0 * 2**44 in float16 into NaN
    flags = usm.of(np.ones(32, np.bool_))
    out = usm.of(np.full(32, -1234, np.float16))
    c0 = np.float16(-55.0)

    def body(i):
        a4 = flags[i]
        a6 = c0
        a6 %= 0.5
        w = sycl.int32(0)
        while w < 4 and a4:
            w += 1
            for _ in range(-3, 8, 1):
                a6 *= w
        out[i] = a6

    q.parallel_for(sycl.range(32), body).wait()
    assert usm.read(out, 32).tolist() == [0.0] * 32


def test_infinities_nans_and_signed_zeros_are_kept(q, usm):
    # SignedZeroInfNanPreserve: a driver may no longer assume they never occur (lavapipe
    # still folds x * 0.0 into 0.0, which that mode does not forbid it alone)
    x = usm.of(np.array([np.inf, 0.0, -0.0, 1e30], np.float32))
    y = usm.of(np.zeros(4, np.float32))

    def body(i):
        if i == 0:
            y[0] = x[3] * x[3]          # overflows to inf
        elif i == 1:
            y[1] = x[0] - x[0]          # inf - inf: NaN
        elif i == 2:
            y[2] = 1.0 / x[2]           # 1 / -0: -inf
        else:
            y[3] = -x[1]                # -0.0

    q.parallel_for(sycl.range(4), body).wait()
    got = usm.read(y, 4)
    assert got[0] == np.inf and np.isnan(got[1]) and got[2] == -np.inf
    assert got[3] == 0.0 and np.signbit(got[3])
