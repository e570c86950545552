#version 450
// The fast path of copy_words.comp: offsets and size in whole 16-byte units.
layout(local_size_x = 256) in;
layout(set = 0, binding = 0) readonly buffer Src { uvec4 src[]; };
layout(set = 0, binding = 1) writeonly buffer Dst { uvec4 dst[]; };
layout(push_constant) uniform Range { uint src_off; uint dst_off; uint count; };

void main() {
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < count; i += stride) {
        dst[dst_off + i] = src[src_off + i];
    }
}
