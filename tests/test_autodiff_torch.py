"""`autodiff.torch_function`: vksycl kernels as a differentiable torch function. Values and
gradients through the wrapper equal torch.autograd's for the same computation written as
torch ops, in float64 to 1e-9: an elementwise kernel of two inputs with two outputs, a
gather through integer indices (which get no gradient), a sum reduction, a call nested
between torch ops and a second backward pass over a retained graph; a few steps of
torch.optim.SGD on a parameter passed through a kernel lower the loss; the pass's memory
is freed once torch lets go of it; inputs on two devices or of no tensor are refused.
CPU tensors here (the host path); the CUDA path runs where torch sees a CUDA GPU."""

from __future__ import annotations

import gc
import itertools
import math

import numpy as np
import pytest

import vksycl as sycl
from vksycl.ext.vksycl import autodiff as ad

torch = pytest.importorskip("torch", reason="torch is not installed")

F64 = torch.float64


@pytest.fixture(scope="module")
def q():
    return sycl.queue()


def leaf(values, device="cpu"):
    return torch.tensor(values, dtype=F64, device=device, requires_grad=True)


def grads_of(loss_of, *tensors):
    """The gradients of `loss_of(*tensors)` with respect to fresh copies of `tensors`."""
    copies = [t.detach().clone().requires_grad_(t.is_floating_point()) for t in tensors]
    loss_of(*copies).backward()
    return [c.grad for c in copies]


def assert_close(a, b):
    torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-12)


def elementwise(q):
    def compute(x, w, y, z):
        def k(i):
            y[i] = math.sin(x[i]) * w[i] + math.exp(-x[i] * x[i])
            z[i] = math.tanh(w[i]) / (1.0 + x[i] * x[i])

        q.parallel_for(sycl.range(x.count), k)

    return ad.torch_function(compute, outputs=lambda x, w: [x.shape, x.shape], queue=q)


def elementwise_torch(x, w):
    return torch.sin(x) * w + torch.exp(-x * x), torch.tanh(w) / (1 + x * x)


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_elementwise_two_outputs(q, device):
    if device == "cuda" and not torch.cuda.is_available():
        pytest.skip("no CUDA GPU: the CUDA path needs one")
    f = elementwise(q)
    rng = np.random.default_rng(3)
    x = leaf(rng.uniform(-2, 2, (4, 6)), device)
    w = leaf(rng.uniform(-1, 1, (4, 6)), device)
    y, z = f(x, w)
    ry, rz = elementwise_torch(x, w)
    assert y.device == x.device and y.shape == (4, 6) and y.dtype == F64
    assert_close(y, ry)
    assert_close(z, rz)

    def loss(x, w):
        y, z = f(x, w)
        return (y * y).sum() + (z * torch.cos(y)).sum()

    def reference(x, w):
        y, z = elementwise_torch(x, w)
        return (y * y).sum() + (z * torch.cos(y)).sum()

    for got, want in zip(grads_of(loss, x, w), grads_of(reference, x, w), strict=True):
        assert_close(got, want)


def test_gather_integer_indices_get_no_gradient(q):
    def compute(values, index, out):
        def k(i):
            out[i] = values[index[i]] * values[index[i]]

        q.parallel_for(sycl.range(index.count), k)

    f = ad.torch_function(compute, outputs=lambda v, idx: [idx.shape], queue=q)
    values = leaf(np.linspace(-1.0, 2.0, 7))
    index = torch.tensor([0, 3, 3, 6, 1, 3, 0, 5, 2], dtype=torch.int64)
    weights = torch.linspace(0.5, 1.5, 9, dtype=F64)
    assert_close(f(values, index), values[index] ** 2)

    got = grads_of(lambda v, i: (f(v, i) * weights).sum(), values, index)
    want = grads_of(lambda v, i: ((v[i] ** 2) * weights).sum(), values, index)
    assert got[1] is None
    assert_close(got[0], want[0])


def test_sum_reduction(q):
    def compute(x, total):
        def k(i, s):
            s += x[i] * x[i] * x[i]

        q.parallel_for(sycl.range(x.count), sycl.reduction(total, sycl.plus(), property_list=[
            sycl.property.reduction.initialize_to_identity()]), k)

    f = ad.torch_function(compute, outputs=[()], queue=q)
    x = leaf(np.linspace(-1.5, 1.5, 33))
    total = f(x)
    assert total.shape == ()
    assert_close(total, (x ** 3).sum())
    got = grads_of(lambda x: torch.exp(f(x) / 10), x)
    want = grads_of(lambda x: torch.exp((x ** 3).sum() / 10), x)
    assert_close(got[0], want[0])


def test_nested_between_torch_ops_and_retained_graph(q):
    f = elementwise(q)
    x = leaf(np.linspace(-1, 1, 10))
    w = leaf(np.linspace(0.2, 0.8, 10))
    y, _ = f(torch.sqrt(x * x + 1), w * 2)
    loss = (f(y, w)[0] ** 2).sum()
    loss.backward(retain_graph=True)
    first = x.grad.clone(), w.grad.clone()
    loss.backward()  # the wrapper's gradients start afresh; torch adds them up
    assert_close(x.grad, 2 * first[0])
    assert_close(w.grad, 2 * first[1])

    def reference(x, w):
        y, _ = elementwise_torch(torch.sqrt(x * x + 1), w * 2)
        return (elementwise_torch(y, w)[0] ** 2).sum()

    want = grads_of(reference, x, w)
    assert_close(first[0], want[0])
    assert_close(first[1], want[1])


def test_sgd_through_a_kernel_lowers_the_loss(q):
    def compute(x, theta, y):
        def k(i):
            y[i] = theta[0] * math.sin(x[i]) + theta[1] * x[i] * x[i]

        q.parallel_for(sycl.range(x.count), k)

    model = ad.torch_function(compute, outputs=lambda x, theta: [x.shape], queue=q)
    x = torch.linspace(-2, 2, 32, dtype=F64)
    target = 1.5 * torch.sin(x) - 0.25 * x * x
    theta = torch.nn.Parameter(torch.zeros(2, dtype=F64))
    optimizer = torch.optim.SGD([theta], lr=0.1)
    losses = []
    for _ in range(20):
        optimizer.zero_grad()
        loss = ((model(x, theta) - target) ** 2).mean()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert all(b < a for a, b in itertools.pairwise(losses))
    assert losses[-1] < losses[0] / 10


def test_memory_is_freed_with_the_graph(q):
    f = elementwise(q)
    x = leaf(np.linspace(-1, 1, 5))
    y, z = f(x, x * 1)
    memory = y.grad_fn.memory
    pointers = [*memory.inputs, *memory.outputs]
    (y + z).sum().backward()
    gradients = [memory.tape.gradient(p).allocation for p in memory.inputs]
    del y, z, memory
    gc.collect()
    freed = [p.allocation.freed for p in pointers] + [g.freed for g in gradients]
    assert all(freed)


def test_refuses_what_is_not_a_tensor_or_on_two_devices(q):
    f = elementwise(q)
    with pytest.raises(sycl.exception, match="takes one or more tensors"):
        f(leaf([1.0]), [1.0])
    with pytest.raises(sycl.exception, match="needs the outputs' dtype"):
        ad.torch_function(lambda i, o: None, outputs=[1], queue=q)(torch.ones(1, dtype=int))
