"""The hand-written GLSL peers of benchmarks/kernels.py: each the same algorithm, launch
shape and floating-point order as its Python kernel, built by vksycl from source
(`source_language.glsl`) and run on the same Vulkan driver, so that vksycl's time over
theirs separates what vksycl's compiler does from what the driver does. Written as a GLSL
programmer would for that algorithm: the same work-group sizes, 32-bit indices, storage
buffers, and the scalars in a push-constant block; tuned no further.

Arguments bind in order: the storage buffers by binding, then the push constants."""

MANDELBROT = """
#version 450
layout(local_size_x = 32, local_size_y = 8) in;
layout(std430, binding = 0) writeonly buffer Counts { int counts[]; };
layout(push_constant) uniform Args { int w; int h; int max_iter; };

void main() {
    int row = int(gl_GlobalInvocationID.y);
    int col = int(gl_GlobalInvocationID.x);
    float cr = -2.2 + 3.2 * float(col) / float(w);
    float ci = -1.2 + 2.4 * float(row) / float(h);
    float zr = 0.0, zi = 0.0;
    int n = 0;
    while (n < max_iter && zr * zr + zi * zi < 4.0) {
        float t = zr * zr - zi * zi + cr;
        zi = 2.0 * zr * zi + ci;
        zr = t;
        n += 1;
    }
    counts[row * w + col] = n;
}
"""

TILED_MATMUL = """
#version 450
layout(local_size_x = 16, local_size_y = 16) in;
layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 1) readonly buffer B { float b[]; };
layout(std430, binding = 2) writeonly buffer C { float c[]; };
layout(push_constant) uniform Args { int n; };
shared float ta[16][16];
shared float tb[16][16];

void main() {
    int row = int(gl_GlobalInvocationID.y), col = int(gl_GlobalInvocationID.x);
    int lr = int(gl_LocalInvocationID.y), lc = int(gl_LocalInvocationID.x);
    float acc = 0.0;
    for (int kt = 0; kt < n; kt += 16) {
        ta[lr][lc] = a[row * n + kt + lc];
        tb[lr][lc] = b[(kt + lr) * n + col];
        barrier();
        for (int kk = 0; kk < 16; ++kk)
            acc += ta[lr][kk] * tb[kk][lc];
        barrier();
    }
    c[row * n + col] = acc;
}
"""

NBODY = """
#version 450
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer Pos { vec4 pos[]; };
layout(std430, binding = 1) readonly buffer Vel { vec4 vel[]; };
layout(std430, binding = 2) writeonly buffer PosOut { vec4 pos_out[]; };
layout(std430, binding = 3) writeonly buffer VelOut { vec4 vel_out[]; };
layout(push_constant) uniform Args { int n; float dt; float eps2; };

void main() {
    int i = int(gl_GlobalInvocationID.x);
    vec4 p = pos[i];
    vec3 acc = vec3(0.0);
    for (int j = 0; j < n; ++j) {
        vec4 other = pos[j];
        vec3 d = other.xyz - p.xyz;
        float inv = inversesqrt(d.x * d.x + d.y * d.y + d.z * d.z + eps2);
        acc += d * (other.w * inv * inv * inv);
    }
    vec4 v = vel[i];
    v.xyz += acc * dt;
    p.xyz += v.xyz * dt;
    vel_out[i] = v;
    pos_out[i] = p;
}
"""

STENCIL = """
#version 450
layout(local_size_x = 32, local_size_y = 8) in;
layout(std430, binding = 0) readonly buffer Src { float src[]; };
layout(std430, binding = 1) writeonly buffer Dst { float dst[]; };
layout(push_constant) uniform Args { int h; int w; };

void main() {
    int i = int(gl_GlobalInvocationID.y), j = int(gl_GlobalInvocationID.x);
    int k = i * w + j;
    float s = src[k];
    if (i > 0) s += src[k - w];
    if (i + 1 < h) s += src[k + w];
    if (j > 0) s += src[k - 1];
    if (j + 1 < w) s += src[k + 1];
    dst[k] = 0.2 * s;
}
"""

# A work-group of 256 per row; the two reductions through shared memory, halving.
SOFTMAX = """
#version 450
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Args { int cols; };
shared float scratch[256];

float reduce_max(float v) {
    uint lid = gl_LocalInvocationID.x;
    scratch[lid] = v;
    barrier();
    for (uint s = 128u; s > 0u; s >>= 1) {
        if (lid < s) scratch[lid] = max(scratch[lid], scratch[lid + s]);
        barrier();
    }
    v = scratch[0];
    barrier();
    return v;
}

float reduce_sum(float v) {
    uint lid = gl_LocalInvocationID.x;
    scratch[lid] = v;
    barrier();
    for (uint s = 128u; s > 0u; s >>= 1) {
        if (lid < s) scratch[lid] += scratch[lid + s];
        barrier();
    }
    v = scratch[0];
    barrier();
    return v;
}

void main() {
    int base = int(gl_WorkGroupID.x) * cols;
    int lid = int(gl_LocalInvocationID.x);
    float m = -3.4e38;
    for (int c = lid; c < cols; c += 256) m = max(m, x[base + c]);
    m = reduce_max(m);
    float s = 0.0;
    for (int c = lid; c < cols; c += 256) s += exp(x[base + c] - m);
    s = reduce_sum(s);
    float inv = 1.0 / s;
    for (int c = lid; c < cols; c += 256) y[base + c] = exp(x[base + c] - m) * inv;
}
"""

# examples/matrix_gemm_fp32.py: 64 x 64 tiles of C per work-group of 16 x 16, each work-item
# 4 x 4 of them; float4 loads; the local tiles double-buffered.
REGISTER_BLOCKED = """
#version 450
layout(local_size_x = 16, local_size_y = 16) in;
layout(std430, binding = 0) readonly buffer A { vec4 a[]; };
layout(std430, binding = 1) readonly buffer B { vec4 b[]; };
layout(std430, binding = 2) writeonly buffer C { vec4 c[]; };
layout(push_constant) uniform Args { int n; };
shared vec4 ta[2 * 64 * 4];
shared vec4 tb[2 * 16 * 16];

vec4 step4(vec4 acc, vec4 x, vec4 b0, vec4 b1, vec4 b2, vec4 b3) {
    return acc + x.x * b0 + x.y * b1 + x.z * b2 + x.w * b3;
}

void main() {
    int ty = int(gl_LocalInvocationID.y), tx = int(gl_LocalInvocationID.x);
    int by = int(gl_WorkGroupID.y), bx = int(gl_WorkGroupID.x);
    int tid = ty * 16 + tx, n4 = n / 4;
    int ar = tid / 4, ac = tid % 4, br = tid / 16, bc = tid % 16;
    vec4 ga = a[(by * 64 + ar) * n4 + ac];
    vec4 gb = b[br * n4 + bx * 16 + bc];
    ta[ar * 4 + ac] = ga;
    tb[br * 16 + bc] = gb;
    barrier();
    vec4 c0 = vec4(0.0), c1 = c0, c2 = c0, c3 = c0;
    int steps = n / 16;
    for (int s = 0; s < steps; ++s) {
        int cur = s % 2;
        if (s + 1 < steps) {
            ga = a[(by * 64 + ar) * n4 + (s + 1) * 4 + ac];
            gb = b[((s + 1) * 16 + br) * n4 + bx * 16 + bc];
        }
        int oa = cur * 256 + ty * 16, ob = cur * 256 + tx;
        for (int q = 0; q < 4; ++q) {
            vec4 b0 = tb[ob + (4 * q) * 16], b1 = tb[ob + (4 * q + 1) * 16];
            vec4 b2 = tb[ob + (4 * q + 2) * 16], b3 = tb[ob + (4 * q + 3) * 16];
            c0 = step4(c0, ta[oa + q], b0, b1, b2, b3);
            c1 = step4(c1, ta[oa + 4 + q], b0, b1, b2, b3);
            c2 = step4(c2, ta[oa + 8 + q], b0, b1, b2, b3);
            c3 = step4(c3, ta[oa + 12 + q], b0, b1, b2, b3);
        }
        if (s + 1 < steps) {
            ta[(1 - cur) * 256 + ar * 4 + ac] = ga;
            tb[(1 - cur) * 256 + br * 16 + bc] = gb;
        }
        barrier();
    }
    int row = by * 64 + ty * 4, col = bx * 16 + tx;
    c[row * n4 + col] = c0;
    c[(row + 1) * n4 + col] = c1;
    c[(row + 2) * n4 + col] = c2;
    c[(row + 3) * n4 + col] = c3;
}
"""
