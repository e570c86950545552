"""Structured control flow: selections, loops and switches with their merge blocks.

These are the only way the builder emits labels and branches, so every construct has the
merge instruction, merge block and continue target that SPIR-V's structured rules require.
Each is a context manager; leaving it opens the merge block, where code continues.
:class:`ControlFlowBuilder` is the part of :class:`~spirv_gen.builder.ModuleBuilder` that
opens them and emits their labels and branches.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from .errors import BuildError
from .words import Id


class ControlFlowBuilder:
    """The control-flow half of :class:`~spirv_gen.builder.ModuleBuilder` (a mixin: it
    uses the builder's emitter and the function and block being built)."""

    def if_(self, condition: Id, control: str = "None") -> Selection:
        """``with b.if_(c) as s: ...; s.else_(); ...`` — a selection with its merge block."""
        return Selection(self, condition, control)

    def loop(self, control: str | tuple = "None") -> Loop:
        """``with b.loop() as lp: ...`` — a loop with its merge and continue blocks.
        ``control`` is a LoopControl mask, or a tuple of the mask and its parameters, e.g.
        ``("DependencyLength", 4)``."""
        return Loop(self, control)

    def switch(self, selector: Id, control: str = "None") -> Switch:
        """``with b.switch(x) as sw: with sw.case(1, 2): ...`` — cases never fall through."""
        return Switch(self, selector, control)

    # blocks and branches, for the constructs -----------------------------------------
    def _emit_raw(self, opname: str, *args) -> int:
        """Emit a control-flow instruction into the current block; returns the index of
        its first operand word in the body (for patching a forward label)."""
        if self._block is None:
            self._no_block(self.grammar.instruction(opname))
        info = self.grammar.instruction(opname)
        words = self.encode(info, args)
        body = self._fn.body
        at = len(body) + 1
        body += ((len(words) + 1) << 16 | info.opcode, *words)
        return at

    def _branch(self, target: Id) -> None:
        self._emit_raw("OpBranch", target)
        self._fn.targets.add(target)
        self._block = None

    def _branch_conditional(self, cond: Id, true_label: Id, false_label: Id) -> int:
        at = self._emit_raw("OpBranchConditional", cond, true_label, false_label)
        self._fn.targets.update((true_label, false_label))
        self._block = None
        return at

    def _open_block(self, label: Id) -> None:
        if self._block is not None:
            raise BuildError(f"block %{self._block} is still open")
        body = self._fn.body
        body += (2 << 16 | self._label_opcode, label)
        self._block = label


class Selection:
    """if / else. ``then_end`` and ``else_end`` are the labels of the blocks that reach the
    merge from each side (None if that side left by break, continue or return): the
    predecessors for an OpPhi in the merge block."""

    def __init__(self, b: ControlFlowBuilder, condition: Id, control: str) -> None:
        self.b = b
        self.condition = condition
        self.control = control
        self.header: Id | None = None
        self.merge = b.new_id()
        self.then_label = b.new_id()
        self.else_label: Id | None = None
        self.then_end: Id | None = None
        self.else_end: Id | None = None
        self._false = b.new_id()
        self._patch = -1
        self._in_else = False

    def __enter__(self) -> Selection:
        b = self.b
        _leave_loop_header(b)
        self.header = b.current_block
        b._emit_raw("OpSelectionMerge", self.merge, self.control)
        self._patch = b._branch_conditional(self.condition, self.then_label, self._false) + 2
        b.constructs.append(self)
        b._open_block(self.then_label)
        return self

    def else_(self) -> None:
        """End the then-branch and start the else-branch."""
        if self._in_else:
            raise BuildError("else_() called twice for one if_")
        if self.b.constructs[-1] is not self:
            raise BuildError("else_() inside a nested construct that is still open")
        self.then_end = _close_to(self.b, self.merge)
        self.else_label = self._false
        self._in_else = True
        self.b._open_block(self._false)

    def __exit__(self, exc_type, exc, tb) -> bool:
        b = self.b
        if exc_type is not None:
            return False
        if b.constructs[-1] is not self:
            raise BuildError("if_ closed while a nested construct is still open")
        b.constructs.pop()
        end = _close_to(b, self.merge)
        if self._in_else:
            self.else_end = end
        else:
            self.then_end = end
            b._fn.body[self._patch] = self.merge
            b._fn.targets.add(self.merge)
            self.else_end = self.header
        b._open_block(self.merge)
        return False


class Loop:
    """A structured loop::

        with b.loop() as lp:      # the header block is open here (phis, the condition)
            lp.while_(cond)       # optional: leave when cond is false
            ...                   # body; lp.break_(), lp.continue_()
            lp.continuing()       # optional: the continue block (increments)
        # code goes on in the merge block

    ``preheader`` is the block before the loop and ``continue_label`` the continue target:
    the two predecessors of a header phi.
    """

    def __init__(self, b: ControlFlowBuilder, control: str | tuple) -> None:
        self.b = b
        self.control = control
        self.preheader: Id | None = None
        self.header = b.new_id()
        self.body_label = b.new_id()
        self.continue_label = b.new_id()
        self.merge = b.new_id()
        self._state = "header"

    def __enter__(self) -> Loop:
        b = self.b
        _leave_loop_header(b)
        self.preheader = b.current_block
        b._branch(self.header)
        b.constructs.append(self)
        b._open_block(self.header)
        return self

    def _end_header(self, cond: Id | None) -> None:
        b = self.b
        if self._state != "header":
            raise BuildError("the loop header has already ended")
        if b.current_block != self.header or b.constructs[-1] is not self:
            raise BuildError("the loop condition must be computed in the loop header itself")
        ctl = self.control if isinstance(self.control, tuple) else (self.control,)
        b._emit_raw("OpLoopMerge", self.merge, self.continue_label, *ctl)
        b._fn.targets.add(self.continue_label)
        if cond is None:
            b._branch(self.body_label)
        else:
            b._branch_conditional(cond, self.body_label, self.merge)
        self._state = "body"
        b._open_block(self.body_label)

    def while_(self, condition: Id) -> None:
        """Leave the loop unless ``condition`` holds. In the header itself this is the
        header's conditional branch; if the header already ended (a construct was opened to
        compute the condition), it is ``if not condition: break`` at this point of the body.
        """
        b = self.b
        if self._state == "header" and b.current_block == self.header:
            self._end_header(condition)
            return
        if self._state != "body" or b.constructs[-1] is not self or b.current_block is None:
            raise BuildError("while_() must come first in the loop, directly inside it")
        with b.if_(b.op("LogicalNot", b.type_of(condition), condition)):
            self.break_()

    def _innermost(self, what: str) -> None:
        for c in reversed(self.b.constructs):
            if isinstance(c, Loop):
                if c is not self:
                    raise BuildError(f"{what} may only leave the innermost loop")
                return
        raise BuildError(f"{what} outside its loop")

    def break_(self) -> None:
        """Leave the loop (branch to its merge block)."""
        self._innermost("break_()")
        if self._state == "header":
            self._end_header(None)
        self.b._branch(self.merge)

    def continue_(self) -> None:
        """Go to the continue block."""
        self._innermost("continue_()")
        if self._state == "header":
            self._end_header(None)
        if self._state == "continue":
            raise BuildError("continue_() inside the continue block")
        self.b._branch(self.continue_label)

    def continuing(self) -> None:
        """End the body and open the continue block (its code runs before each new
        iteration's header)."""
        b = self.b
        if self._state == "header":
            self._end_header(None)
        if self._state == "continue":
            raise BuildError("continuing() called twice")
        if b.constructs[-1] is not self:
            raise BuildError("continuing() inside a nested construct that is still open")
        _close_to(b, self.continue_label)
        self._state = "continue"
        b._open_block(self.continue_label)

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc_type is not None:
            return False
        b = self.b
        if b.constructs[-1] is not self:
            raise BuildError("loop closed while a nested construct is still open")
        if self._state != "continue":
            self.continuing()
        b.constructs.pop()
        if b.current_block is not None:
            b._branch(self.header)
        b._open_block(self.merge)
        return False


class Switch:
    """A multi-way selection; each case ends by going to the merge block (no
    fall-through). Without ``default()`` the default target is the merge block."""

    def __init__(self, b: ControlFlowBuilder, selector: Id, control: str) -> None:
        self.b = b
        self.selector = selector
        self.control = control
        self.merge = b.new_id()
        self.cases: list[tuple[tuple[int, ...], Id]] = []
        self.default_label: Id | None = None
        self._at = -1
        self._header: Id | None = None
        self._seen: set[int] = set()

    def __enter__(self) -> Switch:
        b = self.b
        _leave_loop_header(b)
        b._emit_raw("OpSelectionMerge", self.merge, self.control)
        self._header = b.current_block
        self._at = len(b._fn.body)
        b._block = None
        b.constructs.append(self)
        return self

    @contextmanager
    def case(self, *literals: int) -> Iterator[Id]:
        """A block run when the selector equals one of ``literals``."""
        if not literals:
            raise BuildError("case() needs at least one literal")
        for v in literals:
            if v in self._seen:
                raise BuildError(f"case {v} appears twice in one switch")
            self._seen.add(v)
        label = self.b.new_id()
        self.cases.append((literals, label))
        yield from self._block(label)

    @contextmanager
    def default(self) -> Iterator[Id]:
        """The block run when no case matches."""
        if self.default_label is not None:
            raise BuildError("default() appears twice in one switch")
        self.default_label = self.b.new_id()
        yield from self._block(self.default_label)

    def _block(self, label: Id) -> Iterator[Id]:
        b = self.b
        if b.constructs[-1] is not self or b.current_block is not None:
            raise BuildError("a case must be directly inside its switch")
        b._open_block(label)
        yield label
        if b.constructs[-1] is not self:
            raise BuildError("case closed while a nested construct is still open")
        _close_to(b, self.merge)

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc_type is not None:
            return False
        b = self.b
        if b.constructs[-1] is not self:
            raise BuildError("switch closed while a nested construct is still open")
        b.constructs.pop()
        default = self.default_label if self.default_label is not None else self.merge
        pairs = [(v, label) for lits, label in self.cases for v in lits]
        info = b.grammar.instruction("OpSwitch")
        words = b.encode(info, (self.selector, default, *pairs))
        b._fn.body[self._at : self._at] = [(len(words) + 1) << 16 | info.opcode, *words]
        b._fn.targets.update((default, *(label for _, label in self.cases)))
        b._open_block(self.merge)
        return False


def _close_to(b: ControlFlowBuilder, target: Id) -> Id | None:
    """Branch from the current block to ``target`` if the block is still open; returns
    the label of the block that branched, or None."""
    label = b.current_block
    if label is None:
        return None
    b._branch(target)
    return label


def _leave_loop_header(b: ControlFlowBuilder) -> None:
    """A construct cannot start inside a loop header (it must end with OpLoopMerge): end
    the header first, entering the body unconditionally."""
    if b.constructs:
        c = b.constructs[-1]
        if isinstance(c, Loop) and c._state == "header" and b.current_block == c.header:
            c._end_header(None)
