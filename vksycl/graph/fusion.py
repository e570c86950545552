"""Kernel fusion in an executable graph (`property.graph.perform_fusion`), the graph's
half: which nodes may share a fused kernel, what each node runs, what an update does,
and the report.

Only kernel nodes adjacent in the graph's linear order (`executable._topological`) form
a run: any other node (a copy, a fill, a host task, a sub-graph, a barrier) ends it, so
a group is convex (no path leaves it and comes back) and running its members as one
dispatch keeps every edge. The registered fuser (`runtime.fusion`) splits each run into
groups it proves legal. A fused group's dispatch stands at its last member's place; the
other members run nothing of their own.

An update gives each touched group its members' new commands. The group's fused kernel
is packed again when the proof still holds for the new arguments; otherwise the group
runs unfused (its members' own commands, kept up to date) until an update makes the
proof hold again. Nothing is compiled at update, and the choice is in the report."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..runtime.commands import Command, GpuStep, Step
from ..runtime.fusion import FusedGroup, fuser
from ..runtime.submission import Dispatch
from .properties import node_type

_BREAKS = {
    node_type.host_task: "a host task: fused kernels cannot wait for the host",
    node_type.memcpy: "a copy in the middle of the kernels",
    node_type.memset: "a memset in the middle of the kernels",
    node_type.memfill: "a fill in the middle of the kernels",
    node_type.subgraph: "a sub-graph node",
}


@dataclass
class FusionReport:
    """What `perform_fusion` did: the groups of nodes (ids as `print_graph` numbers them)
    each running as one kernel, what fusing each did, and for every other kernel node, or
    node that ended a group, why."""

    groups: list[list[int]] = field(default_factory=list)
    notes: list[list[str]] = field(default_factory=list)
    unfused: dict[int, str] = field(default_factory=dict)

    def group_of(self, node_id: int) -> int | None:
        return next((g for g, members in enumerate(self.groups) if node_id in members),
                    None)

    def __str__(self) -> str:
        lines = [f"fused group {g}: nodes {members}: {'; '.join(self.notes[g])}"
                 for g, members in enumerate(self.groups)]
        lines += [f"node {i}: not fused with the kernels before it: {why}"
                  for i, why in sorted(self.unfused.items())]
        return "\n".join(lines) or "no kernel nodes"


class Fusion:
    """The fused groups of one executable graph, and which of them run fused now."""

    def __init__(self, device: Any, commands: list[Command], order: list[int],
                 types: list[node_type], lower: Callable[[Command], list[Step]],
                 kernels: list[Any]) -> None:
        self.reasons: dict[int, str] = {}
        runs: list[list[int]] = [[]]
        for i in order:
            if types[i] is node_type.kernel:
                runs[-1].append(i)
            else:
                if types[i] in _BREAKS and runs[-1]:
                    self.reasons[i] = _BREAKS[types[i]]
                runs.append([])
        self.kernels = [i for i in order if types[i] is node_type.kernel]
        runs = [r for r in runs if len(r) > 1]
        self.groups: list[FusedGroup] = []
        self.lower = lower
        fuse = fuser()
        if fuse is not None and runs:
            groups, reasons = fuse(device, commands, runs, kernels)
            self.groups = list(groups)
            self.reasons.update(reasons)
        self.active = [True] * len(self.groups)
        self.steps = [lower(g.command) for g in self.groups]
        self.why_unfused: list[str] = [""] * len(self.groups)
        rank = {i: k for k, i in enumerate(order)}
        self.holders = [max(g.members, key=rank.__getitem__) for g in self.groups]
        self._group = {m: k for k, g in enumerate(self.groups) for m in g.members}

    def steps_for(self, i: int, own: list[Step]) -> list[Step]:
        """What node i runs: its own steps, the fused kernel, or nothing (fused)."""
        k = self._group.get(i)
        if k is None or not self.active[k]:
            return own
        return self.steps[k] if i == self.holders[k] else []

    def level_groups(self) -> dict[int, list[int]]:
        """Each running group's holder and its members."""
        return {self.holders[k]: g.members for k, g in enumerate(self.groups)
                if self.active[k]}

    def commands(self) -> tuple[Command, ...]:
        return tuple(g.command for g in self.groups)

    def refresh(self, changed: set[int], commands: list[Command], in_place: bool = False,
                on_device: bool = False, writes: dict[Any, list[Dispatch]] | None = None
                ) -> tuple[dict[int, list[list[Any]]], bool]:
        """Updates the groups holding changed nodes: the new GPU steps of each running
        holder, and whether a group started or stopped running fused. `in_place`: no
        submission can still read the groups' argument blocks, so a running group whose
        fused kernel reads its arguments from one has them rewritten there, and its
        recorded steps stay as they are. `on_device`: every submission that may read the
        blocks was handed to the device, so a running group's new arguments go into its
        block by dispatches, added to `writes` (the graph's writes its next submission
        runs first) under `("group", k)`. A group rewritten from the host or given a new
        command drops its entry there: older than what its block holds, or aimed at a
        block that goes."""
        new: dict[int, list[list[Any]]] = {}
        regrouped = False
        for k, g in enumerate(self.groups):
            if changed.isdisjoint(g.members):
                continue
            key = ("group", k)
            added: list[Dispatch] | None = [] if on_device and self.active[k] else None
            made = g.refresh([commands[m] for m in g.members], in_place and self.active[k],
                             added)
            if writes is not None:
                if added:
                    writes[key] = [*writes.get(key, ()), *added]  # each holds what changed
                elif made is not g.command or in_place:
                    writes.pop(key, None)
            if made is g.command:  # the same dispatch, its argument block rewritten
                continue
            if isinstance(made, str):
                regrouped = regrouped or self.active[k]
                self.active[k] = False
                self.why_unfused[k] = made
                continue
            g.command = made
            self.steps[k] = self.lower(made)
            regrouped = regrouped or not self.active[k]
            self.active[k] = True
            self.why_unfused[k] = ""
            new[self.holders[k]] = [s.dispatches for s in self.steps[k]
                                    if isinstance(s, GpuStep)]
        return new, regrouped

    def hides(self, i: int) -> bool:
        """Whether node i's own steps are not recorded (a running group holds it)."""
        k = self._group.get(i)
        return k is not None and self.active[k]

    def report(self) -> FusionReport:
        out = FusionReport(unfused=dict(self.reasons))
        for k, g in enumerate(self.groups):
            if self.active[k]:
                out.groups.append(sorted(g.members))
                out.notes.append(list(g.notes))
            else:
                for m in g.members:
                    out.unfused[m] = f"its group runs unfused after an update: " \
                                     f"{self.why_unfused[k]}"
        for i in self.kernels:
            if i not in self._group and i not in out.unfused:
                out.unfused[i] = "no kernel node next to it in the graph's order"
        return out


__all__ = ["Fusion", "FusionReport"]
