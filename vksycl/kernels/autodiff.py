"""Tapes: reverse-mode automatic differentiation of kernel launches.

A `Tape` records the Python kernels launched while it is active, whatever the spelling
(`q.parallel_for`, `q.single_task`, a command group's handler, nd_range launches,
reductions): it wraps the one kernel front end every closure launch goes through, and
hears each free function kernel launch (`free_function.RECORDERS`), so recording adds no
second marshalling path. For each launch it packs, right away, the launch of the
kernel's adjoint (`compiler.adjoint`) with the values the forward launch captured and the
gradient of each differentiable pointer, so later changes to captured variables do not
change what the backward pass runs. `backward` submits those launches in reverse order.

On a queue recording a command graph, `backward` records its work as nodes instead, so
a graph replays forward and backward passes with no Python per kernel.

Gradients are one zeroed allocation per forward allocation (a pointer into it gets the
pointer at the same offset): a kernel writing `y[i]` reads `grad_y[i]`, a kernel reading
`x[j]` adds into `grad_x[j]`. Gradients accumulate over backward passes until `zero()`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ..compiler.adjoint import differentiable
from ..compiler.captures import path_getter, path_name
from ..compiler.kernel import CompiledKernel, load_or_compile
from ..exceptions import errc, exception
from ..runtime import handler
from ..runtime.aspects import aspect
from ..runtime.buffers import accessor, buffer
from ..runtime.commands import KernelLaunch
from ..runtime.malloc import malloc_device, malloc_shared
from ..runtime.queue import queue as sycl_queue
from ..runtime.usm import Allocation, ptr
from . import free_function
from .device_checks import check_supported, group_counts
from .launch import _kernel_function, compiled
from .marshal import ADDRESS, ArgumentBlock, Prepared
from .reduction import compiled_reduction

# adjoint kernels by the id of the forward kernel they differentiate, their variant and how
# they scatter on the device
# (compiled kernels stay in the compiler's cache, so their ids are not reused)
_ADJOINTS: dict[tuple, tuple[CompiledKernel, Prepared]] = {}


def _adjoint(device: Any, pyfn: Any, forward: CompiledKernel, variant: str
             ) -> tuple[CompiledKernel, Prepared]:
    """The adjoint of a kernel, compiled and prepared: `variant` is "keep" or "zero"
    (`KernelSpec.adjoint`)."""
    # by the device's aspects, so VKSYCL_HIDE_ASPECTS reaches adjoints too
    float_adds = tuple(bits for bits in (32, 64) if device.has(aspect[f"atomic_float{bits}_add"]))
    subgroups = {"vote", "arithmetic"} <= device.vulkan.subgroup_operations and \
        device.has(aspect.subgroup_extended_types)
    push_limit = device.vulkan.max_push_constants_size
    key = (id(forward), variant, float_adds, subgroups, push_limit)
    hit = _ADJOINTS.get(key)
    if hit is None:
        spec = dataclasses.replace(forward.spec, adjoint=variant, buffer_float_adds=float_adds,
                                   subgroup_scatter=subgroups)
        ck = load_or_compile(pyfn, spec, ("adjoint", *key), forward.spec_values)
        if ck.push_size > push_limit and not spec.args_in_memory:
            # a gradient pointer per differentiable pointer: arguments that fit the push
            # constants forward may not backward
            spec = dataclasses.replace(spec, args_in_memory=True)
            ck = load_or_compile(pyfn, spec, ("adjoint", "in memory", *key),
                                 forward.spec_values)
        hit = _ADJOINTS[key] = (ck, Prepared(ck, pyfn, ("adjoint", *key)))
    return hit


class Tape:
    """Records kernel launches made inside `with Tape() as tape:`; `tape.backward(seeds)`
    then runs their adjoints in reverse order. Launches whose kernels touch no
    float memory (USM or buffers) are not recorded. `queue` runs the backward pass and
    gradient initialisation; without one, the tape makes a queue for the device of the
    first launch it records. `loop_parts`: how many parts of a launch run slices of the
    reverse of a kernel's loop that only sums (`compiler.adjoint`'s `choose_split`): None
    picks enough work-items to fill a GPU, and one part on a CPU device; 1 splits none."""

    def __init__(self, queue: Any = None, loop_parts: int | None = None) -> None:
        if loop_parts is not None and (not isinstance(loop_parts, int | np.integer) or
                                       isinstance(loop_parts, bool) or loop_parts < 1):
            raise exception(errc.invalid, f"Tape: loop_parts must be None or a whole "
                            f"number of at least 1, got {loop_parts!r}")
        self._queue = queue
        self._loop_parts = loop_parts
        self._launches: list[KernelLaunch | exception] = []
        # gradient memory by the id of the allocation it belongs to (kept alive with it)
        self._gradients: dict[int, tuple[Allocation, Allocation]] = {}
        self._outer: Any = None
        # the kernel that last read each allocation's floats, and the allocations whose
        # floats a launch wrote, by the allocation's id
        self._readers: dict[int, str] = {}
        self._writers: set[int] = set()
        # the gradient of the float scalars captured under a name, by (name, dtype)
        self._cells: dict[tuple[str, str], ptr] = {}

    # -- recording -----------------------------------------------------------------------
    def __enter__(self) -> Tape:
        # the front end registered now (the handler module's, read as its attribute so a
        # compiled handler's stays as it is)
        self._outer = handler._kernel_front_end
        outer = self._outer

        def recording(device: Any, kernel: Any, launch: Any, properties: Any = None,
                      context: Any = None, reductions: tuple = (),
                      required: list | None = None) -> Any:
            command = outer(device, kernel, launch, properties, context, reductions,
                            required)
            self._record(device, context, kernel, launch, properties, reductions,
                         required=required)
            return command

        handler.use_kernel_front_end(recording)
        free_function.RECORDERS.append(self._record_arguments)
        return self

    def __exit__(self, *exc: Any) -> None:
        handler.use_kernel_front_end(self._outer)
        free_function.RECORDERS.remove(self._record_arguments)

    def _record_arguments(self, device: Any, kernel: Any, launch: Any, args: tuple,
                          properties: Any, context: Any) -> None:
        """Records a free function kernel's launch (explicit arguments)."""
        self._record(device, context, kernel, launch, properties, (), args)

    def _record(self, device: Any, context: Any, kernel: Any, launch: Any,
                properties: Any, reductions: tuple, args: tuple = (),
                required: list | None = None) -> None:
        """Packs the launch of the adjoint of a launch (explicit arguments `args`, the
        accessors its command group `required`), or keeps the build error its adjoint
        raised for backward()."""
        pyfn, info = _kernel_function(kernel)
        if info is not None:
            kernel = info.shaped(args)  # local_accessor shapes: a kernel of their own
        forward = compiled_reduction(device, kernel, launch, reductions, properties) \
            if reductions else compiled(device, kernel, launch, properties)
        targets = [r.target for r in reductions]
        # (a reduction kernel's explicit arguments are its targets and partials)
        if not any(a.kind in ("ptr", "accessor") and differentiable(a.dtype) for a in forward.args
                   if not reductions or a.path[0] != "param") and \
                not any(differentiable(p.dtype) for p in targets):
            return
        if self._queue is None:
            self._queue = sycl_queue(context, device) if context is not None else \
                sycl_queue(device)
        try:
            ck, p = _adjoint(device, pyfn, forward, "keep")
            pointers = self._values(ck, pyfn, args, targets)
            if any("w" in use and id(v.allocation) in self._writers
                   for (_, use), v in zip(ck.gradients, pointers, strict=True)
                   if v is not None):
                ck, p = _adjoint(device, pyfn, forward, "zero")  # it overwrites an earlier launch's
        except exception as ex:
            if ex.code() != errc.build:
                raise
            self._launches.append(ex)  # raised by backward(): the forward pass runs
            return
        if id(device.vulkan) not in p.checked:
            check_supported(p, device)
        self._check_overwrites(ck, pointers)
        grads = (*(self.gradient(p) for p in targets),
                 *(p if use == "s" else self.gradient(p)
                   for (_, use), p in zip(ck.gradients, pointers, strict=True)))
        push = p.arguments(pyfn, (*args, *grads), launch, context, required, device)
        keep: tuple = grads
        if ck.spec.args_in_memory:
            block = ArgumentBlock(device, push)
            push, keep = ADDRESS.pack(block.address), (*grads, block)
        groups = group_counts(ck, launch, device)
        if ck.split_loop:
            groups = (groups[0], groups[1], self._parts(device, ck, groups))
        self._launches.append(KernelLaunch(ck.name, ck.binary, ck.entry, push, groups,
                                           keep_alive=keep))

    def _parts(self, device: Any, ck: CompiledKernel, groups: tuple[int, int, int]) -> int:
        """How many parts the launch of `groups` work-groups of adjoint `ck` splits its
        loop's reverse over: by default, until the device holds about 4096 work-items per
        compute unit (an H100's 132 SMs hold 2048 each), at most 64."""
        if self._loop_parts is not None:
            return min(int(self._loop_parts), device.vulkan.max_compute_work_group_count[2])
        if device.is_cpu():
            return 1
        items = groups[0] * groups[1] * int(np.prod(ck.local_size))
        return max(1, min(64, (device.vulkan.compute_units or 64) * 4096 // items))

    def _check_overwrites(self, ck: CompiledKernel, pointers: list) -> None:
        """The adjoint of a kernel recomputes from memory as it is at backward(): a later
        launch writing memory an earlier one read would change that (the tape keeps no
        copies), so such a launch makes backward() raise."""
        for (path, use), p in zip(ck.gradients, pointers, strict=True):
            reader = self._readers.get(id(p.allocation)) if p is not None and \
                use != "s" else None
            if "w" in use and reader is not None:
                self._launches.append(exception(errc.invalid, f"kernel {ck.name} writes "
                                                f"'{path_name(path)}', which kernel {reader} "
                                                "read earlier on this tape: its adjoint "
                                                "would see the new values; write to a new "
                                                "array instead"))
        for (_, use), p in zip(ck.gradients, pointers, strict=True):
            if "r" in use and p is not None:
                self._readers[id(p.allocation)] = ck.name
            if "w" in use and p is not None:
                self._writers.add(id(p.allocation))

    def _values(self, ck: CompiledKernel, pyfn: Any, args: tuple, targets: list) -> list:
        """What each gradient argument of adjoint `ck` belongs to: the launch's pointer,
        or for a float scalar its gradient cell."""
        first = len(args) + len(targets)  # the gradient arguments' first index
        kinds = {a.path[1]: a.dtype for a in ck.args if a.path[0] == "param"}
        return [self._cell(_scalar_name(path, pyfn), kinds[first + k]) if use == "s"
                else _memory_of(path_getter(path, pyfn)(pyfn, args))
                for k, (path, use) in enumerate(ck.gradients)]

    # -- gradients -----------------------------------------------------------------------
    def gradient(self, p: Any) -> Any:
        """The gradient of USM pointer `p`: the same element type at the same offset in
        zeroed memory of the same size and kind as `p`'s allocation, one per allocation
        (device memory for device memory: adjoints are added into it atomically, which
        across the bus to host memory is slow). Of a buffer or an accessor, the gradient
        of its device memory, as such a pointer."""
        p = _memory_of(p)
        if p is None:
            return None
        a = p.allocation
        entry = self._gradients.get(id(a))
        if entry is None:
            q = self._queue_for(a)
            # whole 32-bit words: a float16 adjoint is added by a compare-and-swap of the
            # word holding it
            size = -(-a.nbytes // 4) * 4
            g = (malloc_shared if a.host_accessible else malloc_device)(size, np.uint8, q)
            _zero(g.allocation, q)
            entry = self._gradients[id(a)] = (a, g.allocation)
        return ptr(entry[1], p.byte_offset, p.dtype)

    def gradient_of(self, name: str) -> float:
        """The gradient of the float scalars the recorded kernels captured under `name`
        (a variable's name, or a path such as `params.rate`): the sum of their adjoints
        over every recorded launch, after `backward()`."""
        cells = [c for (n, _), c in self._cells.items() if n == name]
        if not cells:
            raise exception(errc.invalid, f"no kernel recorded on this tape captures a "
                            f"float scalar named '{name}'")
        return float(sum(_elements(c)[0] for c in cells))

    def _cell(self, name: str, dtype: Any) -> ptr:
        """The gradient cell of the float scalars named `name` of type `dtype`."""
        key = (name, np.dtype(dtype).str)
        cell = self._cells.get(key)
        if cell is None:
            cell = self._cells[key] = malloc_shared(max(1, 4 // np.dtype(dtype).itemsize),
                                                    dtype, self._queue)
            _elements(cell)[:] = 0
        return cell

    def _queue_for(self, a: Allocation) -> Any:
        if self._queue is None:
            self._queue = sycl_queue(a.context, a.device)
        return self._queue

    def backward(self, seeds: dict[Any, Any]) -> None:
        """Sets the gradient of each pointer in `seeds` (a number for every element from
        the pointer to its allocation's end, or an array for as many elements), then runs
        the recorded launches' adjoints in reverse order and waits for them: afterwards
        `gradient(x)` holds d(seeded outputs)/dx, added to what it held. On a queue
        recording a command graph, it records zeroing the gradients, seeding and the
        adjoints as the graph's nodes instead."""
        q = self._queue
        if q is not None and q.recording_graph is not None:
            self._record_backward(q, seeds)
            return
        if q is not None:
            q.wait()  # gradients are written on the host
        for p, seed in seeds.items():
            g = self.gradient(p)
            values = np.asarray(seed, dtype=g.dtype).reshape(-1)
            count = (g.allocation.nbytes - g.byte_offset) // g.dtype.itemsize
            if g.allocation.host_accessible:
                _elements(g)[: values.size if values.size > 1 else count] = values
            elif values.size > 1:
                self._queue_for(g.allocation).memcpy(g, values, values.nbytes).wait()
            else:
                self._queue_for(g.allocation).fill(g, values[0], count).wait()
        for launch in self._launches:
            if isinstance(launch, exception):
                raise launch
        if self._queue is None:
            return
        done: list = []
        for launch in reversed(self._launches):
            assert isinstance(launch, KernelLaunch)
            done = [self._queue.execute(launch, done)]
        self._queue.wait()

    def _record_backward(self, q: Any, seeds: dict[Any, Any]) -> None:
        """backward() on a queue recording a command graph: zeroing the gradients, the
        seeding and the adjoints become its nodes, each after the one before, so each
        replay computes the gradients afresh with no Python per kernel."""
        last = []
        for _, g in self._gradients.values():
            last = [q.memset(ptr(g, 0, np.uint8), 0, g.nbytes, depends_on=last)]
        for cell in self._cells.values():
            last = [q.memset(cell, 0, cell.dtype.itemsize, depends_on=last)]
        for p, seed in seeds.items():
            if np.ndim(seed) != 0:
                raise exception(errc.invalid, "a command graph records seeds that are "
                                "numbers, not arrays")
            g = self.gradient(p)
            last = [q.fill(g, np.asarray(seed, dtype=g.dtype), g.count, depends_on=last)]
        for launch in reversed(self._launches):
            if isinstance(launch, exception):
                raise launch
            last = [q.submit(lambda h, c=launch: h._set(c), depends_on=last)]

    def zero(self) -> None:
        """Zeroes every gradient (the pointers `gradient` returned stay valid)."""
        if self._queue is not None:
            self._queue.wait()
        for _, g in self._gradients.values():
            _zero(g, self._queue_for(g))
        for cell in self._cells.values():
            _elements(cell)[:] = 0

    def reset(self) -> None:
        """Forgets the recorded launches and zeroes the gradients."""
        self._launches.clear()
        self._readers.clear()
        self._writers.clear()
        self.zero()

    def free(self) -> None:
        """Frees the gradient memory and forgets the recording, once the gradients are
        read: a tape made for one pass (a torch function's) leaves nothing behind."""
        if self._queue is not None:
            self._queue.wait()
        for _, g in self._gradients.values():
            g.free()
        for cell in self._cells.values():
            cell.allocation.free()
        self._gradients.clear()
        self._cells.clear()
        self._launches.clear()
        self._readers.clear()
        self._writers.clear()


def _scalar_name(path: tuple, pyfn: Any) -> str:
    """What `gradient_of` knows a captured scalar by: its path, or for a free function
    kernel's argument, the parameter's name."""
    if path[0] == "param":
        return pyfn.__code__.co_varnames[path[1]]
    return path_name(path)


def _memory_of(x: Any) -> ptr | None:
    """What the tape differentiates, as a USM pointer: a pointer, or a buffer's or an
    accessor's device memory at its first element (the adjoint reads the memory the
    forward launch used, as it is at backward())."""
    if x is None or isinstance(x, ptr):
        return x
    if isinstance(x, buffer | accessor):
        dtype, first, storage = (x._whole[0], x._whole[5], x._whole[8]) \
            if isinstance(x, buffer) else (x.dtype, x._first, x._storage)
        if storage.allocation is None:
            raise exception(errc.invalid, "tape.gradient: the buffer has no device memory "
                            "yet (no kernel has used it)")
        return ptr(storage.allocation, first, dtype)
    raise exception(errc.invalid, f"tape.gradient takes a USM pointer, a buffer or an "
                    f"accessor, got {type(x).__name__}")


def _zero(a: Allocation, q: Any) -> None:
    """Zeroes gradient memory: on the host where it can, else on the device."""
    if a.host_accessible:
        a.host_bytes()[:] = 0
    else:
        q.memset(ptr(a, 0, np.uint8), 0, a.nbytes).wait()


def _elements(p: ptr) -> np.ndarray:
    """The elements from `p` to its allocation's end, as a live numpy view."""
    raw = p.allocation.host_bytes()[p.byte_offset:]
    return raw[: raw.size // p.dtype.itemsize * p.dtype.itemsize].view(p.dtype)


__all__ = ["Tape"]
