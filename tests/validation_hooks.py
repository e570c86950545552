"""Under `VKSYCL_VALIDATE=1` (as `ci/test.sh` runs the suite), a Vulkan validation
warning or error fails the test phase that caused it, with the layer's message: those of
this process, and those its subprocesses met (they append theirs to the file named by
`VKSYCL_VALIDATE_LOG`, which is set here for them). A test that makes an invalid call on
purpose names the messages it expects: `@pytest.mark.validation_expected(regex, ...)`."""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Generator
from pathlib import Path

import pytest

from vksycl.runtime import validation

VALIDATING = validation.requested()
if VALIDATING and not os.environ.get(validation.LOG_ENV):
    fd, name = tempfile.mkstemp(prefix="vksycl-validation-", suffix=".log")
    os.close(fd)
    os.environ[validation.LOG_ENV] = name
_LOG = Path(os.environ[validation.LOG_ENV]) if VALIDATING else None
_seen = 0  # bytes of the subprocesses' log already reported

# Debian 12's layer (1.3.239) predates VK_KHR_cooperative_matrix and NVIDIA's
# VK_NV_cooperative_matrix2. It says so when a device enables them ("... is not supported
# by this layer"), then reports their feature structs (sTypes 1000506000, 1000593000) and
# their SPIR-V (SPV_KHR_cooperative_matrix; capability 6022, which it cannot name) as
# unknown. Those are the layer's gaps, not vksycl's errors: with it, cooperative matrices
# go unvalidated. Every other message fails the test.
LAYER_GAPS = tuple(re.compile(p) for p in (
    r"Device Extension VK_(KHR|NV)_cooperative_matrix2? is not supported by this layer",
    r"unknown VkStructureType \((1000506000|1000593000)\)",
    r"SPIR-V Extension \(SPV_KHR_cooperative_matrix\) was declared that is not supported",
    r"Invalid capability operand: 6022\b",
    r"A SPIR-V Capability \(Unhandled OpCapability\) was declared",
))


def reportable(messages: list[str]) -> list[str]:
    """The messages that are vksycl's to answer for: all but the layer's gaps."""
    return [m for m in messages if not any(g.search(m) for g in LAYER_GAPS)]


def _new_messages() -> list[str]:
    global _seen
    messages = validation.take_messages()
    if _LOG is not None and _LOG.exists():
        text = _LOG.read_bytes()[_seen:]
        _seen += len(text)
        messages += text.decode(errors="replace").splitlines()
    return messages


def _checked(item: pytest.Item, phase: str) -> Generator[None, object, object]:
    try:
        return (yield)
    finally:
        if VALIDATING:
            expected = [re.compile(p) for mark in item.iter_markers("validation_expected")
                        for p in mark.args]
            messages = [m for m in reportable(_new_messages())
                        if not any(p.search(m) for p in expected)]
            if messages:
                pytest.fail(f"{len(messages)} Vulkan validation message(s) during {phase}:\n"
                            + "\n".join(messages), pytrace=False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, object, object]:
    return (yield from _checked(item, "setup"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    return (yield from _checked(item, "the test"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None
                            ) -> Generator[None, object, object]:
    return (yield from _checked(item, "teardown"))
