#version 450
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
// Byte-exact copy of `nbytes` from byte `src_off` after the word-aligned address `src` to
// byte `dst_off` after `dst` (the offsets are below 4; nbytes below 2^31).
// Whole destination words are assembled with a funnel shift, four per invocation with
// every load before any store (the device keeps more reads in flight that way). The
// partial words at the head and tail are merged with atomics, so bytes beside the range
// are never rewritten.
layout(local_size_x = 256) in;
layout(buffer_reference, std430, buffer_reference_align = 4) readonly buffer Src { uint w[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer Dst { uint w[]; };
layout(push_constant) uniform Range { Src src; Dst dst; uint src_off; uint dst_off; uint nbytes; };

uint src_byte(uint b) { return (src.w[b >> 2] >> ((b & 3u) * 8u)) & 0xffu; }

uint whole_word(uint w, uint delta) {
    uint sb = w * 4u + delta;
    uint shift = (sb & 3u) * 8u;
    uint v = src.w[sb >> 2];
    if (shift != 0u) {
        v = (v >> shift) | (src.w[(sb >> 2) + 1u] << (32u - shift));
    }
    return v;
}

void merge_partial_word(uint w, uint end, uint delta) {
    uint lo = max(w * 4u, dst_off);
    uint hi = min(w * 4u + 4u, end);
    uint v = 0u;
    uint mask = 0u;
    for (uint b = lo; b < hi; ++b) {
        uint at = (b & 3u) * 8u;
        v |= src_byte(b + delta) << at;
        mask |= 0xffu << at;
    }
    atomicAnd(dst.w[w], ~mask);
    atomicOr(dst.w[w], v);
}

void main() {
    uint end = dst_off + nbytes;
    uint delta = src_off - dst_off;
    uint first = (dst_off + 3u) >> 2;  // the first whole destination word
    uint last = end >> 2;              // one past the last whole word
    uint id = gl_GlobalInvocationID.x;
    uint head = dst_off >> 2;
    uint tail = end >> 2;
    bool has_head = (dst_off & 3u) != 0u;
    bool has_tail = (end & 3u) != 0u && !(has_head && tail == head);
    if (id == 0u && has_head) {
        merge_partial_word(head, end, delta);
    }
    if (id == 1u && has_tail) {
        merge_partial_word(tail, end, delta);
    }
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint w = first + id; w < last; w += 4u * stride) {
        uint w1 = w + stride;
        uint w2 = w1 + stride;
        uint w3 = w2 + stride;
        uint v0 = whole_word(w, delta);
        uint v1 = w1 < last ? whole_word(w1, delta) : 0u;
        uint v2 = w2 < last ? whole_word(w2, delta) : 0u;
        uint v3 = w3 < last ? whole_word(w3, delta) : 0u;
        dst.w[w] = v0;
        if (w1 < last) { dst.w[w1] = v1; }
        if (w2 < last) { dst.w[w2] = v2; }
        if (w3 < last) { dst.w[w3] = v3; }
    }
}
