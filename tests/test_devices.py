"""Device discovery, aspects, info queries, selectors and `python -m vksycl info`, on the
Vulkan devices of the machine (lavapipe in CI)."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import vksycl as sycl
from vksycl.exceptions import errc
from vksycl.runtime.devices import vulkan_devices
from vksycl.runtime.platform import all_vulkan_devices, device, select_device

LAVAPIPE_VENDOR_ID = 0x10005  # VK_VENDOR_ID_MESA


@pytest.fixture(scope="module")
def lavapipe() -> sycl.device:
    found = [d for d in all_vulkan_devices() if d.vulkan.driver_id == "MESA_LLVMPIPE"]
    assert found, f"lavapipe is not among the Vulkan devices: {all_vulkan_devices()}"
    return found[0]


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VKSYCL_DEVICE_SELECTOR", raising=False)
    monkeypatch.delenv("VKSYCL_HIDE_ASPECTS", raising=False)


def _run_info(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items()
            if k not in ("VKSYCL_DEVICE_SELECTOR", "VKSYCL_HIDE_ASPECTS")}
    full.update(env or {})
    return subprocess.run([sys.executable, "-m", "vksycl", "info", *args], env=full,
                          capture_output=True, text=True, timeout=120)


def test_enumeration_order_is_komputes(lavapipe: sycl.device) -> None:
    """`index` is what kp.Manager(index) opens: Kompute's own C++ enumeration agrees."""
    from vksycl import _kp as kp

    for d in all_vulkan_devices():
        props = kp.Manager(d.vulkan.index).get_device_properties()
        assert props["device_name"] == d.get_info(sycl.info.device.name)
        assert props["max_work_group_invocations"] == d.get_info(
            sycl.info.device.max_work_group_size)
        assert tuple(props["max_work_group_size"]) == d.vulkan.max_compute_work_group_size
        assert tuple(props["max_work_group_count"]) == d.vulkan.max_compute_work_group_count
        assert props["timestamps_supported"] == (d.vulkan.timestamp_valid_bits > 0)


def test_lavapipe_facts(lavapipe: sycl.device) -> None:
    d, vk = lavapipe, lavapipe.vulkan
    q = d.get_info
    assert q(sycl.info.device.device_type) is sycl.info.device_type.cpu
    assert d.is_cpu() and not d.is_gpu() and not d.is_accelerator()
    assert q(sycl.info.device.vendor_id) == LAVAPIPE_VENDOR_ID
    assert q(sycl.info.device.vendor) == "Mesa"
    assert q(sycl.info.device.name).startswith("llvmpipe")
    assert q(sycl.info.device.max_work_group_size) == 1024
    # llvmpipe's sub-group is its SIMD width in 32-bit lanes, which its name states.
    bits = int(re.search(r"(\d+) bits", vk.name).group(1))
    assert q(sycl.info.device.sub_group_sizes) == [bits // 32]
    assert q(sycl.info.device.max_num_sub_groups) == 1024 // (bits // 32)
    assert q(sycl.info.device.local_mem_size) == vk.limits["maxComputeSharedMemorySize"] > 0
    assert q(sycl.info.device.global_mem_size) == sum(
        h.size for h in vk.memory_heaps if h.device_local) > 0
    assert 0 < q(sycl.info.device.max_mem_alloc_size) <= q(sycl.info.device.global_mem_size)
    assert vk.max_storage_buffer_range == vk.limits["maxStorageBufferRange"] >= 1 << 27
    assert vk.max_push_constants_size >= 128
    assert vk.timestamp_valid_bits == 64 and vk.timestamp_period > 0
    assert vk.subgroup_in_compute and {"basic", "vote", "ballot", "arithmetic",
                                       "shuffle"} <= vk.subgroup_operations
    assert q(sycl.info.device.version) == ".".join(map(str, vk.api_version))
    assert vk.api_version >= (1, 1, 0)
    assert q(sycl.info.device.max_compute_units) >= 1
    assert q(sycl.info.device.is_available) is True
    assert q(sycl.info.device.ext_vksycl_vulkan_index) == vk.index
    assert q(sycl.info.device.ext_vksycl_vulkan_info) is vk
    platform = q(sycl.info.device.platform)
    assert platform == d.get_platform()
    assert platform.get_info(sycl.info.platform.name) == "Vulkan llvmpipe"
    assert platform.get_info(sycl.info.platform.vendor) == "Mesa"
    assert platform.get_info(sycl.info.platform.version).startswith("Mesa")
    assert d in platform.get_devices()
    assert d.get_backend() is sycl.backend.vulkan


def test_work_item_sizes_put_vulkan_x_last(lavapipe: sycl.device) -> None:
    x, y, z = lavapipe.vulkan.max_compute_work_group_size
    assert lavapipe.get_info(sycl.info.device.max_work_item_sizes_1d) == (x,)
    assert lavapipe.get_info(sycl.info.device.max_work_item_sizes_2d) == (y, x)
    assert lavapipe.get_info(sycl.info.device.max_work_item_sizes_3d) == (z, y, x)


def test_every_device_descriptor_is_answered(lavapipe: sycl.device) -> None:
    descriptors = [v for v in vars(sycl.info.device).values()
                   if isinstance(v, sycl.info.descriptor)]
    assert len(descriptors) > 30
    for desc in descriptors:
        assert lavapipe.get_info(desc) is not None, desc
    for desc in (sycl.info.platform.name, sycl.info.platform.vendor, sycl.info.platform.version,
                 sycl.info.platform.profile, sycl.info.platform.extensions):
        assert lavapipe.get_platform().get_info(desc) is not None, desc


def test_wrong_descriptor_is_invalid(lavapipe: sycl.device) -> None:
    with pytest.raises(sycl.exception) as e:
        lavapipe.get_info(sycl.info.platform.name)
    assert e.value.code() == errc.invalid
    with pytest.raises(sycl.exception) as e:
        lavapipe.get_platform().get_info(sycl.info.device.name)
    assert e.value.code() == errc.invalid
    with pytest.raises(sycl.exception) as e:
        lavapipe.has("fp64")
    assert e.value.code() == errc.invalid


def test_descriptors_are_named_and_distinct() -> None:
    assert repr(sycl.info.device.name) == "info.device.name"
    assert repr(sycl.info.event_profiling.command_end) == "info.event_profiling.command_end"
    assert sycl.info.device.name is not sycl.info.platform.name
    assert sycl.info.device.name != sycl.info.platform.name


def test_aspects_follow_vulkan_features() -> None:
    for d in all_vulkan_devices():
        f = d.vulkan.features
        assert d.has(sycl.aspect.fp64) == f["shaderFloat64"]
        assert d.has(sycl.aspect.fp16) == f.get("shaderFloat16", False)
        assert d.has(sycl.aspect.int64) == f["shaderInt64"]
        assert d.has(sycl.aspect.atomic64) == (
            f["shaderInt64"] and f.get("shaderBufferInt64Atomics", False))
        assert d.has(sycl.aspect.queue_profiling) == (d.vulkan.timestamp_valid_bits > 0)
        assert d.has(sycl.aspect.gpu) == d.is_gpu()
        assert d.has(sycl.aspect.cpu) == d.is_cpu()
        assert d.has(sycl.aspect.ext_oneapi_virtual_functions) == f["shaderInt64"]
        for always in (sycl.aspect.usm_device_allocations, sycl.aspect.usm_host_allocations,
                       sycl.aspect.usm_shared_allocations, sycl.aspect.ext_oneapi_graph):
            assert d.has(always)
        for never in (sycl.aspect.usm_system_allocations, sycl.aspect.online_compiler,
                      sycl.aspect.online_linker, sycl.aspect.accelerator,
                      sycl.aspect.emulated, sycl.aspect.host_debuggable):
            assert not d.has(never)
        listed = d.get_info(sycl.info.device.aspects)
        assert listed == [a for a in sycl.aspect if d.has(a)]


def test_lavapipe_aspects(lavapipe: sycl.device) -> None:
    # Mesa 22+ lavapipe supports all of these (vulkaninfo: shaderFloat64, shaderFloat16,
    # shaderBufferInt64Atomics, timestampValidBits = 64).
    for a in (sycl.aspect.cpu, sycl.aspect.fp64, sycl.aspect.fp16, sycl.aspect.atomic64,
              sycl.aspect.int64, sycl.aspect.queue_profiling):
        assert lavapipe.has(a), a
    assert not lavapipe.has(sycl.aspect.gpu)


def test_hide_aspects(lavapipe: sycl.device, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VKSYCL_HIDE_ASPECTS", "fp64, fp16")
    assert not lavapipe.has(sycl.aspect.fp64) and not lavapipe.has(sycl.aspect.fp16)
    assert lavapipe.has(sycl.aspect.atomic64)
    listed = lavapipe.get_info(sycl.info.device.aspects)
    assert sycl.aspect.fp64 not in listed and sycl.aspect.cpu in listed
    assert not lavapipe.get_platform().has(sycl.aspect.fp64)
    with pytest.raises(sycl.exception) as e:
        sycl.device(sycl.aspect_selector(sycl.aspect.fp64))
    assert e.value.code() == errc.runtime
    monkeypatch.setenv("VKSYCL_HIDE_ASPECTS", "fp64,no_such_aspect")
    with pytest.raises(sycl.exception) as e:
        lavapipe.has(sycl.aspect.fp64)
    assert e.value.code() == errc.invalid and "no_such_aspect" in str(e.value)
    monkeypatch.delenv("VKSYCL_HIDE_ASPECTS")
    assert lavapipe.has(sycl.aspect.fp64)


def test_devices_compare_by_physical_identity(lavapipe: sycl.device) -> None:
    before = all_vulkan_devices()
    fresh = vulkan_devices(refresh=True)
    after = all_vulkan_devices()
    assert fresh is not None and all(a is not b for a, b in zip(before, after, strict=True))
    assert before == after
    assert {hash(d) for d in before} == {hash(d) for d in after}
    assert len(set(before) | set(after)) == len(before)
    assert sycl.device(sycl.cpu_selector_v) == lavapipe
    assert sycl.device(lavapipe) == lavapipe
    assert lavapipe.get_platform() == sycl.platform(sycl.cpu_selector_v)
    assert lavapipe.get_platform() in sycl.platform.get_platforms()


def test_platforms_group_devices_by_driver() -> None:
    platforms = sycl.platform.get_platforms()
    grouped = [d for p in platforms for d in p.get_devices()]
    assert sorted(d.vulkan.index for d in grouped) == [d.vulkan.index for d in
                                                        sycl.device.get_devices()]
    for p in platforms:
        drivers = {(d.vulkan.driver_id, d.vulkan.driver_name) for d in p.get_devices()}
        assert len(drivers) == 1


def test_default_selection_order(lavapipe: sycl.device) -> None:
    def as_type(t: str) -> sycl.device:
        return device._of(dataclasses.replace(lavapipe.vulkan, device_type=t))

    order = ["discrete_gpu", "integrated_gpu", "virtual_gpu", "cpu", "other"]
    scores = [sycl.default_selector_v(as_type(t)) for t in order]
    assert scores == sorted(scores, reverse=True) and len(set(scores)) == len(scores)
    assert min(scores) >= 0
    assert sycl.gpu_selector_v(as_type("virtual_gpu")) >= 0
    assert sycl.gpu_selector_v(as_type("cpu")) < 0
    assert sycl.cpu_selector_v(as_type("integrated_gpu")) < 0
    default = sycl.device()
    best = max(sycl.default_selector_v(d) for d in sycl.device.get_devices())
    assert sycl.default_selector_v(default) == best


def test_gpu_selector_on_this_machine(lavapipe: sycl.device) -> None:
    gpus = [d for d in sycl.device.get_devices() if d.is_gpu()]
    if gpus:
        assert sycl.device(sycl.gpu_selector_v) in gpus
    else:
        with pytest.raises(sycl.exception) as e:
            sycl.device(sycl.gpu_selector_v)
        assert e.value.code() == errc.runtime
        assert "gpu_selector_v" in str(e.value) and lavapipe.vulkan.name in str(e.value)
    assert sycl.device.get_devices(sycl.info.device_type.gpu) == gpus


def test_cpu_and_accelerator_selectors(lavapipe: sycl.device) -> None:
    assert sycl.device(sycl.cpu_selector_v) == lavapipe
    assert sycl.device.get_devices(sycl.info.device_type.cpu)[0] == lavapipe
    assert sycl.device.get_devices(sycl.info.device_type.accelerator) == []
    assert sycl.device.get_devices(sycl.info.device_type.automatic) == [sycl.device()]
    with pytest.raises(sycl.exception) as e:
        sycl.device(sycl.accelerator_selector_v)
    assert e.value.code() == errc.runtime


def test_custom_selectors(lavapipe: sycl.device) -> None:
    assert sycl.device(lambda d: 5 if "llvmpipe" in d.get_info(sycl.info.device.name)
                       else -1) == lavapipe
    assert select_device(lambda d: 0) == sycl.device.get_devices()[0]  # first among equals
    with pytest.raises(sycl.exception) as e:
        sycl.device(lambda d: -1)
    assert e.value.code() == errc.runtime and lavapipe.vulkan.name in str(e.value)
    with pytest.raises(sycl.exception) as e:
        sycl.device(lambda d: "yes")
    assert e.value.code() == errc.invalid
    with pytest.raises(sycl.exception) as e:
        sycl.device(42)
    assert e.value.code() == errc.invalid


def test_aspect_selector(lavapipe: sycl.device) -> None:
    assert sycl.device(sycl.aspect_selector(sycl.aspect.cpu, sycl.aspect.fp64)) == lavapipe
    assert sycl.device(sycl.aspect_selector([sycl.aspect.cpu], [sycl.aspect.gpu])) == lavapipe
    with pytest.raises(sycl.exception) as e:
        sycl.device(sycl.aspect_selector([sycl.aspect.cpu], [sycl.aspect.fp64]))
    assert e.value.code() == errc.runtime
    with pytest.raises(TypeError):
        sycl.aspect_selector("fp64")


def test_selector_env_by_type_index_and_name(lavapipe: sycl.device,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VKSYCL_DEVICE_SELECTOR", "cpu")
    assert all(d.is_cpu() for d in sycl.device.get_devices())
    assert sycl.device() == lavapipe
    monkeypatch.setenv("VKSYCL_DEVICE_SELECTOR", str(lavapipe.vulkan.index))
    assert sycl.device.get_devices() == [lavapipe]
    monkeypatch.setenv("VKSYCL_DEVICE_SELECTOR", "LLVMpipe")
    assert sycl.device() == lavapipe
    monkeypatch.setenv("VKSYCL_DEVICE_SELECTOR", f"no-such-device,{lavapipe.vulkan.index}")
    assert sycl.device.get_devices() == [lavapipe]
    monkeypatch.setenv("VKSYCL_DEVICE_SELECTOR", "gpu")
    gpus = [d for d in all_vulkan_devices() if d.is_gpu()]
    if gpus:
        assert sycl.device.get_devices() == gpus
    else:
        with pytest.raises(sycl.exception) as e:
            sycl.device()
        assert e.value.code() == errc.runtime


def test_selector_env_matching_nothing(lavapipe: sycl.device,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VKSYCL_DEVICE_SELECTOR", "no-such-device")
    for attempt in (sycl.device, sycl.device.get_devices, sycl.platform.get_platforms,
                    lambda: sycl.device(sycl.cpu_selector_v)):
        with pytest.raises(sycl.exception) as e:
            attempt()
        assert e.value.code() == errc.runtime
        assert "no-such-device" in str(e.value) and lavapipe.vulkan.name in str(e.value)
    index = len(all_vulkan_devices())
    monkeypatch.setenv("VKSYCL_DEVICE_SELECTOR", str(index))
    with pytest.raises(sycl.exception) as e:
        sycl.device()
    assert e.value.code() == errc.runtime


def test_sub_devices_are_not_supported(lavapipe: sycl.device) -> None:
    with pytest.raises(sycl.exception) as e:
        lavapipe.create_sub_devices()
    assert e.value.code() == errc.feature_not_supported


def test_enumeration_prints_nothing() -> None:
    code = "from vksycl.runtime.devices import vulkan_devices; vulkan_devices()"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "" and r.stderr == ""


def test_info_command(lavapipe: sycl.device) -> None:
    r = _run_info()
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    out = r.stdout
    header = f"[{lavapipe.vulkan.index}] {lavapipe.vulkan.name}"
    assert header in out
    default = sycl.device()
    assert f"[{default.vulkan.index}] {default.vulkan.name} [default]" in out
    block = out[out.index(header):]
    assert re.search(r"aspects +cpu fp16 fp64 atomic64", block)
    assert re.search(r"max work-group size +1024", block)
    assert re.search(rf"sub-group sizes +{lavapipe.vulkan.subgroup_size}\n", block)
    assert re.search(r"storage buffer range +\d", block)
    assert re.search(r"push constants +\d+ B", block)


def test_info_command_json(lavapipe: sycl.device) -> None:
    r = _run_info("--json", env={"VKSYCL_HIDE_ASPECTS": "fp64"})
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["errors"] == []
    facts = next(f for f in report["devices"] if f["index"] == lavapipe.vulkan.index)
    assert facts["hidden_aspects"] == ["fp64"] and "fp64" not in facts["aspects"]
    assert facts["max_work_group_size"] == lavapipe.get_info(
        sycl.info.device.max_work_group_size)
    assert facts["local_mem_size"] == lavapipe.get_info(sycl.info.device.local_mem_size)
    assert facts["max_storage_buffer_range"] == lavapipe.vulkan.max_storage_buffer_range
    # lavapipe's one queue family does graphics too
    assert facts["queue_family"] == 0 and facts["queue_family_has_graphics"] is True
    assert report["default_device"] == sycl.device().vulkan.index


def test_info_command_reports_a_bad_selector(lavapipe: sycl.device) -> None:
    r = _run_info(env={"VKSYCL_DEVICE_SELECTOR": "no-such-device"})
    assert r.returncode == 1
    assert lavapipe.vulkan.name in r.stdout and "[hidden by selector]" in r.stdout
    assert "VKSYCL_DEVICE_SELECTOR='no-such-device' matches none" in r.stderr


def test_a_device_without_buffer_device_addresses_is_refused_by_name():
    """USM pointers are device addresses: a device lacking the feature gets no queue and no
    memory, with an error naming the feature, rather than a second pointer model."""
    from types import MappingProxyType

    from vksycl.runtime.platform import device

    vk = sycl.device().vulkan
    weaker = dataclasses.replace(
        vk, name="weaker device",
        features=MappingProxyType({**vk.features, "bufferDeviceAddress": False}))
    dev = device._of(weaker)
    for attempt in (lambda: sycl.queue(dev), lambda: sycl.malloc_device(4, sycl.int32, dev,
                                                                        sycl.context(dev))):
        with pytest.raises(sycl.exception) as ei:
            attempt()
        assert ei.value.code() == errc.feature_not_supported
        assert "weaker device lacks the Vulkan feature bufferDeviceAddress" in str(ei.value)


def test_queue_family_choice():
    """A family for compute without graphics is taken where it keeps the timestamps the
    first compute family has; else the first family with compute."""
    import vulkan as vk

    from vksycl.runtime.devices import QueueFamily, _queue_family

    g = vk.VK_QUEUE_GRAPHICS_BIT | vk.VK_QUEUE_COMPUTE_BIT | vk.VK_QUEUE_TRANSFER_BIT
    c = vk.VK_QUEUE_COMPUTE_BIT | vk.VK_QUEUE_TRANSFER_BIT
    t = vk.VK_QUEUE_TRANSFER_BIT

    def family(flags, bits=64):
        return QueueFamily(flags, 1, bits, bool(flags & vk.VK_QUEUE_COMPUTE_BIT),
                           bool(flags & vk.VK_QUEUE_GRAPHICS_BIT))

    assert _queue_family((family(g), family(t), family(c))) == 2  # NVIDIA's layout
    assert _queue_family((family(g),)) == 0  # lavapipe's, MoltenVK's
    assert _queue_family((family(t), family(g))) == 1
    assert _queue_family((family(g), family(c, 0))) == 0  # would lose timestamps
    assert _queue_family((family(g, 0), family(c, 0))) == 1
    assert _queue_family((family(t),)) == -1


def test_engine_submits_to_the_chosen_family():
    d = sycl.device()
    vk = d.vulkan
    chosen = vk.queue_families[vk.compute_queue_family]
    assert chosen.compute
    assert vk.timestamp_valid_bits == chosen.timestamp_valid_bits
    q = sycl.queue(d, [sycl.property.queue.enable_profiling()])
    x = sycl.malloc_device(4, sycl.int32, q)
    q.fill(x, np.int32(3), 4).wait()

    def add(i):
        x[i] = x[i] + 4

    e = q.parallel_for(sycl.range(4), add)
    out = np.zeros(4, np.int32)
    q.memcpy(out, x, 16).wait()
    assert out.tolist() == [7] * 4
    start = e.get_profiling_info(sycl.info.event_profiling.command_start)
    assert e.get_profiling_info(sycl.info.event_profiling.command_end) >= start > 0
    sycl.free(x, q)
