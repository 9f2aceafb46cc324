"""The process's standard output and error while a command runs: a reader that leaves early
(``atip-trust verify ... | grep -q VERIFIED``, ``| head -1``) is not an error of ours. The first write that
meets a closed pipe points the stream at the null device, and the command runs to its verdict, whose exit
code is the one returned; a full disk or another write error is still an error (exit 2). Used once, around
every command, by the one catch point (cli/common.py ``run``).
"""

from __future__ import annotations

import io
import os
import sys
from typing import Any


class PipeGuard(io.FileIO):
    """Standard output's (or error's) file descriptor, for which a reader that went away ends the
    output, not the command: on EPIPE the descriptor is pointed at the null device (so later writes,
    and the interpreter's final flush, succeed) and the write reports success. The exit code stays
    the verdict's whenever the reader leaves (docs/cli-guide.md: ``exec … 2>&1 | head -1`` is 1 for a
    refusal every time, not 2 when ``head`` happens to exit before the last reason line)."""

    reader_gone = False

    def write(self, data: Any) -> int:
        try:
            return super().write(data) or 0
        except BrokenPipeError:
            self.reader_gone = True
            to_devnull(self.fileno())
            return len(memoryview(data).cast("B"))


def to_devnull(fd: int) -> None:
    """Point ``fd`` at the null device: its later writes, and the interpreter's final flush, succeed."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, fd)
        finally:
            os.close(devnull)
    except OSError:
        pass


class GuardedStream:
    """Route the process's real standard output (``name="stdout"``) or error through ``PipeGuard``
    while a command runs.

    Only the interpreter's own stream is wrapped (tests that capture output into a buffer are left
    alone); encoding, error handler and line buffering stay as they were (standard error is line
    buffered, as Python's own). A class, so that ``__exit__`` restores the stream on every way out.
    """

    def __init__(self, name: str = "stdout") -> None:
        self.name = name

    def __enter__(self) -> None:
        self.original = original = getattr(sys, self.name)
        self.wrapped: io.TextIOWrapper | None = None
        try:
            own = getattr(sys, f"__{self.name}__")
            self.fd = original.fileno() if original is own and original is not None else -1
        except (AttributeError, ValueError, io.UnsupportedOperation):
            self.fd = -1
        if self.fd < 0:
            return
        original.flush()
        raw = PipeGuard(self.fd, "w", closefd=False)
        line_buffered = self.name == "stderr" or bool(getattr(original, "line_buffering", False))
        self.wrapped = io.TextIOWrapper(io.BufferedWriter(raw), encoding=original.encoding,
                                        errors=original.errors, line_buffering=line_buffered)
        setattr(sys, self.name, self.wrapped)

    def __exit__(self, *exc: object) -> None:
        wrapped = self.wrapped
        if wrapped is None:
            return
        setattr(sys, self.name, self.original)
        try:
            wrapped.flush()
        except (OSError, ValueError):
            # run() reported the failed write; what is still buffered is lost either way, so let it
            # go to the null device rather than fail again here or at the interpreter's exit.
            to_devnull(self.fd)
        try:
            wrapped.detach()
        except (OSError, ValueError):
            pass


__all__ = ["GuardedStream", "PipeGuard", "to_devnull"]
