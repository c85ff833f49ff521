"""A pure-Python model of PyTorch's CUDA caching allocator, for byte-exact memory predictions.

vLLM measures "model loading took X" as the growth of `torch.cuda.memory_allocated()`, which
sums *blocks*, not requested bytes: the caching allocator rounds every request and sometimes
hands out a whole cached block. Predicting the weights term to the byte therefore needs the
allocator's rules, replayed over the sequence of tensors vLLM creates. The rules below are
those of c10/cuda/CUDACachingAllocator.cpp (PyTorch 2.x, unchanged through 2.11):

- round_size: requests are rounded up to a multiple of 512 B (kMinBlockSize);
- requests <= 1 MiB (kSmallSize) come from the small pool, in 2 MiB segments (kSmallBuffer);
- a new large segment is 20 MiB (kLargeBuffer) for requests < 10 MiB (kMinLargeAlloc),
  otherwise the request rounded up to 2 MiB (kRoundLarge);
- the pool lookup takes the smallest cached block >= the request (lower_bound on size, then
  address) and gives up if that one block is refused: a request < max_split_size refuses an
  "oversize" block (>= max_split_size); a request >= max_split_size refuses a block that is
  >= request + 20 MiB;
- a found block is split when the remainder is >= 512 B (small pool) or, in the large pool,
  when the request is < max_split_size AND the remainder is > 1 MiB; otherwise the whole
  block is handed out and counted as allocated;
- a freed block merges with free neighbours of the same segment.

Not modelled (not needed for a single process loading weights): streams other than one,
expandable segments, garbage-collection thresholds, cudaMalloc failures and retries.
"""

from __future__ import annotations

import bisect
import itertools
from dataclasses import dataclass, field

from pytest_anatomy.units import MiB

K_MIN_BLOCK_SIZE = 512
K_SMALL_SIZE = 1 * MiB
K_SMALL_BUFFER = 2 * MiB
K_LARGE_BUFFER = 20 * MiB
K_MIN_LARGE_ALLOC = 10 * MiB
K_ROUND_LARGE = 2 * MiB
NO_MAX_SPLIT = 1 << 62  # PyTorch's default max_split_size is SIZE_MAX


def round_size(nbytes: int) -> int:
    """The allocator's rounding of a request (roundup_power2_divisions off, the default)."""
    if nbytes < K_MIN_BLOCK_SIZE:
        return K_MIN_BLOCK_SIZE
    return K_MIN_BLOCK_SIZE * -(-nbytes // K_MIN_BLOCK_SIZE)


def segment_size(rounded: int) -> int:
    """Size of the cudaMalloc'd segment a request gets when no cached block fits."""
    if rounded <= K_SMALL_SIZE:
        return K_SMALL_BUFFER
    if rounded < K_MIN_LARGE_ALLOC:
        return K_LARGE_BUFFER
    return K_ROUND_LARGE * -(-rounded // K_ROUND_LARGE)


@dataclass(eq=False)
class Block:
    """One block of a segment; `prev`/`next` link blocks of the same segment by address."""

    address: int
    size: int
    small: bool
    allocated: bool = False
    prev: Block | None = field(default=None, repr=False)
    next: Block | None = field(default=None, repr=False)


class CachingAllocatorModel:
    """Replays malloc/free like PyTorch's caching allocator and counts allocated bytes."""

    def __init__(self, max_split_size: int = NO_MAX_SPLIT) -> None:
        if max_split_size < K_LARGE_BUFFER and max_split_size != NO_MAX_SPLIT:
            raise ValueError(f"max_split_size {max_split_size} B is below PyTorch's minimum of 20 MiB")
        self.max_split_size = max_split_size
        self._free: dict[bool, list[tuple[int, int, int, Block]]] = {True: [], False: []}
        self._ids = itertools.count()
        self._next_address = 0
        self.allocated = 0  # allocated_bytes.all.current
        self.reserved = 0  # reserved_bytes.all.current (segments ever created; nothing is released)
        self.peak = 0

    def set_max_split_size(self, max_split_size: int) -> None:
        """vLLM scopes max_split_size_mb=20 around model loading (gpu_worker.load_model)."""
        self.max_split_size = max_split_size

    def malloc(self, nbytes: int) -> Block | None:
        """Allocate `nbytes`; a zero-byte request returns None (PyTorch returns a null pointer)."""
        if nbytes < 0:
            raise ValueError(f"cannot allocate {nbytes} bytes")
        if nbytes == 0:
            return None
        size = round_size(nbytes)
        small = size <= K_SMALL_SIZE
        block = self._take_cached(size, small)
        if block is None:
            seg = segment_size(size)
            block = Block(self._next_address, seg, small)
            self._next_address += seg
            self.reserved += seg
        remaining = block.size - size
        if small:
            split = remaining >= K_MIN_BLOCK_SIZE
        else:
            split = size < self.max_split_size and remaining > K_SMALL_SIZE
        if split:
            rest = Block(block.address + size, remaining, small, prev=block, next=block.next)
            if block.next is not None:
                block.next.prev = rest
            block.next = rest
            block.size = size
            self._insert(rest)
        block.allocated = True
        self.allocated += block.size
        self.peak = max(self.peak, self.allocated)
        return block

    def free(self, block: Block | None) -> None:
        if block is None:
            return
        if not block.allocated:
            raise ValueError("double free of a modelled block")
        block.allocated = False
        self.allocated -= block.size
        for neighbour in (block.prev, block.next):
            if neighbour is None or neighbour.allocated:
                continue
            self._remove(neighbour)
            if neighbour is block.prev:
                neighbour.size += block.size
                neighbour.next = block.next
                if block.next is not None:
                    block.next.prev = neighbour
                block = neighbour
            else:
                block.size += neighbour.size
                block.next = neighbour.next
                if neighbour.next is not None:
                    neighbour.next.prev = block
        self._insert(block)

    def _take_cached(self, size: int, small: bool) -> Block | None:
        pool = self._free[small]
        i = bisect.bisect_left(pool, (size, -1, -1))
        if i == len(pool):
            return None
        block = pool[i][3]
        if size < self.max_split_size <= block.size:
            return None  # do not hand an oversize block to a normal request
        if size >= self.max_split_size and block.size >= size + K_LARGE_BUFFER:
            return None  # do not hand a much larger oversize block to a large request
        pool.pop(i)
        return block

    def _insert(self, block: Block) -> None:
        bisect.insort(self._free[block.small], (block.size, block.address, next(self._ids), block))

    def _remove(self, block: Block) -> None:
        pool = self._free[block.small]
        for i, entry in enumerate(pool):
            if entry[3] is block:
                pool.pop(i)
                return
        raise AssertionError("free block missing from its pool")
