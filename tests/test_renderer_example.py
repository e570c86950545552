"""examples/particles_renderer.py on the default Vulkan device (lavapipe in CI): the PNG it
writes shows every particle where a float32 host model of the simulation puts it, in its
palette colour, and the background everywhere else."""

from __future__ import annotations

import importlib.util
import os
import struct
import subprocess
import sys
import zlib
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

EXAMPLE = Path(__file__).parent.parent / "examples" / "particles_renderer.py"
FRAMES = 150
# A pixel whose centre is this close (in pixels) to the edge of a point's square may fall
# either way under the rasterizer's fixed-point snapping: it is not checked.
MARGIN = 0.125


@pytest.fixture(scope="module")
def example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("particles_renderer", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # where @sycl.struct resolves its field annotations
    spec.loader.exec_module(module)
    return module


def read_png(path: Path) -> np.ndarray:
    """The (height, width, 3) pixels of an 8-bit RGB PNG with unfiltered rows, every
    chunk's CRC checked."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks = 8, {}
    while pos < len(data):
        (length,), kind = struct.unpack(">I", data[pos:pos + 4]), data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        assert struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])[0] == \
            zlib.crc32(kind + body), f"bad CRC in {kind!r}"
        chunks[kind] = chunks.get(kind, b"") + body
        pos += 12 + length
    width, height, depth, colour, *_ = struct.unpack(">IIBBBBB", chunks[b"IHDR"])
    assert (depth, colour) == (8, 2) and b"IEND" in chunks
    rows = np.frombuffer(zlib.decompress(chunks[b"IDAT"]), np.uint8).reshape(height, -1)
    assert rows.shape[1] == 1 + 3 * width and not rows[:, 0].any()  # filter type 0
    return rows[:, 1:].reshape(height, width, 3)


def host_model(example: ModuleType, steps: int) -> tuple[np.ndarray, int, int]:
    """The particles after `steps` steps, computed in float32 by the rules the kernel
    follows, and how many wall and floor bounces happened on the way."""
    state = example.initial_particles()
    x, y, vx, vy = (state[:, k].copy() for k in range(4))
    wall, dt = example.WALL, example.DT
    walls = floors = 0
    for _ in range(steps):
        vy = vy - example.GRAVITY_DT
        x = x + vx * dt
        y = y + vy * dt
        for side in (1, -1):
            out = x * side > wall
            x = np.where(out, side * wall * 2 - x, x)
            vx = np.where(out, -vx, vx)
            walls += int(out.sum())
        top = y > wall
        y = np.where(top, wall * 2 - y, y)
        vy = np.where(top, -vy, vy)
        floor = y < -wall
        y = np.where(floor, -wall * 2 - y, y)
        vy = np.where(floor, -vy * example.FLOOR_BOUNCE, vy)
        floors += int(floor.sum())
        assert x.dtype == y.dtype == vx.dtype == vy.dtype == np.float32
    return np.stack([x, y], axis=1), walls, floors


def expected_image(example: ModuleType, positions: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """What each pixel must show: (colours, checked mask, index of the particle drawn
    there or -1). A point is a POINT_SIZE square centred at the viewport position of its
    vertex; where several cover a pixel, the one drawn last (highest index) shows."""
    w, h, n = example.WIDTH, example.HEIGHT, len(positions)
    fx = (positions[:, 0].astype(np.float64) + 1) * w / 2  # viewport over [-1, 1]^2,
    fy = (1 - positions[:, 1].astype(np.float64)) * h / 2  # y flipped by the shader
    half = example.POINT_SIZE / 2
    dx = np.abs(np.arange(w)[:, None] + 0.5 - fx[None, :])  # (w, n)
    dy = np.abs(np.arange(h)[:, None] + 0.5 - fy[None, :])  # (h, n)
    certain = (dy < half - MARGIN)[:, None, :] & (dx < half - MARGIN)[None, :, :]
    possible = (dy <= half + MARGIN)[:, None, :] & (dx <= half + MARGIN)[None, :, :]
    top = np.where(possible.any(axis=2), n - 1 - np.argmax(possible[:, :, ::-1], axis=2), -1)
    top_is_certain = np.take_along_axis(certain, np.maximum(top, 0)[:, :, None], axis=2)[..., 0]
    checked = (top < 0) | top_is_certain
    palette = np.array(example.PALETTE, np.uint8)
    colours = np.where((top < 0)[:, :, None], np.array(example.BACKGROUND, np.uint8),
                       palette[np.maximum(top, 0) % len(palette)])
    return colours, checked, np.where(checked, top, -1)


def test_the_frame_shows_each_particle_where_the_host_model_puts_it(example, tmp_path):
    out = tmp_path / "frame.png"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(EXAMPLE.parent.parent), os.environ.get("PYTHONPATH")) if p)}
    proc = subprocess.run([sys.executable, str(EXAMPLE), "--out", str(out), "--frames",
                           str(FRAMES)], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path, env=env)
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}"
    assert f"{FRAMES} frames of {example.NUM_PARTICLES} particles" in proc.stdout

    pixels = read_png(out)
    assert pixels.shape == (example.HEIGHT, example.WIDTH, 3)
    positions, walls, floors = host_model(example, FRAMES)
    assert walls > 0 and floors > 0  # the frame depends on the bounces too
    colours, checked, drawn = expected_image(example, positions)

    wrong = checked & np.any(pixels != colours, axis=2)
    assert not wrong.any(), (
        f"{int(wrong.sum())} pixels differ, first at (row, column) "
        f"{tuple(int(v) for v in np.argwhere(wrong)[0])}: "
        f"{pixels[wrong][0].tolist()} instead of {colours[wrong][0].tolist()}")
    # the pixels left unchecked (a point's edge) are background or some particle's colour
    allowed = np.array([example.BACKGROUND, *example.PALETTE], np.uint8)
    unchecked = pixels[~checked]
    assert np.all(np.any(np.all(unchecked[:, None, :] == allowed[None], axis=2), axis=1))
    # the check is not vacuous: nearly every particle shows, nearly every pixel is checked
    visible = np.unique(drawn[drawn >= 0])
    assert len(visible) >= 0.9 * example.NUM_PARTICLES
    assert checked.mean() > 0.99
    assert (drawn >= 0).sum() >= len(visible) * (example.POINT_SIZE - 1) ** 2
