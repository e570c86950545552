"""The caching sub-allocator behind USM: Vulkan allocations are slow (327 µs each measured
on an H100), so memory comes from large blocks carved into size-classed chunks, and freed
chunks are kept for reuse, as CUDA frameworks' caching allocators do.

Chunks of up to `SMALL_LIMIT` bytes are cut from shared blocks of `BLOCK_BYTES`; larger
ones get a block of their own. A freed chunk is reused only once the device finished the
work submitted before the free (it may still read it). Cached blocks go back to the driver
when an allocation would otherwise fail, or on `release_cached`.
"""

from __future__ import annotations

import collections
import threading
from dataclasses import dataclass, field
from typing import Any

from ..exceptions import errc, exception
from .engine import Buffer, Engine
from .submission import Submission

MIN_ALIGN = 256  # every chunk starts at a multiple of this (SYCL's largest scalar or vector)
BLOCK_BYTES = 32 << 20
SMALL_LIMIT = 4 << 20


def size_class(nbytes: int) -> int:
    """`nbytes` rounded up to one of eight steps per power of two (at most 12.5% waste),
    and to a whole number of `MIN_ALIGN` units."""
    if nbytes <= 8 * MIN_ALIGN:
        return -(-max(nbytes, 1) // MIN_ALIGN) * MIN_ALIGN
    step = 1 << ((nbytes - 1).bit_length() - 4)
    return -(-nbytes // step) * step


@dataclass(eq=False)
class Block:
    """One Vulkan buffer; `live` counts its chunks in use, `top` is where carving goes on,
    `chunks` lists every chunk carved from it (live ones have an owner)."""

    buffer: Buffer
    top: int = 0
    live: int = 0
    chunks: list[Chunk] = field(default_factory=list)


@dataclass(eq=False)
class Chunk:
    block: Block
    offset: int
    size: int
    owner: Any = None  # the USM allocation in it, while it is live

    @property
    def address(self) -> int:
        return self.block.buffer.address + self.offset


class Allocator:
    """Chunks of one memory kind (device-local, or host-visible) of one device."""

    def __init__(self, engine: Engine, host_visible: bool, heap_bytes: int) -> None:
        self.engine = engine
        self.host_visible = host_visible
        self.heap_bytes = heap_bytes  # of the Vulkan heap it allocates from
        self._lock = threading.Lock()
        self._free: dict[int, list[Chunk]] = collections.defaultdict(list)
        self._pending: collections.deque[tuple[Submission, Chunk]] = collections.deque()
        self._blocks: list[Block] = []
        self._carving: Block | None = None
        self.in_use = 0  # bytes of live chunks (by size class)
        self.siblings: list[Allocator] = []  # the device's allocators of other memory kinds

    # -- allocate and free -----------------------------------------------------------------
    def allocate(self, nbytes: int) -> Chunk:
        """A chunk of at least `nbytes`; raises errc.memory_allocation when even an
        emptied cache leaves the device without room."""
        size = size_class(nbytes)
        with self._lock:
            free = self._free.get(size)
            chunk = free.pop() if free else self._reuse(size) or self._new_chunk(size)
            chunk.block.live += 1
            self.in_use += size
            return chunk

    def free(self, chunk: Chunk) -> None:
        """Returns a chunk; it is reused after the work already submitted completes."""
        last = self.engine.last_submission()
        with self._lock:
            chunk.owner = None
            chunk.block.live -= 1
            self.in_use -= chunk.size
            if last is None or last.finished:
                self._free[chunk.size].append(chunk)
            else:
                self._pending.append((last, chunk))

    def _reuse(self, size: int) -> Chunk | None:
        """A freed chunk of `size` whose last user finished since it was freed."""
        self._settle()
        free = self._free.get(size)
        return free.pop() if free else None

    def _settle(self) -> None:
        """Moves chunks whose last user finished to the free lists."""
        pending = self._pending
        while pending and pending[0][0].done():
            chunk = pending.popleft()[1]
            self._free[chunk.size].append(chunk)

    def _new_chunk(self, size: int) -> Chunk:
        if size > SMALL_LIMIT:
            block = self._new_block(size)
        else:
            block = self._carving
            if block is None or block.top + size > block.buffer.nbytes:
                block = self._carving = self._new_carving_block(size)
        chunk = Chunk(block, block.top, size)
        block.top += size
        block.chunks.append(chunk)
        return chunk

    def _new_carving_block(self, size: int) -> Block:
        """A block to cut small chunks from. On a device too full for a whole block (even
        with the cache released), one with room for this chunk alone: the room left
        still serves small allocations."""
        try:
            return self._new_block(BLOCK_BYTES)
        except exception as err:
            if err.code() is not errc.memory_allocation:
                raise
            return self._new_block(size)

    def _new_block(self, nbytes: int) -> Block:
        """A block with room for `nbytes` from its first MIN_ALIGN-aligned address (Vulkan
        promises buffers less alignment than that)."""
        nbytes += MIN_ALIGN
        try:
            buffer = self.engine.buffer(nbytes, self.host_visible)
        except exception as err:
            if err.code() is not errc.memory_allocation:  # a lost device: nothing to retry
                raise
            self.engine.synchronize()
            if not self._release_for_retry():
                raise
            buffer = self.engine.buffer(nbytes, self.host_visible)
        block = Block(buffer, top=-buffer.address % MIN_ALIGN)
        self._blocks.append(block)
        return block

    # -- the cache -------------------------------------------------------------------------
    def _release_for_retry(self) -> int:
        """Gives back this allocator's cached blocks and those of the other memory kinds
        of the device (host-visible and device-local memory often share one heap, as on
        integrated GPUs and lavapipe); returns the bytes released. Called with this
        allocator's lock held, so a sibling busy in another thread is skipped rather
        than waited for."""
        self._settle()
        released = self._trim()
        for other in self.siblings:
            if other._lock.acquire(blocking=False):
                try:
                    other._settle()
                    released += other._trim()
                finally:
                    other._lock.release()
        return released

    def _trim(self) -> int:
        """Releases every block with no live chunk; returns the bytes given back."""
        empty = [b for b in self._blocks if b.live == 0]
        if not empty:
            return 0
        gone = {id(b) for b in empty}
        for size, chunks in list(self._free.items()):
            kept = [c for c in chunks if id(c.block) not in gone]
            if kept:
                self._free[size] = kept
            else:
                del self._free[size]
        self._pending = collections.deque(
            (s, c) for s, c in self._pending if id(c.block) not in gone)
        self._blocks = [b for b in self._blocks if id(b) not in gone]
        if self._carving is not None and id(self._carving) in gone:
            self._carving = None
        for b in empty:
            self.engine.release(b.buffer)
        return sum(b.buffer.nbytes for b in empty)

    def abandon(self) -> None:
        """Marks every live allocation freed: its device's memory is gone (vksycl
        released an application's device)."""
        with self._lock:
            for block in self._blocks:
                for chunk in block.chunks:
                    if chunk.owner is not None:
                        chunk.owner.freed = True

    def release_cached(self) -> int:
        """Gives blocks that hold no live allocation back to the driver (after the device
        finished with them); returns the bytes released."""
        self.engine.synchronize()
        with self._lock:
            self._settle()
            return self._trim()

    def reserved(self) -> int:
        """Bytes of Vulkan memory this allocator holds, live or cached."""
        return sum(b.buffer.nbytes for b in self._blocks)

    def find(self, address: int) -> Chunk | None:
        """The live chunk holding a device address, or None. Where no live chunk holds it,
        an address just past the end of a live allocation (a C++ end pointer) finds that
        allocation's chunk, whether or not the size filled its size class."""
        end_of = None
        with self._lock:
            for block in self._blocks:
                base = block.buffer.address
                if base <= address <= base + block.buffer.nbytes:
                    for c in block.chunks:
                        a = c.owner
                        if a is None:
                            continue
                        if c.address <= address < c.address + c.size:
                            return c
                        if a.address + a.nbytes == address:
                            end_of = c
        return end_of
