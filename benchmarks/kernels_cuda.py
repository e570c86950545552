"""The hand-written CUDA peers of benchmarks/kernels.py: each the same algorithm, launch
shape and floating-point order as its Python kernel, so that a ratio measures the
compiler, not the algorithm. The tiled matmul's is benchmarks/matmul.py's `CUDA`."""

MANDELBROT = r"""
extern "C" __global__ void mandelbrot(int* counts, int w, int h, int max_iter) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    float cr = -2.2f + 3.2f * (float)col / w;
    float ci = -1.2f + 2.4f * (float)row / h;
    float zr = 0.0f, zi = 0.0f;
    int n = 0;
    while (n < max_iter && zr * zr + zi * zi < 4.0f) {
        float t = zr * zr - zi * zi + cr;
        zi = 2.0f * zr * zi + ci;
        zr = t;
        n += 1;
    }
    counts[row * w + col] = n;
}
"""

REGISTER_BLOCKED = r"""
__device__ __forceinline__ float4 step(float4 c, float4 a, float4 b0, float4 b1, float4 b2,
                                       float4 b3) {
    c.x = c.x + a.x * b0.x + a.y * b1.x + a.z * b2.x + a.w * b3.x;
    c.y = c.y + a.x * b0.y + a.y * b1.y + a.z * b2.y + a.w * b3.y;
    c.z = c.z + a.x * b0.z + a.y * b1.z + a.z * b2.z + a.w * b3.z;
    c.w = c.w + a.x * b0.w + a.y * b1.w + a.z * b2.w + a.w * b3.w;
    return c;
}

extern "C" __global__ void gemm(const float4* a, const float4* b, float4* c, int n) {
    __shared__ float4 ta[2][64 * 4];
    __shared__ float4 tb[2][16 * 16];
    int ty = threadIdx.y, tx = threadIdx.x, by = blockIdx.y, bx = blockIdx.x;
    int tid = ty * 16 + tx, n4 = n / 4;
    int ar = tid / 4, ac = tid % 4, br = tid / 16, bc = tid % 16;
    float4 ga = a[(by * 64 + ar) * n4 + ac];
    float4 gb = b[br * n4 + bx * 16 + bc];
    ta[0][ar * 4 + ac] = ga;
    tb[0][br * 16 + bc] = gb;
    __syncthreads();
    float4 c0 = make_float4(0, 0, 0, 0), c1 = c0, c2 = c0, c3 = c0;
    int steps = n / 16;
    for (int s = 0; s < steps; ++s) {
        int cur = s % 2;
        if (s + 1 < steps) {
            ga = a[(by * 64 + ar) * n4 + (s + 1) * 4 + ac];
            gb = b[((s + 1) * 16 + br) * n4 + bx * 16 + bc];
        }
        const float4* sa = ta[cur] + ty * 4 * 4;
        const float4* sb = tb[cur] + tx;
#pragma unroll
        for (int q = 0; q < 4; ++q) {
            float4 b0 = sb[(4 * q) * 16], b1 = sb[(4 * q + 1) * 16];
            float4 b2 = sb[(4 * q + 2) * 16], b3 = sb[(4 * q + 3) * 16];
            c0 = step(c0, sa[q], b0, b1, b2, b3);
            c1 = step(c1, sa[4 + q], b0, b1, b2, b3);
            c2 = step(c2, sa[8 + q], b0, b1, b2, b3);
            c3 = step(c3, sa[12 + q], b0, b1, b2, b3);
        }
        if (s + 1 < steps) {
            ta[1 - cur][ar * 4 + ac] = ga;
            tb[1 - cur][br * 16 + bc] = gb;
        }
        __syncthreads();
    }
    int row = by * 64 + ty * 4, col = bx * 16 + tx;
    c[row * n4 + col] = c0;
    c[(row + 1) * n4 + col] = c1;
    c[(row + 2) * n4 + col] = c2;
    c[(row + 3) * n4 + col] = c3;
}
"""

NBODY = r"""
extern "C" __global__ void nbody(const float4* pos, const float4* vel, float4* pos_out,
                                 float4* vel_out, int n, float dt, float eps2) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float4 p = pos[i];
    float ax = 0.0f, ay = 0.0f, az = 0.0f;
    for (int j = 0; j < n; ++j) {
        float4 q = pos[j];
        float dx = q.x - p.x, dy = q.y - p.y, dz = q.z - p.z;
        float r2 = dx * dx + dy * dy + dz * dz + eps2;
        float inv = rsqrtf(r2);
        float s = q.w * inv * inv * inv;
        ax += dx * s;
        ay += dy * s;
        az += dz * s;
    }
    float4 v = vel[i];
    v.x += ax * dt; v.y += ay * dt; v.z += az * dt;
    p.x += v.x * dt; p.y += v.y * dt; p.z += v.z * dt;
    vel_out[i] = v;
    pos_out[i] = p;
}
"""

STENCIL = r"""
extern "C" __global__ void stencil(const float* src, float* dst, int h, int w) {
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int k = i * w + j;
    float s = src[k];
    if (i > 0) s += src[k - w];
    if (i + 1 < h) s += src[k + w];
    if (j > 0) s += src[k - 1];
    if (j + 1 < w) s += src[k + 1];
    dst[k] = 0.2f * s;
}
"""

SOFTMAX = r"""
template <bool Max> __device__ float block_reduce(float v, float* scratch) {
    for (int o = 16; o > 0; o /= 2) {
        float other = __shfl_xor_sync(0xffffffffu, v, o);
        v = Max ? fmaxf(v, other) : v + other;
    }
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = scratch[0];
    for (int k = 1; k < blockDim.x / 32; ++k) v = Max ? fmaxf(v, scratch[k]) : v + scratch[k];
    __syncthreads();
    return v;
}

extern "C" __global__ void softmax(const float* x, float* y, int cols) {
    __shared__ float scratch[32];
    const float* in = x + (size_t)blockIdx.x * cols;
    float* out = y + (size_t)blockIdx.x * cols;
    float m = -3.4e38f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, in[c]);
    m = block_reduce<true>(m, scratch);
    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) s += expf(in[c] - m);
    s = block_reduce<false>(s, scratch);
    float inv = 1.0f / s;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) out[c] = expf(in[c] - m) * inv;
}
"""
