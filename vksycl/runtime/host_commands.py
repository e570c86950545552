"""Commands with no dispatch of their own: host tasks, and barriers (an empty command
group, `ext_oneapi_submit_barrier`, prefetch, mem_advise). Interpreted, unlike the
compiled `commands`: a barrier's command type is its instance's own, which a native
class cannot hold in a class variable."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .commands import Command, HostStep, LowerContext, Step


@dataclass
class HostTask(Command):
    """`handler.host_task`: Python run on the host once its dependencies completed."""

    fn: Callable[..., Any]
    args: tuple = field(default=())
    # the command group's accessors: those made for the host task read the host copy
    # while it runs, and only then (its dependencies are done only then)
    accessors: list = field(default_factory=list)
    command_type = "host_task"
    runs_on_host = True

    def lower(self, ctx: LowerContext) -> list[Step]:
        return [HostStep(self.run)]

    def run(self) -> None:
        own = [a for a in self.accessors if a._host_task]
        for a in own:
            a._in_task += 1
        try:
            self.fn(*self.args)
        finally:
            for a in own:
                a._in_task -= 1


@dataclass
class Barrier(Command):
    """No work: an empty command group ("barrier"), `ext_oneapi_submit_barrier`
    ("ext_oneapi_barrier"), prefetch, mem_advise."""

    command_type: str = "barrier"  # type: ignore[misc]  # the instance's own
