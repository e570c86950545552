"""A kernel from GLSL source, as sycl_ext_oneapi_kernel_compiler builds kernels from
source: create the bundle, build it (glslang; options as `-D` defines), get the kernel
by name, set its arguments by index (storage buffers in binding order, then the
push-constant members) and enqueue it over an nd_range matching its local_size."""

import sys

import numpy as np

import vksycl as sycl
from vksycl.ext.oneapi import experimental as syclexp

SOURCE = """
#version 450
layout(local_size_x = WGSIZE) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) buffer Y { float y[]; };
layout(push_constant) uniform Args { float a; uint n; } args;

void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < args.n)
        y[i] = args.a * x[i] + y[i];
}
"""

NUM = 1000
WGSIZE = 64


def main() -> int:
    q = sycl.queue()
    source = syclexp.create_kernel_bundle_from_source(q.get_context(),
                                                      syclexp.source_language.glsl,
                                                      {"saxpy": SOURCE})
    log: list[str] = []
    exe = syclexp.build(source, syclexp.properties(
        syclexp.build_options([f"-DWGSIZE={WGSIZE}"]), syclexp.save_log(log)))
    k = exe.ext_oneapi_get_kernel("saxpy")
    for line in syclexp.kernel_args(k):
        print("  argument", line)

    x = sycl.malloc_shared(NUM, sycl.float32, q)
    y = sycl.malloc_shared(NUM, sycl.float32, q)
    np.asarray(x)[:] = np.arange(NUM)
    np.asarray(y)[:] = 1.0

    padded = -(-NUM // WGSIZE) * WGSIZE

    def cgf(h):
        h.set_args(x, y, 2.0, NUM)
        h.parallel_for(sycl.nd_range((padded,), (WGSIZE,)), k)

    q.submit(cgf).wait()
    ok = np.array_equal(np.asarray(y)[:NUM], 2 * np.arange(NUM, dtype=np.float32) + 1)

    # A build error reports glslang's log.
    broken = syclexp.create_kernel_bundle_from_source(q.get_context(),
                                                      syclexp.source_language.glsl, SOURCE)
    try:
        syclexp.build(broken)  # WGSIZE undefined
        ok = False
    except sycl.exception as e:
        ok = ok and e.code() == sycl.errc.build and "WGSIZE" in str(e)
    sycl.free(x, q)
    sycl.free(y, q)
    print("kernel_from_glsl:", "ok" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
