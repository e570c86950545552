"""Variables and the resources compute kernels use: storage buffers, push constants and
built-in inputs."""

from __future__ import annotations

import functools
from collections.abc import Sequence

from .errors import BuildError
from .grammar import InstructionInfo
from .words import Id


class ResourceBuilder:
    """The variable half of :class:`~spirv_gen.builder.ModuleBuilder` (a mixin: it uses the
    builder's emitter and type helpers)."""

    # variables -----------------------------------------------------------------------
    def _variable_op(self, info: InstructionInfo, args: tuple, result_id) -> Id:
        if len(args) < 2:
            raise BuildError("OpVariable needs a pointer type and a storage class")
        storage = args[1]
        if storage == "Function" or storage == self._function_sc:
            if self._fn is None:
                raise BuildError("a Function variable must be inside a function")
            return self._emit_to(self._fn.variables, info, args, result_id)
        v = self._emit_to(self._globals, info, args, result_id)
        sc = storage if isinstance(storage, str) else self.kinds["StorageClass"].by_value[
            storage].name
        self._global_vars.append((v, sc))
        return v

    def variable(
        self, pointee: Id, storage_class: str, initializer: Id | None = None,
        name: str | None = None,
    ) -> Id:
        """A variable of type ``pointee`` (its pointer type is made here). Function
        variables go to the entry block of the current function, wherever this is called."""
        ptr = self.type_pointer(storage_class, pointee)
        args = (ptr, storage_class) if initializer is None else (ptr, storage_class, initializer)
        v = self.op("Variable", *args)
        if name:
            self.name(v, name)
        return v

    def storage_buffer(
        self, element: Id, binding: int, set: int = 0, name: str | None = None,
        readonly: bool = False, stride: int | None = None,
    ) -> Id:
        """A StorageBuffer variable holding a runtime array of ``element`` (std430 stride),
        at ``(set, binding)``; index it with :meth:`buffer_element`."""
        arr = self.type_runtime_array(element, stride or self.size_of(element))
        st = self.type_struct([arr], offsets=[0], block=True)
        v = self.variable(st, "StorageBuffer", name=name)
        self.decorate(v, "DescriptorSet", set)
        self.decorate(v, "Binding", binding)
        if readonly:
            self.decorate(v, "NonWritable")
        return v

    def buffer_element(self, buffer: Id, index: Id) -> Id:
        """Pointer to element ``index`` of a :meth:`storage_buffer`."""
        st = self._types[self._types[self.type_of(buffer)][2]]
        arr = st[1]
        element = self._types[arr][1]
        ptr = self.type_pointer("StorageBuffer", element)
        return self.op("AccessChain", ptr, buffer, self.u32(0), index)

    def push_constants(
        self, members: Sequence[Id], offsets: Sequence[int] | None = None,
        name: str | None = None,
    ) -> Id:
        """The PushConstant block; members packed at their natural sizes by default."""
        if offsets is None:
            offsets, off = [], 0
            for m in members:
                size = self.size_of(m)
                off = (off + size - 1) // size * size
                offsets.append(off)
                off += size
        st = self.type_struct(members, offsets=offsets, block=True)
        return self.variable(st, "PushConstant", name=name)

    def push_constant(self, block: Id, member: int) -> Id:
        """Load member ``member`` of a :meth:`push_constants` block."""
        st = self._types[self.type_of(block)][2]
        mt = self._types[st][1 + member]
        ptr = self.type_pointer("PushConstant", mt)
        return self.op("Load", mt, self.op("AccessChain", ptr, block, self.u32(member)))

    def builtin(self, name: str, type_id: Id, storage_class: str = "Input") -> Id:
        """The Input variable of a BuiltIn (declared once), e.g. ``GlobalInvocationId``."""
        v = self._builtins.get(name)
        if v is None:
            v = self._builtins[name] = self.variable(type_id, storage_class)
            self.decorate(v, "BuiltIn", name)
        return v

    def load_builtin(self, name: str, type_id: Id) -> Id:
        return self.op("Load", type_id, self.builtin(name, type_id))

    @functools.cached_property
    def _function_sc(self) -> int:
        return self.kinds["StorageClass"].by_name["Function"].value
