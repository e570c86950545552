"""A machine without what vksycl needs: `import vksycl` works, and asking for a device or a
queue raises `errc.runtime` saying what to install. Each case runs in a process of its own,
the machine made bare there: the Vulkan loader unloadable (as where libvulkan.so.1 is not
installed: the `vulkan` binding's dlopen and vksycl's Kompute module, which links it, fail
as they would), the loader pointed at no driver, or the driver reporting no shaderInt64.
Public API only, so it runs against an installed wheel too."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

ASK = textwrap.dedent("""
    import vksycl as sycl
    for ask in (sycl.device.get_devices, sycl.queue):
        try:
            ask()
        except sycl.exception as e:
            assert e.code() == sycl.errc.runtime, e.code()
            print(e)
        else:
            raise SystemExit(f"{ask.__name__} found a device")
""")

NO_LOADER = textwrap.dedent("""
    import importlib.abc, importlib.util, os, sys

    # the binding's cffi module, loaded (not its package, which would load the loader) and
    # given a dlopen that fails, before anything imports the package
    found = importlib.util.find_spec("vulkan")
    spec = importlib.util.spec_from_file_location(
        "vulkan._vulkancache", os.path.join(os.path.dirname(found.origin), "_vulkancache.py"))
    cache = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cache)
    sys.modules["vulkan._vulkancache"] = cache

    MISSING = "libvulkan.so.1: cannot open shared object file: No such file or directory"

    class NoLoader:
        def __init__(self, ffi):
            self._ffi = ffi
        def dlopen(self, name, *args):
            raise OSError(f"cannot load library {name!r}: {MISSING}")
        def __getattr__(self, name):
            return getattr(self._ffi, name)

    class NoKompute(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == "vksycl._kp":
                raise ImportError(MISSING)

    cache.ffi = NoLoader(cache.ffi)
    sys.meta_path.insert(0, NoKompute())
""")

NO_INT64 = textwrap.dedent("""
    import vulkan
    real = vulkan.vkGetPhysicalDeviceFeatures2

    def without_int64(handle, features):
        real(handle, features)
        features.features.shaderInt64 = 0

    vulkan.vkGetPhysicalDeviceFeatures2 = without_int64
""")


def _bare(prelude: str, **env: str) -> list[str]:
    """The messages of `get_devices()` and `queue()` after `prelude`, with `env`."""
    full = {k: v for k, v in os.environ.items() if not k.startswith("VKSYCL_DEVICE")}
    proc = subprocess.run([sys.executable, "-c", prelude + ASK], capture_output=True,
                          text=True, timeout=120, env={**full, **env})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 2, proc.stdout
    return lines


def test_no_vulkan_loader_names_the_package():
    for message in _bare(NO_LOADER):
        assert "libvulkan.so.1" in message and "libvulkan1" in message, message


# the loader itself reports, through the validation messenger, the driver it was sent to
@pytest.mark.validation_expected(r"loader_get_json: Failed to open JSON file /nonexistent/",
                                 r"vkCreateInstance: Found no drivers!")
def test_no_driver_names_the_drivers():
    nowhere = "/nonexistent/vksycl_no_driver.json"
    for message in _bare("", VK_DRIVER_FILES=nowhere, VK_ICD_FILENAMES=nowhere,
                         VK_ADD_DRIVER_FILES=""):
        assert "mesa-vulkan-drivers" in message and "GPU's" in message, message


def test_a_device_without_a_needed_feature_is_named():
    import vksycl as sycl

    names = {d.get_info(sycl.info.device.name) for d in sycl.device.get_devices()}
    for message in _bare(NO_INT64):
        assert "shaderInt64" in message and all(n in message for n in names), message
