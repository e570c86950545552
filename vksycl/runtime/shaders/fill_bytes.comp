#version 450
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
// Byte-exact fill of `nbytes` at byte `dst_off` (below 4) after the word-aligned address
// `dst` with a pattern of `psize` (<= 64) bytes, the first pattern byte at `dst_off`.
// Partial head and tail words merge with atomics.
layout(local_size_x = 256) in;
layout(buffer_reference, std430, buffer_reference_align = 4) buffer Dst { uint w[]; };
layout(push_constant) uniform Fill { Dst dst; uint dst_off; uint nbytes; uint psize;
                                     uint pattern[16]; };

uint pattern_byte(uint b) {
    uint p = (b - dst_off) % psize;
    return (pattern[p >> 2] >> ((p & 3u) * 8u)) & 0xffu;
}

void main() {
    uint end = dst_off + nbytes;
    uint last = (end + 3u) >> 2;
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint w = (dst_off >> 2) + gl_GlobalInvocationID.x; w < last; w += stride) {
        uint lo = max(w * 4u, dst_off);
        uint hi = min(w * 4u + 4u, end);
        uint v = 0u;
        uint mask = 0u;
        for (uint b = lo; b < hi; ++b) {
            uint at = (b & 3u) * 8u;
            v |= pattern_byte(b) << at;
            mask |= 0xffu << at;
        }
        if (mask == 0xffffffffu) {
            dst.w[w] = v;
        } else {
            atomicAnd(dst.w[w], ~mask);
            atomicOr(dst.w[w], v);
        }
    }
}
