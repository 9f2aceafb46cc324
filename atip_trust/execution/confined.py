"""``atip-trust exec`` inside a boundary: the tool runs as a child so that a broken declaration is seen.

Unconfined, ``exec`` replaces itself with the tool (execution/exec.py). With a boundary
(execution/sandbox.py), it forks instead: the child enters the boundary and ``execve``\\ s the verified
descriptor; the parent copies the child's standard error through (keeping the last ``TAIL`` bytes, which
is where a refused operation shows: ``sandbox.attempt_seen``), waits, and then either ends with the
tool's own status or reports ``EFFECT_VIOLATION``. Standard input and output are the tool's own, as
with a plain exec; standard error is a pipe (a tool that colours a terminal may not colour it).

While it waits the parent ignores SIGINT and SIGQUIT, as system(3) does: the terminal sends them to the
whole foreground group, the tool included, and the parent must live to report. SIGTERM and SIGHUP sent
to the parent are passed on to the tool.
"""

from __future__ import annotations

import os
import signal

from atip_trust.execution.sandbox import Prepared, enter

#: How much of the tool's standard error is kept to look for a refused operation.
TAIL = 64 * 1024
#: The child's exit when it could not enter the boundary or execute (as a shell's "cannot execute").
EXIT_CANNOT_ENTER = 126


def run_confined(prepared: Prepared, fd: int, argv: list[str], env: dict[str, str],
                 timeout_ms: int | None = None) -> tuple[int, bytes]:
    """Run the verified descriptor ``fd`` inside ``prepared``; returns (exit code as
    ``os.waitstatus_to_exitcode`` gives it: negative for a signal, the tail of its standard error).
    ``timeout_ms``: AIP-14's hard ceiling, an interval timer set in the child (SIGALRM ends it)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child; its behaviour is what the tests observe
        _child(prepared, fd, argv, env, r, w, timeout_ms)
    os.close(w)
    passed = {s: signal.signal(s, lambda sig, _f: _forward(pid, sig)) for s in (signal.SIGTERM, signal.SIGHUP)}
    ignored = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGQUIT)}
    tail = bytearray()
    try:
        while True:
            try:
                block = os.read(r, 65536)
            except InterruptedError:
                continue
            if not block:
                break
            _write_through(block)
            tail += block
            del tail[:-TAIL]
        while True:
            try:
                _, status = os.waitpid(pid, 0)
                break
            except InterruptedError:
                continue
    finally:
        os.close(r)
        for sig, old in [*passed.items(), *ignored.items()]:
            signal.signal(sig, old)
    return os.waitstatus_to_exitcode(status), bytes(tail)


def _child(prepared: Prepared, fd: int, argv: list[str], env: dict[str, str], r: int, w: int,
           timeout_ms: int | None) -> None:
    try:
        os.close(r)
        os.dup2(w, 2)
        os.close(w)
        for sig in (signal.SIGINT, signal.SIGQUIT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        enter(prepared)
        if timeout_ms is not None:
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
            signal.setitimer(signal.ITIMER_REAL, timeout_ms / 1000)
        os.execve(fd, argv, env)
    except BaseException as err:  # noqa: BLE001 - nothing may return into the parent's code
        try:
            os.write(2, f"atip-trust: cannot run the tool inside its boundary: {err}\n".encode())
        finally:
            os._exit(EXIT_CANNOT_ENTER)


def _forward(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _write_through(block: bytes) -> None:
    view = memoryview(block)
    while view:
        try:
            n = os.write(2, view)
        except InterruptedError:
            continue
        except OSError:
            return  # our own stderr is gone: the tool's output is still kept for the check
        view = view[n:]


__all__ = ["EXIT_CANNOT_ENTER", "TAIL", "run_confined"]
