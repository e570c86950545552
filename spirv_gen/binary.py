"""Small edits of encoded modules, done on the decoded instruction stream."""

from __future__ import annotations

from .errors import SpirvError
from .grammar import grammar
from .reader import Instruction, read
from .words import read_string, string_words


def entry_points(binary) -> list[tuple[str, int, str]]:
    """``(execution model, function id, name)`` of each OpEntryPoint."""
    g = grammar()
    models = g.kinds["ExecutionModel"].by_value
    op = g.instruction("OpEntryPoint").opcode
    out = []
    for inst in read(binary).instructions:
        if inst.opcode == op:
            model = models.get(inst.words[0])
            out.append((model.name if model else str(inst.words[0]), inst.words[1],
                        read_string(inst.words, 2)[0]))
    return out


def rename_entry_point(binary, old: str, new: str) -> bytes:
    """The module with every entry point named ``old`` renamed ``new`` (Vulkan pipelines
    pick their entry point by name; some runtimes only ever ask for "main")."""
    m = read(binary)
    op = grammar().instruction("OpEntryPoint").opcode
    found = False
    for i, inst in enumerate(m.instructions):
        if inst.opcode != op:
            continue
        name, after = read_string(inst.words, 2)
        if name == old:
            w = inst.words
            m.instructions[i] = Instruction(op, (w[0], w[1], *string_words(new), *w[after:]))
            found = True
    if not found:
        names = [n for _, _, n in entry_points(binary)]
        raise SpirvError(f"no entry point named {old!r}; the module has {names}")
    return m.to_bytes()
