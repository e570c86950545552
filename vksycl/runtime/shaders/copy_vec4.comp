#version 450
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
// The fast path of copy_words.comp: `count` 16-byte units between 16-byte aligned addresses.
layout(local_size_x = 256) in;
layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer Src { uvec4 v[]; };
layout(buffer_reference, std430, buffer_reference_align = 16) writeonly buffer Dst { uvec4 v[]; };
layout(push_constant) uniform Range { Src src; Dst dst; uint count; };

void main() {
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < count; i += stride) {
        dst.v[i] = src.v[i];
    }
}
