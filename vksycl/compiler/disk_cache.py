"""Entries of the kernel cache on disk: each written whole or not at all, and read back
only when intact.

An entry is a header (magic, format version, payload length, BLAKE2b digest of the
payload), then the payload. A writer writes a temporary file of its own in the same
folder and moves it into place with `os.replace`, so processes and threads compiling the
same kernel at once, and their readers, only ever see a whole entry, whichever writer
wins. An entry that is short, too long or whose digest does not match is corrupt: it is
removed with a warning, and the caller compiles again.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import struct
import tempfile
from pathlib import Path

log = logging.getLogger("vksycl.compiler")

_MAGIC = b"VKSYCLKC"
_VERSION = 2
_DIGEST = 32
_HEADER = struct.Struct(f"<8sIQ{_DIGEST}s")  # magic, version, payload bytes, digest


def _digest(payload: bytes) -> bytes:
    return hashlib.blake2b(payload, digest_size=_DIGEST).digest()


def read(path: Path) -> bytes | None:
    """The payload of the entry at `path`: None where there is none, or where it is
    corrupt (then removed)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as err:
        log.warning("cannot read the kernel cache entry %s (%s); compiling again",
                    path, err)
        return None
    if len(data) < _HEADER.size:
        discard(path, f"{len(data)} bytes, shorter than its header")
        return None
    magic, version, size, digest = _HEADER.unpack_from(data)
    payload = data[_HEADER.size:]
    if magic != _MAGIC or version != _VERSION:
        discard(path, "not an entry of this cache format")
    elif len(payload) != size:
        discard(path, f"{len(payload)} bytes of payload where its header says {size}")
    elif _digest(payload) != digest:
        discard(path, "its checksum does not match")
    else:
        return payload
    return None


def discard(path: Path, why: str) -> None:
    """Removes a corrupt entry, with a warning saying why."""
    log.warning("discarding the corrupt kernel cache entry %s (%s); compiling again",
                path, why)
    with contextlib.suppress(OSError):
        path.unlink()


def write(path: Path, payload: bytes) -> None:
    """Writes the entry at `path` atomically. A cache that cannot be written (a full
    disk, a read-only folder) is no error: the kernel was compiled, and nothing partial
    is left behind."""
    header = _HEADER.pack(_MAGIC, _VERSION, len(payload), _digest(payload))
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f"{path.stem}.", suffix=".tmp")
    except OSError as err:
        log.debug("cannot write the kernel cache: %s", err)
        return
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(header)
            f.write(payload)
        os.replace(tmp, path)
    except OSError as err:
        log.debug("cannot write the kernel cache: %s", err)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
