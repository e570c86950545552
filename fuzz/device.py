"""Running generated programs on a device through vksycl's public API, and comparing
what it computed with the host's answer."""

from __future__ import annotations

import contextlib
import importlib.util
import itertools
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

import vksycl as sycl
from vksycl.ext.oneapi import experimental as syclexp

from . import program as P
from .generate import Caps
from .interpret import Result
from .scalars import BY_NAME

_MODULES = itertools.count()


def queue() -> sycl.queue:
    """A queue on the default device (lavapipe where there is no GPU)."""
    return sycl.queue()


def device_caps(q: sycl.queue) -> Caps:
    d = q.get_device()
    sizes = d.get_info(sycl.info.device.sub_group_sizes)
    return Caps(fp16=d.has(sycl.aspect.fp16), fp64=d.has(sycl.aspect.fp64),
                int64=d.has(sycl.aspect.int64),
                atomic64=d.has(sycl.aspect.atomic64), sub_group_size=max(sizes))


def load(path: Path) -> ModuleType:
    """Import a generated module from its file (the compiler reads kernels' source)."""
    name = f"vksycl_fuzz_{path.stem}_{next(_MODULES)}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def prepare(module: ModuleType, p: P.Program) -> dict[str, np.ndarray]:
    """The initial contents of the program's buffers."""
    return {b.name: host_array(module, b) for b in p.buffers}


def run(q: sycl.queue, module: ModuleType, p: P.Program, arrays: dict[str, np.ndarray]
        ) -> dict[str, np.ndarray]:
    """Launch the program's kernel over memory holding `arrays` (USM, or sycl.buffers
    whose accessors the kernel takes); its contents afterwards."""
    captured = [BY_NAME[ty].dtype.type(value) for _, ty, value in p.captures]
    if p.front == "free":
        return _run_free_function(q, getattr(module, p.name), p, arrays, captured)
    maker = getattr(module, f"make_{p.name}")

    def make(*memory: Any) -> Any:  # the kernel over its memory and captured scalars
        return maker(*memory, *captured)

    launch = sycl.nd_range((p.n,), (p.wg,)) if p.wg else sycl.range(*(p.shape or (p.n,)))
    if p.memory == "buffer":
        return _run_on_buffers(q, make, launch, p, arrays)
    ptrs = {}
    try:
        for name, a in arrays.items():
            ptr = sycl.malloc_shared(len(a), a.dtype, q)
            np.asarray(ptr)[: len(a)] = a
            ptrs[name] = ptr
        kernel = make(*(ptrs[b.name] for b in p.buffers))
        reductions = [sycl.reduction(ptrs[target], getattr(sycl, op)(), property_list=[
            sycl.property.reduction.initialize_to_identity()] if identity_first else None)
            for _, target, op, identity_first in p.reductions]
        q.parallel_for(launch, *reductions, kernel).wait()
        return {name: np.asarray(ptr)[: len(arrays[name])].copy() for name, ptr in ptrs.items()}
    finally:
        q.wait()
        for ptr in ptrs.values():
            sycl.free(ptr, q)


def _run_free_function(q: sycl.queue, kernel: Any, p: P.Program,
                       arrays: dict[str, np.ndarray], captured: list) -> dict[str, np.ndarray]:
    ptrs = {}
    try:
        for name, a in arrays.items():
            ptr = sycl.malloc_shared(len(a), a.dtype, q)
            np.asarray(ptr)[: len(a)] = a
            ptrs[name] = ptr
        syclexp.nd_launch(q, sycl.nd_range((p.n,), (p.wg or p.n,)),
                          syclexp.kernel_function(kernel), *ptrs.values(), *captured)
        q.wait()
        return {name: np.asarray(ptr)[: len(arrays[name])].copy() for name, ptr in ptrs.items()}
    finally:
        q.wait()
        for ptr in ptrs.values():
            sycl.free(ptr, q)


def _run_on_buffers(q: sycl.queue, make: Any, launch: Any, p: P.Program,
                    arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    out = {name: a.copy() for name, a in arrays.items()}
    with contextlib.ExitStack() as stack:
        buffers = {name: stack.enter_context(sycl.buffer(a)) for name, a in out.items()}

        def cgf(h: sycl.handler) -> None:
            accessors = [sycl.accessor(buffers[b.name], h, sycl.read_only if b.role == "in"
                                       else sycl.read_write) for b in p.buffers]
            h.parallel_for(launch, make(*accessors))

        q.submit(cgf).wait()
    return out  # written back when the buffers were destroyed


def host_array(module: ModuleType, b: P.Buffer) -> np.ndarray:
    st = getattr(module, b.ty, None)
    if st is not None:
        a = np.zeros(len(b.data), st.dtype)
        for k, values in enumerate(b.data):
            a[k] = values
        return a
    return np.array(b.data, BY_NAME[b.ty].dtype)


@dataclass
class Mismatch:
    buffer: str
    index: int
    item: int
    expected: Any
    got: Any

    def __str__(self) -> str:
        return (f"{self.buffer}[{self.index}] (work-item {self.item}): expected "
                f"{self.expected!r}, got {self.got!r}")


def compare(p: P.Program, want: Result, got: dict[str, np.ndarray]) -> list[Mismatch]:
    """Where the device's buffers differ from the host's answer, at the elements of
    work-items whose result is defined (atomic buffers: when every one's is)."""
    out = []
    for b in p.buffers:
        if b.role == "in":
            continue
        if b.role in ("atomic", "reduction") and not want.shared_valid:
            continue
        expected, actual = want.memory[b.name], got[b.name]
        for k, e in enumerate(expected):
            item = k % p.n
            if b.role == "out" and not want.valid[item]:
                continue
            a = actual[k]
            if isinstance(e, dict):
                a = {name: a[name].item() for name in e}
                same = all(_same(e[name], a[name]) for name in e)
            else:
                a = a.item()
                tol = want.tolerance.get((b.name, k))
                same = _same(e, a) if tol is None else abs(a - e) <= tol
            if not same:
                out.append(Mismatch(b.name, k, item, e, a))
    return out


def _same(e: Any, a: Any) -> bool:
    if isinstance(e, bool) or isinstance(a, bool):
        return bool(e) == bool(a)
    return e == a
