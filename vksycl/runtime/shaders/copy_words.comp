#version 450
// Byte-exact copy of `nbytes` from byte `src_off` of Src to byte `dst_off` of Dst.
// Whole destination words are assembled with a funnel shift; the partial words at the
// head and tail are merged with atomics so bytes beside the range are never rewritten.
layout(local_size_x = 256) in;
layout(set = 0, binding = 0) readonly buffer Src { uint src[]; };
layout(set = 0, binding = 1) buffer Dst { uint dst[]; };
layout(push_constant) uniform Range { uint src_off; uint dst_off; uint nbytes; };

uint src_byte(uint b) { return (src[b >> 2] >> ((b & 3u) * 8u)) & 0xffu; }

void main() {
    uint end = dst_off + nbytes;
    uint last = (end + 3u) >> 2;
    uint delta = src_off - dst_off;
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint w = (dst_off >> 2) + gl_GlobalInvocationID.x; w < last; w += stride) {
        uint lo = max(w * 4u, dst_off);
        uint hi = min(w * 4u + 4u, end);
        if (hi - lo == 4u) {
            uint sb = w * 4u + delta;
            uint shift = (sb & 3u) * 8u;
            uint v = src[sb >> 2];
            if (shift != 0u) {
                v = (v >> shift) | (src[(sb >> 2) + 1u] << (32u - shift));
            }
            dst[w] = v;
        } else {
            uint v = 0u;
            uint mask = 0u;
            for (uint b = lo; b < hi; ++b) {
                uint at = (b & 3u) * 8u;
                v |= src_byte(b + delta) << at;
                mask |= 0xffu << at;
            }
            atomicAnd(dst[w], ~mask);
            atomicOr(dst[w], v);
        }
    }
}
