#version 450
// The fast path of fill_bytes.comp: whole 16-byte units of a pattern that divides 16.
layout(local_size_x = 256) in;
layout(set = 0, binding = 0) writeonly buffer Dst { uvec4 dst[]; };
layout(push_constant) uniform Fill { uint dst_off; uint count; uint pad0; uint pad1; uvec4 value; };

void main() {
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < count; i += stride) {
        dst[dst_off + i] = value;
    }
}
