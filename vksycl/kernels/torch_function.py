"""`autodiff.torch_function`: a vksycl computation as a `torch.autograd.Function`, so a
vksycl kernel sits inside a torch model and its training loop.

The computation is a Python function launching kernels on USM pointers: its inputs'
pointers, then its outputs'. The wrapper's forward stages each input tensor in vksycl
memory, runs the computation under a `Tape` and returns the outputs as tensors; its
backward seeds the outputs' gradients with torch's, runs `tape.backward` and returns the
inputs' gradients. CPU tensors go through host copies into shared USM. CUDA tensors go
through the CUDA interop (`syclexp.cuda_exportable`): memory CUDA allocates that vksycl
imports, so inputs are copied on the GPU and outputs are returned without a copy; the
tape's gradients are device memory there, and seeds and gradients go through the host.

torch is imported only here, when a function is made: vksycl does not depend on it.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..exceptions import errc, exception
from ..runtime.cuda_export import cuda_exportable
from ..runtime.malloc import free, malloc_shared
from ..runtime.usm import ptr, release_collected
from .autodiff import Tape

Shape = int | tuple[int, ...]


class _Spec:
    """What a torch function computes: `compute`, its outputs' shapes and dtype, and the
    queue whose device runs it."""

    def __init__(self, compute: Callable[..., None],
                 outputs: Sequence[Shape] | Callable[..., Sequence[Shape]], queue: Any,
                 dtype: Any) -> None:
        self.compute = compute
        self.outputs = outputs
        self.queue = queue
        self.dtype = dtype

    def shapes(self, inputs: tuple) -> list[tuple[int, ...]]:
        shapes = self.outputs(*inputs) if callable(self.outputs) else self.outputs
        return [(s,) if isinstance(s, int) else tuple(s) for s in shapes]

    def output_dtype(self, inputs: tuple) -> Any:
        """`dtype`, or else the first floating-point input's."""
        if self.dtype is not None:
            return self.dtype
        for t in inputs:
            if t.is_floating_point():
                return t.dtype
        raise exception(errc.invalid, "a torch function with no floating-point input "
                        "needs the outputs' dtype")


class _Memory:
    """The vksycl memory of one forward pass and its tape: shared USM on the host path,
    CUDA memory vksycl imported on the CUDA path. Freed when torch lets go of the pass
    (the autograd graph is freed), not while outputs made over it live."""

    def __init__(self, queue: Any, device: Any) -> None:
        self.queue = queue
        self.device = device  # the tensors' torch device
        self.cuda = device.type == "cuda"
        self.tape = Tape(queue)
        self.inputs: list[ptr] = []
        self.outputs: list[ptr] = []
        self._shared: list[ptr] = []
        self._cuda: list[Any] = []  # cuda_allocations: each closes when nothing holds it

    def _allocate(self, count: int, dtype: np.dtype) -> tuple[ptr, Any]:
        """USM for `count` elements, and on the CUDA path the CUDA allocation behind it."""
        if self.cuda:
            m = cuda_exportable((count,), self.queue, dtype=dtype)
            self._cuda.append(m)
            return m.ptr, m
        p = malloc_shared(count, dtype, self.queue)
        self._shared.append(p)
        return p, None

    def stage(self, t: Any) -> ptr:
        """An input tensor's values in vksycl memory."""
        import torch

        flat = t.detach().reshape(-1)
        p, m = self._allocate(max(flat.numel(), 1), _numpy_dtype(t.dtype))
        if m is not None:
            torch.from_dlpack(m)[: flat.numel()].copy_(flat)
        else:
            np.asarray(p)[: flat.numel()] = flat.contiguous().numpy()
        self.inputs.append(p)
        return p

    def output(self, shape: tuple[int, ...], dtype: Any) -> ptr:
        p, _ = self._allocate(max(math.prod(shape), 1), _numpy_dtype(dtype))
        self.outputs.append(p)
        return p

    def tensor(self, p: ptr, shape: tuple[int, ...], k: int | None = None) -> Any:
        """The elements of `p` as a tensor of `shape` on the tensors' device: over the
        CUDA memory itself (`k`, the allocation's index) or a copy of host memory."""
        import torch

        n = math.prod(shape)
        if k is not None:
            return torch.from_dlpack(self._cuda[k])[:n].reshape(shape)
        values = np.empty(n, p.dtype)
        if p.allocation.host_accessible:
            values[:] = np.asarray(p)[:n]
        else:  # the gradient of device memory (CUDA memory vksycl imported)
            self.queue.memcpy(values, p, values.nbytes).wait()
        host = torch.from_numpy(values).reshape(shape)
        return host.to(self.device) if self.cuda else host

    def free(self) -> None:
        self.tape.free()
        for p in self._shared:
            free(p, self.queue)
        self._shared.clear()
        self._cuda.clear()

    def __del__(self) -> None:
        if self._shared or self._cuda:
            release_collected(self.free, "torch-function-free")


def _numpy_dtype(dtype: Any) -> np.dtype:
    """The numpy dtype of a torch dtype."""
    import torch

    return torch.empty((), dtype=dtype).numpy().dtype


def _device_of(inputs: tuple) -> Any:
    """The one torch device of the input tensors."""
    import torch

    if not inputs or not all(isinstance(t, torch.Tensor) for t in inputs):
        raise exception(errc.invalid, "a torch function takes one or more tensors, got "
                        f"{[type(t).__name__ for t in inputs]}")
    devices = {t.device for t in inputs}
    if len(devices) != 1:
        raise exception(errc.invalid, f"a torch function's inputs are on one device, got "
                        f"{sorted(str(d) for d in devices)}")
    return devices.pop()


@functools.cache
def _function_class() -> type:
    """The `torch.autograd.Function` every torch function applies (made once, on first
    use, so importing vksycl does not import torch)."""
    import torch

    class VksyclFunction(torch.autograd.Function):
        """A vksycl computation under a tape; `_Spec` says which."""

        @staticmethod
        def forward(ctx: Any, spec: _Spec, *inputs: Any) -> Any:
            device = _device_of(inputs)
            memory = _Memory(spec.queue, device)
            pointers = [memory.stage(t) for t in inputs]
            if memory.cuda:
                torch.cuda.synchronize(device)  # the copies, before vksycl's kernels
            shapes = spec.shapes(inputs)
            dtype = spec.output_dtype(inputs)
            outputs = [memory.output(s, dtype) for s in shapes]
            with memory.tape:
                spec.compute(*pointers, *outputs)
            spec.queue.wait()
            ctx.memory = memory
            ctx.shapes = [tuple(t.shape) for t in inputs]
            ctx.floating = [t.is_floating_point() for t in inputs]
            first = len(inputs)  # the outputs' CUDA allocations follow the inputs'
            results = [memory.tensor(p, s, first + k if memory.cuda else None)
                       for k, (p, s) in enumerate(zip(outputs, shapes, strict=True))]
            return results[0] if len(results) == 1 else tuple(results)

        @staticmethod
        def backward(ctx: Any, *grads: Any) -> Any:
            memory: _Memory = ctx.memory
            memory.tape.zero()  # a second backward (retain_graph) starts afresh
            memory.tape.backward({p: g.detach().reshape(-1).cpu().numpy()
                                  for p, g in zip(memory.outputs, grads, strict=True)
                                  if g is not None})
            return (None, *(memory.tensor(memory.tape.gradient(p), shape)
                            if need and floating else None
                            for p, shape, floating, need in zip(
                                memory.inputs, ctx.shapes, ctx.floating,
                                ctx.needs_input_grad[1:], strict=True)))

    return VksyclFunction


def torch_function(compute: Callable[..., None],
                   outputs: Sequence[Shape] | Callable[..., Sequence[Shape]], *,
                   queue: Any, dtype: Any = None) -> Callable[..., Any]:
    """`compute`, a function launching vksycl kernels on `queue`, as a differentiable
    torch function: `f = torch_function(compute, outputs=[(n,)], queue=q)`, then
    `y = f(x)` and `y.sum().backward()` gives `x.grad`.

    `compute(*inputs, *outputs)` takes a USM pointer for each tensor `f` is called with,
    holding its elements (row-major, flattened), then one for each output, to write.
    `outputs` lists the outputs' shapes, or computes them from the input tensors;
    `dtype` is theirs (a torch dtype; by default the first floating-point input's).
    `f` returns a tensor, or a tuple for several outputs, on the inputs' device.
    Floating-point inputs get gradients; integer ones (indices) get none.

    Named after `torch.autograd.Function`, and used as its `apply` is: each call runs
    `compute` under a fresh `Tape`, so calls nest in a model as torch's functions do."""
    spec = _Spec(compute, outputs, queue, dtype)
    function = _function_class()

    def apply(*inputs: Any) -> Any:
        return function.apply(spec, *inputs)

    return apply


__all__ = ["torch_function"]
