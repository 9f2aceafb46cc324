"""A hook that always answers: a large input is decided in a forked child, under limits, while this
process waits to answer whatever becomes of it (issue 32, item 8). Imported only for such an input.

An agent treats a hook that dies (SIGSEGV, SIGKILL, memory exhausted: exit 139, 137) as a non-blocking
error and runs the line: fail open. The parse is budgeted (agents/bash_syntax.py), but the answering
process must survive even what the budget does not foresee. So when the hook input is larger than
``cmd_hook.CHILD_BYTES`` the decision runs in a ``fork()`` of this process (no new interpreter: the modules are
already loaded) with its address space capped (:data:`CHILD_MEMORY` more than it starts with), and this
process reads its answer from a pipe until the deadline. A child that dies, exits without an answer or
outlives the deadline is killed and answered with a denial naming why, in the agent's format.

Ordinary lines (a few hundred bytes) are decided in this process: their parse is bounded by the budget
and their walk by the model's caps, and a fork would add its cost to every hook call (bench/hook.py).
"""

from __future__ import annotations

import json
import os
import resource
import select
import signal
import time
from collections.abc import Callable

from atip_trust.agents.formats import HookAnswer, render_error

#: Address space the child may use beyond what it starts with (the parse budget stays far below).
CHILD_MEMORY = 512 * 1024 * 1024
_READ = 65536


def answer_guarded(agent: str, decide: Callable[[], HookAnswer], deadline: float) -> HookAnswer:
    """``decide()``'s answer, decided in a child (module docstring). ``deadline``: a ``time.monotonic()``
    value after which the child is killed."""
    if not hasattr(os, "fork"):
        return decide()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: decide, write the answer, leave without running any cleanup of the parent's
        os.close(read_end)
        _child(agent, decide, write_end)
    os.close(write_end)
    data, timed_out = b"", True
    try:
        data, timed_out = _collect(read_end, deadline)
    finally:  # also when this process is interrupted (the hook's own --timeout alarm): no child is left
        os.close(read_end)
        status = _reap(pid, deadline if not timed_out else 0.0)
    if timed_out:
        return render_error(agent, "no answer in time: the decision process was stopped at the deadline "
                            "(--timeout)")
    if os.WIFSIGNALED(status):
        name = signal.Signals(os.WTERMSIG(status)).name
        return render_error(agent, f"the decision process died by {name} (its memory cap is "
                            f"{CHILD_MEMORY >> 20} MiB over its start: memory exhausted, or a crash)")
    try:
        stdout, stderr, code = json.loads(data)
        return HookAnswer(str(stdout), str(stderr), int(code))
    except (ValueError, TypeError):
        return render_error(agent, f"the decision process ended (exit status {os.waitstatus_to_exitcode(status)}) "
                            "without an answer")


def _child(agent: str, decide: Callable[[], HookAnswer], out: int) -> None:
    code = 70
    try:
        _cap_memory()
        try:
            result = decide()
        except Exception as err:  # noqa: BLE001 - a hook fails closed, in the agent's format
            result = render_error(agent, f"internal error in the decision process: {type(err).__name__}")
        payload = json.dumps([result.stdout, result.stderr, result.exit_code]).encode()
        while payload:
            payload = payload[os.write(out, payload):]
        code = 0
    finally:
        os._exit(code)  # anything else (MemoryError while answering): the parent answers for us


def _cap_memory() -> None:
    """Cap the child's address space at :data:`CHILD_MEMORY` over its start, never above a limit it
    was already given (``prlimit --as``), and never raising one (root could)."""
    current = _address_space()
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = current + CHILD_MEMORY
    if not current or (soft != resource.RLIM_INFINITY and soft <= cap):
        return
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))


def _address_space() -> int:
    """This process's virtual size in bytes (Linux /proc), or 0 when unknown (then no cap is set)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _collect(fd: int, deadline: float) -> tuple[bytes, bool]:
    """Everything the child writes until it closes the pipe; True when the deadline came first."""
    chunks: list[bytes] = []
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return b"", True
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            continue
        chunk = os.read(fd, _READ)
        if not chunk:
            return b"".join(chunks), False
        chunks.append(chunk)


def _reap(pid: int, until: float) -> int:
    """The child's wait status: it has closed the pipe and is exiting, so it is waited for until
    ``until`` (a ``time.monotonic()`` value), then killed (a deadline, or this process interrupted)."""
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        if time.monotonic() >= until:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            return os.waitpid(pid, 0)[1]
        time.sleep(0.001)  # between the pipe's end and the exit status: a few system calls


__all__ = ["CHILD_MEMORY", "answer_guarded"]
