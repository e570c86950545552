"""`python -m vksycl info [--json]`: vksycl's version and build (where it is installed, its
Kompute module, whether the launch path runs compiled), the Vulkan devices it sees with
their drivers, aspects and the limits that shape kernels, and which one the default
selector picks."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from . import __version__, info, mypyc_modules
from .exceptions import exception
from .runtime.aspects import HIDE_ASPECTS_ENV, aspect, hidden_aspects, vulkan_aspects
from .runtime.devices import instance_version
from .runtime.engine import kompute_module
from .runtime.platform import SELECTOR_ENV, all_vulkan_devices, device, select_device


def _size(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.4g} {unit}"
    return f"{n} B"


def _facts(d: device, hidden: frozenset[aspect]) -> dict[str, Any]:
    vk = d.vulkan
    q = d.get_info
    real = vulkan_aspects(vk)
    return {
        "index": vk.index,
        "name": vk.name,
        "device_type": q(info.device.device_type).name,
        "vulkan_device_type": vk.device_type,
        "vendor": f"{vk.vendor} (0x{vk.vendor_id:04x})",
        "platform": d.get_platform().get_info(info.platform.name),
        "driver": f"{vk.driver_info or vk.driver_name} (version {vk.driver_version_string})",
        "vulkan_version": q(info.device.version),
        "aspects": [a.name for a in aspect if a in real and a not in hidden],
        "hidden_aspects": [a.name for a in aspect if a in real and a in hidden],
        "max_compute_units": q(info.device.max_compute_units),
        "max_work_group_size": q(info.device.max_work_group_size),
        "max_compute_work_group_size_xyz": list(vk.max_compute_work_group_size),
        "max_compute_work_group_count_xyz": list(vk.max_compute_work_group_count),
        "sub_group_sizes": q(info.device.sub_group_sizes),
        "sub_group_operations": sorted(vk.subgroup_operations),
        "local_mem_size": q(info.device.local_mem_size),
        "global_mem_size": q(info.device.global_mem_size),
        "max_mem_alloc_size": q(info.device.max_mem_alloc_size),
        "max_storage_buffer_range": vk.max_storage_buffer_range,
        "max_push_constants_size": vk.max_push_constants_size,
        "min_storage_buffer_offset_alignment": vk.min_storage_buffer_offset_alignment,
        "timestamp_period_ns": vk.timestamp_period,
        "timestamp_valid_bits": vk.timestamp_valid_bits,
        "queue_family": vk.compute_queue_family,
        "queue_family_has_graphics": vk.compute_queue_family >= 0 and
        vk.queue_families[vk.compute_queue_family].graphics,
    }


def _print_device(f: dict[str, Any], marks: str) -> None:
    rows = [
        ("type", f"{f['device_type']} (Vulkan {f['vulkan_device_type']})"),
        ("vendor", f["vendor"]),
        ("platform", f["platform"]),
        ("driver", f["driver"]),
        ("Vulkan", f["vulkan_version"]),
        ("aspects", " ".join(f["aspects"])),
        ("hidden aspects", " ".join(f["hidden_aspects"]) or "-"),
        ("compute units", f["max_compute_units"] or "unknown"),
        ("max work-group size", f"{f['max_work_group_size']} (x, y, z: "
                                f"{', '.join(map(str, f['max_compute_work_group_size_xyz']))})"),
        ("max work-groups", ", ".join(map(str, f["max_compute_work_group_count_xyz"]))),
        ("sub-group sizes", ", ".join(map(str, f["sub_group_sizes"]))),
        ("sub-group ops", " ".join(f["sub_group_operations"])),
        ("local memory", _size(f["local_mem_size"])),
        ("global memory", _size(f["global_mem_size"])),
        ("max allocation", _size(f["max_mem_alloc_size"])),
        ("storage buffer range", _size(f["max_storage_buffer_range"])),
        ("push constants", _size(f["max_push_constants_size"])),
        ("buffer offset align", f"{f['min_storage_buffer_offset_alignment']} B"),
        ("timestamps", f"{f['timestamp_valid_bits']} valid bits, "
                       f"{f['timestamp_period_ns']:g} ns per tick"),
        ("queue family", f"{f['queue_family']} (" + (
            "with graphics" if f["queue_family_has_graphics"] else "compute only") + ")"),
    ]
    print(f"[{f['index']}] {f['name']}{marks}")
    for key, value in rows:
        print(f"    {key:<21}{value}")


def _build() -> dict[str, Any]:
    """What this vksycl is: its version, where it lies, its Kompute module and which
    modules of the launch path run compiled."""
    import vksycl

    compiled = mypyc_modules.loaded()
    return {"version": __version__, "location": os.path.dirname(str(vksycl.__file__)),
            "kompute": kompute_module(), "compiled_modules": compiled,
            "launch_path": (f"compiled ({len(compiled)} of {len(mypyc_modules.MODULES)} "
                            "modules, mypyc)" if compiled else "interpreted")}


def _info(as_json: bool) -> int:
    build = _build()
    if not as_json:
        print(f"vksycl {build['version']} in {build['location']}")
        print(f"    Kompute module       {build['kompute']}")
        print(f"    launch path          {build['launch_path']}")
    try:
        devices = all_vulkan_devices()
        loader = ".".join(map(str, instance_version()))
    except exception as e:
        if as_json:
            print(json.dumps({**build, "errors": [str(e)]}, indent=2))
        print(f"vksycl: {e}", file=sys.stderr)
        return 1
    problems: list[str] = []
    visible: list[device] = []
    chosen: device | None = None
    hidden: frozenset[aspect] = frozenset()
    try:
        hidden = hidden_aspects()
    except exception as e:
        problems.append(str(e))
    try:
        visible = device.get_devices()
        chosen = select_device(None)
    except exception as e:
        problems.append(str(e))
    facts = [_facts(d, hidden) for d in devices]
    if as_json:
        print(json.dumps({
            **build,
            "vulkan_loader": loader,
            SELECTOR_ENV: os.environ.get(SELECTOR_ENV),
            HIDE_ASPECTS_ENV: os.environ.get(HIDE_ASPECTS_ENV),
            "default_device": chosen.vulkan.index if chosen is not None else None,
            "visible_devices": [d.vulkan.index for d in visible],
            "devices": facts,
            "errors": problems,
        }, indent=2))
    else:
        print(f"Vulkan loader {loader}; {len(devices)} device(s)")
        for env in (SELECTOR_ENV, HIDE_ASPECTS_ENV):
            print(f"{env}={os.environ.get(env, '')}")
        for d, f in zip(devices, facts, strict=True):
            marks = (" [default]" if d == chosen else "") + ("" if d in visible else
                                                             " [hidden by selector]")
            print()
            _print_device(f, marks)
    for problem in problems:
        print(f"vksycl: {problem}", file=sys.stderr)
    return 1 if problems else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vksycl")
    commands = parser.add_subparsers(dest="command", required=True)
    show = commands.add_parser("info", help="Vulkan devices, aspects and key limits")
    show.add_argument("--json", action="store_true", help="machine-readable output")
    args = parser.parse_args(argv)
    if args.command == "info":
        return _info(args.json)
    return 2


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # `python -m vksycl info | head`: the reader has what it wanted
        sys.stderr.close()
        sys.exit(0)
