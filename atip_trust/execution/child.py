"""Run a verified artifact as a bounded child process: the bytes that were hashed, and nothing more.

``run_verified`` executes the artifact's own open descriptor (``Artifact.exec_fd``): the child is
started as ``/proc/self/fd/N`` with only that descriptor passed, so the kernel loads the file the
descriptor names, whatever the path holds by now (principle 6: verify the bytes you run). A ``#!``
script is not loaded by the kernel but read by its interpreter, lazily, by that name: it is run from a
sealed copy of its verified bytes instead (``Artifact.sealed_copy``), so a rewrite of the file in
place while it runs changes nothing (issue 22). Where ``/proc/self/fd`` does not exist the run is
refused, never done through the path.

The child gets no standard input (``/dev/null``), a scrubbed environment (``minimal_env``), its own
session and process group (``start_new_session``), and a deadline. Its standard output and error are
read together, each up to ``max_output`` bytes: past the cap, or past the deadline, the whole process
group is killed with SIGKILL. When the child itself exits, its group is killed too before the pipes are
drained, so a grandchild it left behind (a daemon holding the pipe open) neither outlives the run nor
stalls it. The group is signalled while the child is still an unreaped zombie, so its process group ID
cannot have been reused by then. A descendant that leaves the group on purpose (``setsid``) escapes
this; containing that needs a cgroup or a PID namespace, which is the sandbox's job, not this module's.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

from atip_trust._base.record import Record, replace
from atip_trust.errors import EnvironmentFailure, UsageError
from atip_trust.execution.sandbox import Boundary, Prepared, arrange, attempt_seen, enter
from atip_trust.facts.artifact import Artifact

#: Where a process finds its own descriptors by path (Linux; also mounted on most container runtimes).
PROC_FD = "/proc/self/fd"
_READ = 65536
#: How often the child's exit is checked where there is no pidfd to wait on.
_POLL = 0.02
#: After the group is killed, how long the pipes may take to report end of file.
_DRAIN = 1.0


def minimal_env() -> dict[str, str]:
    """The environment a verified tool runs with when the caller gives none: a fixed PATH of system
    directories and the C locale; nothing of the caller's (tokens, proxies, ``LD_PRELOAD``)."""
    return {"PATH": "/usr/bin:/bin", "LANG": "C"}


class RunResult(Record):
    """What a bounded run produced. ``exit_code`` is None when a signal ended the child (``signal``)."""

    exit_code: int | None
    signal: int | None
    stdout: bytes
    stderr: bytes
    #: Output passed ``max_output`` and the group was killed; the bytes kept stop at the cap.
    truncated: bool
    #: The deadline passed and the group was killed.
    timed_out: bool
    seconds: float
    #: The boundary it ran in (execution/sandbox.py ``arrange``'s record), None when none was asked for.
    sandbox: dict[str, Any] | None = None
    #: What the tool tried outside its boundary (``sandbox.attempt_seen``), None when nothing was seen.
    violation: str | None = None

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.truncated and not self.timed_out


def proc_fd_available() -> bool:
    return os.path.isdir(PROC_FD)


def run_verified(
    artifact: Artifact,
    args: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    timeout: float,
    max_output: int,
    argv0: str | None = None,
    keep_fds: Sequence[int] = (),
    boundary: Boundary | None = None,
    sandbox_mode: str = "off",
) -> RunResult:
    """Run ``artifact`` (open, verified) with ``args``; see the module docstring for the bounds.

    ``keep_fds``: more descriptors the child inherits (a verified ``#!`` script's sealed copy,
    execution/exec.py ``sealed_script``, which its verified interpreter reads at ``/dev/fd/N``); nothing
    else is passed. ``boundary``: the walls it runs inside under ``sandbox_mode`` (execution/sandbox.py
    ``arrange``: raises ``SandboxUnavailable`` under ``required`` when they cannot be built).

    Raises ``EnvironmentFailure`` when the descriptor cannot be executed by path (no ``/proc/self/fd``)
    or the child cannot be started, and ``ArtifactAccessError`` (from ``exec_fd``) when the file changed
    since it was verified.
    """
    if timeout <= 0 or max_output < 0:
        raise UsageError(f"run_verified needs a positive timeout and a byte cap, got {timeout}, {max_output}")
    if not proc_fd_available():
        raise EnvironmentFailure(f"{PROC_FD} is not available: the verified descriptor cannot be "
                                 "executed, and the path is never run instead", path=artifact.path)
    prepared, record = arrange(boundary, sandbox_mode)
    try:
        res = _start(artifact, args, env, timeout, max_output, argv0, keep_fds, prepared)
    finally:
        if prepared is not None:
            prepared.close()
    if record is None:
        return res
    seen = attempt_seen(boundary, res.exit_code, res.signal, res.stderr) \
        if prepared is not None and boundary is not None else None
    return replace(res, sandbox=record, violation=seen)


def _start(artifact: Artifact, args: Sequence[str], env: Mapping[str, str] | None, timeout: float,
           max_output: int, argv0: str | None, keep_fds: Sequence[int], prepared: Prepared | None) -> RunResult:
    fd = artifact.exec_fd()
    # The kernel reads the #! line from the copy and hands its interpreter /proc/self/fd/N: the copy.
    sealed = artifact.sealed_copy(artifact.sha256, executable=True) if os.pread(fd, 2, 0) == b"#!" else -1
    run_fd = sealed if sealed >= 0 else fd
    start = time.monotonic()
    deadline = start + timeout
    try:
        proc = subprocess.Popen(
            [argv0 or os.path.basename(artifact.path), *args], executable=f"{PROC_FD}/{run_fd}",
            pass_fds=(run_fd, *keep_fds), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, env=_child_env(env, prepared), start_new_session=True,
            close_fds=True, cwd="/", preexec_fn=None if prepared is None else partial(enter, prepared),
        )
    except (OSError, subprocess.SubprocessError) as err:  # SubprocessError: entering the boundary failed
        raise EnvironmentFailure(f"cannot start the verified tool: {getattr(err, 'strerror', None) or err}",
                                 path=artifact.path) from err
    finally:
        if sealed >= 0:
            os.close(sealed)  # the child has its own
    try:
        return _supervise(proc, deadline, start, max_output)
    finally:
        _kill_group(proc)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
        try:
            proc.wait(timeout=_DRAIN)
        except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL was sent; the kernel reaps
            pass


def _child_env(env: Mapping[str, str] | None, prepared: Prepared | None) -> dict[str, str]:
    base = minimal_env() if env is None else env
    return prepared.env(base) if prepared is not None else dict(base)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _exited_unreaped(pid: int) -> bool:
    """True when the child has exited; it is left a zombie (``WNOWAIT``) so its group ID stays ours."""
    try:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return info is not None


def _supervise(proc: subprocess.Popen[bytes], deadline: float, start: float, cap: int) -> RunResult:
    assert proc.stdout is not None and proc.stderr is not None
    bufs: dict[int, bytearray] = {proc.stdout.fileno(): bytearray(), proc.stderr.fileno(): bytearray()}
    sel = selectors.DefaultSelector()
    for stream in (proc.stdout, proc.stderr):
        os.set_blocking(stream.fileno(), False)
        sel.register(stream.fileno(), selectors.EVENT_READ)
    pidfd = -1
    if hasattr(os, "pidfd_open"):
        try:
            pidfd = os.pidfd_open(proc.pid)
            sel.register(pidfd, selectors.EVENT_READ)
        except OSError:
            pidfd = -1
    truncated = timed_out = exited = False
    open_pipes = set(bufs)
    drain_until: float | None = None
    try:
        while True:
            if not exited and pidfd < 0:
                exited = _exited_unreaped(proc.pid)
            if exited and drain_until is None:
                # The child is gone (still unreaped): its group goes with it, then the pipes drain.
                _kill_group(proc)
                drain_until = time.monotonic() + _DRAIN
            if exited and not open_pipes:
                break
            now = time.monotonic()
            limit = drain_until if drain_until is not None else deadline
            if now >= limit:
                timed_out = drain_until is None
                break
            wait = limit - now if pidfd >= 0 and not exited else min(limit - now, _POLL)
            for key, _ in sel.select(wait):
                if key.fd == pidfd:
                    sel.unregister(pidfd)
                    exited = True
                    continue
                try:
                    block = os.read(key.fd, _READ)
                except BlockingIOError:
                    continue
                if not block:
                    sel.unregister(key.fd)
                    open_pipes.discard(key.fd)
                    continue
                buf = bufs[key.fd]
                room = cap - len(buf)
                buf += block[:max(room, 0)]
                if len(block) > room:
                    truncated = True
            if truncated:
                break
    finally:
        sel.close()
        if pidfd >= 0:
            os.close(pidfd)
    _kill_group(proc)
    try:
        rc = proc.wait(timeout=_DRAIN)
    except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL cannot be ignored
        rc = None
    code = rc if rc is not None and rc >= 0 else None
    sig = -rc if rc is not None and rc < 0 else None
    return RunResult(exit_code=None if (timed_out or truncated) else code, signal=sig,
                     stdout=bytes(bufs[proc.stdout.fileno()]), stderr=bytes(bufs[proc.stderr.fileno()]),
                     truncated=truncated, timed_out=timed_out, seconds=time.monotonic() - start)


__all__ = ["PROC_FD", "RunResult", "minimal_env", "proc_fd_available", "run_verified"]
