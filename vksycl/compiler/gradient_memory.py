"""Gradient memory for the adjoint of a kernel (`adjoint`): where adjoints of memory go.

A read `x[j]` of differentiable memory adds its adjoint into `grad_x[j]` atomically: with
the device's float atomic add where it has one, else a compare-and-swap loop on the
float's bits (float64 works on any device with 64-bit integer atomics). A sub-group whose
work-items all add into one address adds up first, so one atomic stands for all of them.
A store `y[i] = v` gives `v` the adjoint in `grad_y[i]`, zeroing it where an overwrite
needs that. Work-group memory has gradients of its own in work-group memory; reductions'
sums and `fetch_add` read their target's gradient; captured float scalars add into a
gradient cell each.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

from . import ir
from .derivatives import is_float, zero_of
from .typesys import BOOL, F16, F32, I32, U16, U32, U64, Scalar, Struct, Type, field_offsets
from .workitem import barrier, builtin

_DEVICE_SCOPE, _WORKGROUP_SCOPE, _SUBGROUP_SCOPE = 1, 2, 3


class GradientMemory:
    """The memory side of the reverse sweep, a part of `adjoint.Adjoint` (whose state it
    reads: the gradient arguments, the forward sweep's loads and stores)."""

    def rev_store(self, r: tuple, out: list[ir.Stmt]) -> None:
        _, place, value, site = r
        if not is_float(place.ty):
            return
        pf = self.pointer_of(place.index, site)
        if pf is None:
            return
        self.written.add(pf)
        gplace = dataclasses.replace(place, index=self.grad_address(place.index, pf))
        g = self.local("adj.store", place.ty)
        out.append(ir.Assign(g, ir.Load(gplace)))
        if pf in self.read_ptrs or self.stores[pf] > 1 or self.m.spec.adjoint == "zero":
            # an in-place update, or an element that may be written again (here, or by an
            # earlier launch): the value before this store has an adjoint of its own,
            # starting at zero
            out.append(ir.Store(dataclasses.replace(gplace), zero_of(place.ty)))
        self.back(value, ir.Read(g), out)

    def rev_barrier(self, r: tuple, out: list[ir.Stmt]) -> None:
        """The reverse of a barrier is a barrier: adjoints scattered into work-group
        memory are complete before the stores of the forward sweep read them."""
        op = r[1]
        out.append(ir.Eval(ir.Op(op.opname, op.ty, list(op.args))))

    def rev_shared_store(self, r: tuple, out: list[ir.Stmt]) -> None:
        _, place, value = r
        if not is_float(place.ty):
            return
        t, gplace = place.ty, self.shared_grad(place)
        g = self.local("adj.local", t)
        if t.bits == 16:
            out.append(ir.Assign(g, ir.Op("OpFConvert", t, [
                ir.Op("OpBitcast", F32, [ir.Load(gplace)])])))
        else:
            out.append(ir.Assign(g, ir.Op("OpBitcast", t, [ir.Load(gplace)])))
        out.append(ir.Store(self.shared_grad(place), zero_of(gplace.ty)))
        self.back(value, ir.Read(g), out)

    def shared_grad(self, place: ir.Place) -> ir.Place:
        """The element of `place`'s gradient in work-group memory (the float's bits; a
        float16's as a float32, as work-group memory has no 16-bit atomics)."""
        root = place.root
        assert isinstance(root, ir.SharedRoot) and isinstance(place.ty, Scalar)
        ut = Scalar("u", max(place.ty.bits, 32))
        grad = self.shared_grads.get(id(root))
        if grad is None:
            grad = self.shared_grads[id(root)] = ir.SharedRoot(
                ut, root.length, f"grad_{root.name}", shape=root.shape)
        return ir.Place(grad, place.index, (), ut)

    def zero_shared_grads(self) -> list[ir.Stmt]:
        """Statements zeroing the work-group's gradient arrays, then a barrier."""
        if not self.shared_grads:
            return []
        size = int(np.prod(self.m.local))
        e = self.local("zero.e", I32)
        out: list[ir.Stmt] = []
        for grad in self.shared_grads.values():
            out += [ir.Assign(e, builtin("LocalInvocationIndex")), ir.Loop(
                [], ir.Op("OpSLessThan", BOOL, [ir.Read(e), ir.Const(I32, grad.length)]),
                [ir.Store(ir.Place(grad, ir.Read(e), (), grad.elem), zero_of(grad.elem))],
                [ir.Assign(e, ir.Op("OpIAdd", I32, [ir.Read(e), ir.Const(I32, size)]))])]
        out.append(ir.Eval(barrier(_WORKGROUP_SCOPE)))
        return out

    def rev_reduce(self, r: tuple, out: list[ir.Stmt]) -> None:
        """A reducer's sum: what it adds gets the adjoint of its target's element."""
        _, place, value, _ = r
        reducer, pf = self.reducers[id(place.root)]
        t = reducer.spec.element
        if not t.is_float:
            return
        address = ir.Op("OpIAdd", U64, [pf, ir.Op("OpIMul", U64, [
            ir.Op("OpSConvert", U64, [place.index]), ir.Const(U64, t.nbytes)])])
        g = self.local("adj.reduction", t)
        out.append(ir.Assign(g, ir.Load(ir.Place(self.m.global_root(t), address, (), t))))
        self.back(value, ir.Read(g), out)

    def rev_atomic_add(self, r: tuple, out: list[ir.Stmt]) -> None:
        _, place, value, pf = r
        self.written.add(pf)
        g = self.local("adj.atomic", place.ty)
        out.append(ir.Assign(g, ir.Load(dataclasses.replace(
            place, index=self.grad_address(place.index, pf)))))
        self.back(value, ir.Read(g), out)

    def check_overwritten(self, reverse: list[ir.Stmt]) -> None:
        """The reverse sweep recomputes values from memory as the forward launch left it:
        one that needs a value the kernel read from memory it also writes would get the
        new value, so that is an error (an update `y[i] += f(x)` needs none)."""
        both = self.read_ptrs & self.written
        if not both:
            return
        stack: list[Any] = [reverse]
        for x in ir.each_once(stack):
            hit = self.loads.get(id(x))
            if hit is not None and hit[1] in both:
                raise self.error(x, "a value read from memory the kernel also writes (the "
                                 "adjoint would read the new value); write the result to "
                                 "another array")
            if isinstance(x, ir.Read):
                stack.extend(self.defs.get(id(x.local), ()))
            elif isinstance(x, list | tuple):
                stack.extend(x)
            elif dataclasses.is_dataclass(x) and isinstance(x, ir.Value | ir.Stmt | ir.Place):
                stack.extend(getattr(x, f.name) for f in dataclasses.fields(x)
                             if f.name not in ("ty", "local"))

    def grad_address(self, index: ir.Value, pf: int) -> ir.Value:
        """The address in the gradient of pointer `pf` matching `index` in its memory."""
        return ir.Op("OpIAdd", U64, [ir.Op("OpISub", U64, [index, ir.PushField(pf, U64)]),
                                     self.grad[pf]])

    def scatter(self, place: ir.Place, a: ir.Value, out: list[ir.Stmt], site: Any) -> None:
        """grad[place] += a, atomically: a compare-and-swap loop on the float's bits."""
        t = place.ty
        assert isinstance(t, Scalar)
        ut = Scalar("u", t.bits)
        if isinstance(place.root, ir.SharedRoot):
            grad, scope = self.shared_grad(place), _WORKGROUP_SCOPE
            if t.bits == 16:
                a = ir.Op("OpFConvert", F32, [a])
        elif isinstance(place.root, ir.GlobalRoot):
            pf = self.pointer_of(place.index, site)
            if pf is None:
                return
            address = self.grad_address(place.index, pf)
            offset = _member_offset(place.root.elem, place.members)
            if offset:
                address = ir.Op("OpIAdd", U64, [address, ir.Const(U64, offset)])
            grad, scope = ir.Place(self.m.global_root(ut), address, (), ut), _DEVICE_SCOPE
        else:
            return
        self.atomic_add(grad, scope, a, out)

    def argument(self, v: ir.PushField, a: ir.Value, out: list[ir.Stmt]) -> None:
        """A float scalar argument's adjoint adds up in the work-item (a captured time
        step is used in every iteration of every work-item's loop), and goes into its
        gradient cell once, at the end (`flush_arguments`)."""
        if v.index in self.scalars:
            total = self.scalar_sums.get(v.index)
            if total is None:
                total = self.scalar_sums[v.index] = self.local(f"adj.arg{v.index}", v.ty)
            out.append(ir.Assign(total, ir.Op("OpFAdd", v.ty, [ir.Read(total), a])))

    def flush_arguments(self) -> list[ir.Stmt]:
        """The scalar arguments' adjoints into their gradient cells."""
        out: list[ir.Stmt] = []
        for index, total in self.scalar_sums.items():
            ut = Scalar("u", total.ty.bits)
            self.atomic_add(ir.Place(self.m.global_root(ut), self.scalars[index], (), ut),
                            _DEVICE_SCOPE, ir.Read(total), out)
        return out

    def atomic_add(self, grad: ir.Place, scope: int, a: ir.Value, out: list[ir.Stmt]) -> None:
        """The float at `grad` (as its bits) += a. Where every work-item of a sub-group
        adds into one address, their sum is added once, by one of them: a vote finds out,
        unless the address is the same by construction (`same_in_sub_group`: an n-body
        step's reads of body j, whose votes cost 30% of its backward pass on an H100).
        One atomic for both cases, after the branch."""
        if self.phase == "after":  # a loop's reverse is split: what follows it is part 0's
            first: list[ir.Stmt] = []
            out.append(ir.If(self.first_part(), first, []))
            out = first
        ut = grad.ty
        assert isinstance(ut, Scalar)
        t = Scalar("f", ut.bits)
        value = self.local("adj.scatter", t)
        out.append(ir.Assign(value, a))
        if not self.m.spec.subgroup_scatter:
            self.add_into(grad, scope, value, out)
            return
        sub = ir.ScopeId(_SUBGROUP_SCOPE)
        summed = ir.Op("OpGroupNonUniformFAdd", t, [sub, ir.Lit("Reduce"), ir.Read(value)])
        once: list[ir.Stmt] = []
        if self.same_in_sub_group(grad.index):  # no vote needed
            out.append(ir.Assign(value, summed))
            self.add_into(grad, scope, value, once)
            out.append(ir.If(ir.Op("OpGroupNonUniformElect", BOOL, [sub]), once, []))
            return
        adds = self.local("adj.adds", BOOL)
        out += [ir.Assign(adds, ir.Const(BOOL, True)),
                ir.If(ir.Op("OpGroupNonUniformAllEqual", BOOL, [sub, grad.index]), [
                    ir.Assign(value, summed),
                    ir.Assign(adds, ir.Op("OpGroupNonUniformElect", BOOL, [sub]))], [])]
        self.add_into(grad, scope, value, once)
        out.append(ir.If(ir.Read(adds), once, []))

    def add_into(self, grad: ir.Place, scope: int, value: ir.Local, out: list[ir.Stmt]
                 ) -> None:
        """The float at `grad` += value, atomically: the device's float atomic add, or a
        compare-and-swap loop on the float's bits (which float64 needs on most devices)."""
        ut = grad.ty
        assert isinstance(ut, Scalar)
        t = Scalar("f", ut.bits)
        if scope == _DEVICE_SCOPE and t.bits in self.m.spec.buffer_float_adds:
            out.append(ir.Eval(ir.Atomic("OpAtomicFAddEXT", ir.Place(
                self.m.global_root(t), grad.index, (), t), [ir.Read(value)], t, scope, 0)))
            return
        if t.bits == 16:
            self.add_into_half(grad, scope, value, out)
            return
        if t.bits == 64:
            self.m.aspects.add("atomic64")
        self.compare_and_swap(grad, scope, lambda old: ir.Op("OpBitcast", ut, [ir.Op(
            "OpFAdd", t, [ir.Op("OpBitcast", t, [old]), ir.Read(value)])]), out)

    def add_into_half(self, grad: ir.Place, scope: int, value: ir.Local, out: list[ir.Stmt]
                      ) -> None:
        """The float16 at `grad` += value: a compare-and-swap loop on the 32-bit word
        holding it (Vulkan has no 16-bit atomics), the other half kept as it is. The
        tape's gradient memory is whole words."""
        word = ir.Place(self.m.global_root(U32), ir.Op("OpBitwiseAnd", U64, [
            grad.index, ir.Const(U64, (1 << 64) - 4)]), (), U32)
        shift = self.local("cas.shift", U32)
        out.append(ir.Assign(shift, ir.Op("OpUConvert", U32, [ir.Op(
            "OpShiftLeftLogical", U64, [ir.Op("OpBitwiseAnd", U64, [
                grad.index, ir.Const(U64, 2)]), ir.Const(U64, 3)])])))

        def new(old: ir.Value) -> ir.Value:
            half = ir.Op("OpBitcast", F16, [ir.Op("OpUConvert", U16, [
                ir.Op("OpShiftRightLogical", U32, [old, ir.Read(shift)])])])
            added = ir.Op("OpUConvert", U32, [ir.Op("OpBitcast", U16, [
                ir.Op("OpFAdd", F16, [half, ir.Read(value)])])])
            other = ir.Op("OpBitwiseAnd", U32, [old, ir.Op("OpNot", U32, [
                ir.Op("OpShiftLeftLogical", U32, [ir.Const(U32, 0xFFFF), ir.Read(shift)])])])
            return ir.Op("OpBitwiseOr", U32, [other, ir.Op("OpShiftLeftLogical", U32, [
                added, ir.Read(shift)])])

        self.compare_and_swap(word, scope, new, out)

    def compare_and_swap(self, place: ir.Place, scope: int,
                         new: Callable[[ir.Value], ir.Value], out: list[ir.Stmt]) -> None:
        """Replaces the integer at `place` with `new(its value)` atomically: a loop that
        tries again while another work-item changed it in between."""
        ut = place.ty
        old, seen = self.local("cas.old", ut), self.local("cas.seen", ut)
        cas = ir.Atomic("OpAtomicCompareExchange", dataclasses.replace(place),
                        [new(ir.Read(old)), ir.Read(old)], ut, scope, 0)
        out += [ir.Assign(old, ir.Load(place)),
                ir.Loop([], None, [
                    ir.Assign(seen, cas),
                    ir.If(ir.Op("OpIEqual", BOOL, [ir.Read(seen), ir.Read(old)]),
                          [ir.Break()], []),
                    ir.Assign(old, ir.Read(seen))], [])]


def _member_offset(t: Type, members: tuple[int, ...]) -> int:
    offset = 0
    for m in members:
        assert isinstance(t, Struct)
        offset += field_offsets(t)[m]
        t = t.fields[m][1]
    return offset


__all__ = ["GradientMemory"]
