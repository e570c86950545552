"""Exceptions of spirv_gen: each says what was wrong and where."""

from __future__ import annotations


class SpirvError(Exception):
    """Base class of every error spirv_gen raises on purpose."""


class BuildError(SpirvError):
    """The builder was asked for something SPIR-V cannot express (or not this way)."""


class DecodeError(SpirvError):
    """A binary is not a well-formed SPIR-V word stream."""


class ToolsError(SpirvError):
    """SPIRV-Tools failed (assembling, disassembling, optimizing) or is missing."""


class ValidationError(SpirvError):
    """spirv-val rejected a module; the message carries the validator's text and the
    disassembled neighbourhood of the offending instruction."""

    def __init__(self, message: str, diagnostic: str = "", neighbourhood: str = "") -> None:
        super().__init__(message)
        self.diagnostic = diagnostic
        self.neighbourhood = neighbourhood
