"""The kernel set, built with spirv_gen: valid for Vulkan 1.1 and 1.2, run on the device
through kp and checked against numpy, before and after spirv-opt."""

import kernels
import numpy as np
import pytest

from spirv_gen import optimize, validate
from vksycl import _kp as kp

VERSIONS = {"vulkan1.1": (1, 3), "vulkan1.2": (1, 5)}
MODES = [None, "performance", "size"]


def build(name: str, env: str, mode: str | None) -> bytes:
    spirv = kernels.ALL[name](VERSIONS[env])
    validate(spirv, env)
    if mode is not None:
        spirv = optimize(spirv, mode, env=env)
        validate(spirv, env)
    return spirv


def run(mgr, spirv, arrays, groups, push=(), spec=()):
    tensors = [mgr.tensor_t(a, kp.TensorTypes.host) for a in arrays]
    push = np.array(push, dtype=np.uint32)
    algo = mgr.algorithm(tensors, spirv, [groups, 1, 1], np.array(spec, dtype=np.uint32), push)
    seq = mgr.sequence()
    seq.record(kp.OpAlgoDispatch(algo, push))
    seq.eval()
    return [t.data().copy() for t in tensors]


params = pytest.mark.parametrize(
    "env,mode", [(e, m) for e in VERSIONS for m in MODES], ids=lambda v: str(v)
)
rng = np.random.default_rng(1234)


@params
def test_saxpy_push_constants(mgr, env, mode):
    n, a = 1000, np.float32(2.5)
    x = rng.standard_normal(1024).astype(np.float32)
    y = rng.standard_normal(1024).astype(np.float32)
    push = [np.array([a]).view(np.uint32)[0], n]
    _, got = run(mgr, build("saxpy", env, mode), [x, y.copy()], 16, push)
    np.testing.assert_allclose(got[:n], a * x[:n] + y[:n], rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(got[n:], y[n:])


@params
def test_workgroup_memory_and_barriers(mgr, env, mode):
    src = rng.integers(0, 1 << 20, 16 * 64, dtype=np.uint32)
    _, out = run(mgr, build("workgroup_sum", env, mode), [src, np.zeros(16, np.uint32)], 16)
    np.testing.assert_array_equal(out, src.reshape(16, 64).sum(axis=1, dtype=np.uint32))


@params
def test_atomics(mgr, env, mode):
    data = rng.integers(0, 10_000, 4096, dtype=np.uint32)
    _, bins, peak = run(mgr, build("histogram", env, mode),
                        [data, np.zeros(16, np.uint32), np.zeros(1, np.uint32)], 64)
    np.testing.assert_array_equal(bins, np.bincount(data % 16, minlength=16))
    assert peak[0] == data.max()


@params
def test_subgroup_operations(mgr, env, mode):
    n = 256
    src = rng.integers(0, 1000, n, dtype=np.uint32)
    _, out = run(mgr, build("subgroups", env, mode), [src, np.zeros(n * 6, np.uint32)], n // 64)
    out = out.reshape(n, 6)
    sizes = set(out[:, 5].tolist())
    assert len(sizes) == 1 and sizes.pop() in (1, 2, 4, 8, 16, 32, 64, 128)
    groups: dict[tuple[int, int], list[int]] = {}
    for i in range(n):
        groups.setdefault((i // 64, int(out[i, 3])), []).append(i)
    for members in groups.values():
        members.sort(key=lambda i: out[i, 4])
        assert len(members) == out[members[0], 5]
        values = src[members]
        np.testing.assert_array_equal(out[members, 0], values.sum())
        np.testing.assert_array_equal(out[members, 1], np.cumsum(values))
        np.testing.assert_array_equal(out[members, 2], values[0])


@params
def test_64_bit_types(mgr, env, mode):
    n = 128
    x = rng.uniform(0.0, 1e6, n)
    a = rng.integers(-(1 << 31), 1 << 31, n, dtype=np.int64)
    words = [x, np.zeros(n), a.view(np.uint32).copy(), np.zeros(2 * n, np.uint32),
             np.zeros(2, np.uint32)]
    _, d, _, q, total = run(mgr, build("wide", env, mode), words, n // 64)
    np.testing.assert_allclose(d, np.sqrt(x) * 2.5 + x, rtol=1e-15)
    np.testing.assert_array_equal(q.view(np.int64), a * 3_000_000_007 - (a >> 3))
    assert total.view(np.uint64)[0] == a.astype(np.uint64).sum(dtype=np.uint64)


def collatz_reference(values: np.ndarray) -> np.ndarray:
    out = []
    for i, n in enumerate(values.tolist()):
        steps = 0
        while n != 1:
            if steps >= 1000:
                break
            n = 3 * n + 1 if n & 1 else n >> 1
            steps += 1
        out.append([steps, 2 * steps, steps + 100, steps + 100][i % 4])
    return np.array(out, dtype=np.uint32)


@params
def test_loops_branches_switch_and_calls(mgr, env, mode):
    src = rng.integers(1, 10_000, 256, dtype=np.uint32)
    src[5] = 0  # never reaches 1: the capped break
    _, out = run(mgr, build("collatz", env, mode), [src, np.zeros(256, np.uint32)], 4)
    np.testing.assert_array_equal(out, collatz_reference(src))
    assert out[5] == 2000


@params
def test_specialization_constants(mgr, env, mode):
    src = rng.integers(0, 1000, 128, dtype=np.uint32)
    spirv = build("spec_scale", env, mode)
    _, default = run(mgr, spirv, [src, np.zeros(128, np.uint32)], 2)
    np.testing.assert_array_equal(default, src * 3)
    _, seven = run(mgr, spirv, [src, np.zeros(128, np.uint32)], 2, spec=[7])
    np.testing.assert_array_equal(seven, src * 7)
