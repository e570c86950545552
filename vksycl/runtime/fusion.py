"""The hook through which graphs fuse kernels. Fusing needs the compiler, which the
graph layer never imports: the kernel front ends register the function that does it
(`use_fuser`) when `vksycl.kernels.fusion` is imported, as they register the launch
builder with the handler. The graph asks `fuser()` and, when none is registered, runs
every node unfused."""

from __future__ import annotations

from typing import Any, Protocol

from .commands import Command
from .submission import Dispatch


class FusedGroup(Protocol):
    """Kernel nodes running as one fused kernel: their positions in the commands the
    fuser was given, the fused kernel's command, and what fusing them did."""

    members: list[int]
    command: Command
    notes: list[str]

    def refresh(self, commands: list[Command], in_place: bool = False,
                writes: list[Dispatch] | None = None) -> Command | str:
        """The fused command for the members' current commands (new arguments, no
        compilation), or why the fused kernel does not hold for them. `in_place`: nothing
        reads the fused command's argument block any more, so new arguments may be written
        into it, the same command coming back. `writes`: runs that may read the block were
        all handed to the device, so the same command may come back with dispatches
        writing the new arguments into the block added to `writes`, which the caller runs
        before the command's next run."""
        ...


class Fuser(Protocol):
    def __call__(self, device: Any, commands: list[Command], runs: list[list[int]],
                 kernels: list[Any]) -> tuple[list[FusedGroup], dict[int, str]]:
        """Groups of each run of kernel commands (positions in `commands`, in the order
        they run) fused into one kernel, and why each other kernel was left out;
        `kernels` are what each node was launched with (its Python kernel, or None)."""
        ...


_fuser: Fuser | None = None


def use_fuser(fuse: Fuser) -> None:
    global _fuser
    _fuser = fuse


def fuser() -> Fuser | None:
    return _fuser
