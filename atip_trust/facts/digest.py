"""The ``Digest`` value type and streaming hashing from a file descriptor.

A digest is an algorithm plus bytes, never a bare hex string (practice 7). Comparison is
constant-time. The text form is ``<algorithm>:<lowercase hex>``, the form ATIP uses for
``binary.hash`` and ``trust.integrity.checksum`` (RFC §3.2.2, §4.5).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from typing import TYPE_CHECKING

from atip_trust._base.lazy import lazy_import
from atip_trust._base.limits import LIMITS
from atip_trust._base.record import Record
from atip_trust.errors import ArtifactAccessError, MalformedInputError

if TYPE_CHECKING:
    import hmac
    import queue
    import threading
    from typing import Any, Literal

    Algorithm = Literal["sha256", "sha512"]
else:
    hmac = lazy_import("hmac")  # only when two digests are compared (in constant time)
    queue = lazy_import("queue")  # only a large file is hashed with a reader thread (_hash_overlapped)
    threading = lazy_import("threading")  # (with queue)

ALGORITHMS: tuple[Algorithm, ...] = ("sha256", "sha512")
_HEX_LEN = {"sha256": 64, "sha512": 128}
_LOWER_HEX = "0123456789abcdef"


class Digest(Record):
    """A hash value: algorithm and raw bytes."""

    algorithm: Algorithm
    value: bytes

    def __post_init__(self) -> None:
        algorithm, value = self.algorithm, self.value
        if algorithm not in _HEX_LEN:
            raise MalformedInputError(f"unsupported digest algorithm {algorithm!r}")
        if len(value) * 2 != _HEX_LEN[algorithm]:
            raise MalformedInputError(
                f"{algorithm} digest must be {_HEX_LEN[algorithm] // 2} bytes, got {len(value)}"
            )

    @property
    def hex(self) -> str:
        return self.value.hex()

    def __str__(self) -> str:
        return f"{self.algorithm}:{self.hex}"

    def __repr__(self) -> str:
        return f"Digest({self})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Digest):
            return NotImplemented
        # Constant-time on the bytes; the algorithm is public.
        return self.algorithm == other.algorithm and hmac.compare_digest(self.value, other.value)

    def __hash__(self) -> int:
        return hash((self.algorithm, self.value))

    @classmethod
    def parse(cls, text: str) -> Digest:
        """Parse ``sha256:<64 lowercase hex>`` or ``sha512:<128 lowercase hex>``.

        Uppercase hex and short or long values are refused rather than normalised: a shim's
        ``binary.hash`` is a lookup key (RFC §4.1), and two spellings of one key are a confusion risk.
        """
        # ``(sha256|sha512):([0-9a-f]+)`` in full, by string methods: compiling that pattern was a
        # measurable part of a cache-hit admission's start-up (docs/adr/0001-start-up.md).
        alg, colon, hx = text.partition(":") if isinstance(text, str) else ("", "", "")
        if alg not in _HEX_LEN or not colon or not hx or hx.strip(_LOWER_HEX):
            raise MalformedInputError(
                f"expected '<sha256|sha512>:<lowercase hex>', got {text!r:.100}"
            )
        if len(hx) != _HEX_LEN[alg]:
            raise MalformedInputError(
                f"{alg} digest must have {_HEX_LEN[alg]} hex digits, got {len(hx)}"
            )
        return cls(alg, bytes.fromhex(hx))  # type: ignore[arg-type]

    @classmethod
    def from_hex(cls, algorithm: str, hexvalue: str) -> Digest:
        return cls.parse(f"{algorithm}:{hexvalue}")


def hash_fd(
    fd: int, algorithms: Iterable[Algorithm] = ("sha256",), *, chunk: int = LIMITS.hash_chunk,
    overlap: bool = True,
) -> dict[Algorithm, Digest]:
    """Stream the whole file behind ``fd`` (from offset 0, with pread) through each algorithm.

    ``pread`` leaves the descriptor's offset alone, so the same descriptor can later be hashed again or
    executed. Memory is bounded by two ``chunk``-sized buffers reused for every read. For files of more
    than a few chunks, one thread reads the next chunk while this one hashes the last (both release the
    GIL), so the copy out of the page cache overlaps the hashing: this is what brings throughput to
    OpenSSL's own figure (bench/hash.py). Small files take the plain loop, without a thread, and so
    does every file with ``overlap=False``: a caller already hashing several files on both cores
    (``hash`` of many files) gains nothing from a reader thread per file, which then only competes
    for the same cores (bench/run.py ``usrbin``).
    """
    if chunk < 1:
        raise ValueError("chunk must be positive")
    algs = list(dict.fromkeys(algorithms))
    for a in algs:
        if a not in _HEX_LEN:
            raise MalformedInputError(f"unsupported digest algorithm {a!r}")
    try:
        size_hint = os.fstat(fd).st_size
    except OSError as err:
        raise ArtifactAccessError(f"cannot stat: {err.strerror}") from err
    hashers = [hashlib.new(a) for a in algs]
    if overlap and size_hint > 4 * chunk:
        _hash_overlapped(fd, hashers, chunk)
    else:
        # The plain loop reads at most SIMPLE_CHUNK at a time: a buffer that stays in the core's cache
        # between the copy out of the page cache and the hashing (1 MiB buffers made hashing /usr/bin
        # ~25% slower, bench/run.py ``usrbin``). A small file gets a buffer its own size (at least
        # 4 KiB): a 5 KiB bundle need not zero a larger buffer first (that cost more than hashing it);
        # a larger one a reused full-size buffer. A file that grows meanwhile is still read to its
        # end, in more reads.
        step = min(chunk, SIMPLE_CHUNK)
        _hash_simple(fd, hashers, step if size_hint > step // 4 else max(size_hint, 4096))
    return {a: Digest(a, h.digest()) for a, h in zip(algs, hashers)}


#: The plain loop's read size (see hash_fd); the overlapped one reads ``chunk`` (LIMITS.hash_chunk).
SIMPLE_CHUNK = 256 * 1024

#: Full-size read buffers kept for reuse: allocating (and zeroing) a fresh 1 MiB buffer per file was a
#: third of the time of hashing /usr/bin (bench/run.py ``usrbin``). ``list.pop``/``append`` are atomic,
#: so threads hashing at once each take their own; at most ``_POOLED`` are kept.
_FREE: list[bytearray] = []
_POOLED = 4


def _hash_simple(fd: int, hashers: list[Any], chunk: int) -> None:
    pooled = chunk == SIMPLE_CHUNK
    buf = (_FREE.pop() if _FREE else bytearray(chunk)) if pooled else bytearray(chunk)
    offset = 0
    try:
        with memoryview(buf) as view:
            while True:
                try:
                    n = os.preadv(fd, [buf], offset)
                except OSError as err:
                    raise ArtifactAccessError(f"read failed at offset {offset}: {err.strerror}") from err
                if n == 0:
                    return
                with view[:n] as part:
                    for h in hashers:
                        h.update(part)
                offset += n
    finally:
        if pooled and len(_FREE) < _POOLED:
            _FREE.append(buf)


def _hash_overlapped(fd: int, hashers: list[Any], chunk: int) -> None:
    """Double buffering: a reader thread fills one buffer while the caller hashes the other.

    The reader reads until end of file (a read of 0 bytes), whatever the size was at fstat time, so a
    file that grows or shrinks meanwhile is hashed exactly as the reads saw it, as in the simple loop.
    """
    bufs = [bytearray(chunk), bytearray(chunk)]
    free: queue.SimpleQueue[int] = queue.SimpleQueue()
    full: queue.SimpleQueue[tuple[int, int] | tuple[int, OSError]] = queue.SimpleQueue()
    for i in range(len(bufs)):
        free.put(i)

    def reader() -> None:
        offset = 0
        while True:
            i = free.get()
            if i < 0:  # the consumer stopped early
                return
            try:
                n = os.preadv(fd, [bufs[i]], offset)
            except OSError as err:
                full.put((offset, err))
                return
            full.put((i, n))
            if n == 0:
                return
            offset += n

    thread = threading.Thread(target=reader, name="atip-trust-hash-reader", daemon=True)
    thread.start()
    try:
        while True:
            i, got = full.get()
            if isinstance(got, OSError):
                raise ArtifactAccessError(
                    f"read failed at offset {i}: {got.strerror}"
                ) from got
            if got == 0:
                return
            with memoryview(bufs[i]) as view, view[:got] as part:
                for h in hashers:
                    h.update(part)
            free.put(i)
    finally:
        free.put(-1)
        thread.join()


def hash_bytes(data: bytes, algorithm: Algorithm = "sha256") -> Digest:
    return Digest(algorithm, hashlib.new(algorithm, data).digest())


__all__ = ["Algorithm", "ALGORITHMS", "Digest", "hash_fd", "hash_bytes"]
