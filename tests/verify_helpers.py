"""Run ``atip-trust`` as a user would: in-process (fast) or as a subprocess (faithful).

In-process is the default for a test that needs only a verdict or an output: the same parser, the same
catch point and the same output as the console script (``cli.main.main``), with the process around it
made to look like a fresh ``python -m atip_trust`` child's: its own environment, working directory and
standard input (``/dev/null`` unless input is given, on descriptor 0 too, as ``stdin=DEVNULL`` gives a
child), and none of the memos an earlier call or test left in this process (``forget_process_state``).
A subprocess stays where the process itself is the subject: ``exec`` (it replaces the process), signals,
a terminal, resource limits, start-up cost, the installed wheel, a closed or full standard output.
"""

from __future__ import annotations

import faulthandler
import io
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TextIO

import atip_trust
from atip_trust.cli.main import command_of, main


@dataclass
class Run:
    code: int
    out: str
    err: str

    @property
    def json(self) -> Any:
        return json.loads(self.out)


#: What the product remembers per process, keyed by file identity, policy object or environment (a dict
#: or list is emptied, a functools cache cleared): a fresh child starts without any of it, so an
#: in-process run (and every test, conftest.py) starts without it too. Content-keyed caches (parsed trusted roots by digest, compiled schemas, sigstore
#: Verifiers by root digest) hold the same answer for every caller and are kept: they are what makes the
#: in-process suite fast. A memo that moves or is renamed fails here by name (AttributeError): update
#: this list rather than let a test inherit another test's state.
PROCESS_MEMOS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("atip_trust.admission.verdict_key", ("_OPEN", "_ARTIFACTS", "_EVIDENCE", "_REPORTS")),
    ("atip_trust.signature.trustroot", ("_ROOT_FILES", "_ROOTS")),
    ("atip_trust.admission.admit", ("_AUDIT_SETTINGS", "_MADE")),
    ("atip_trust.admission.agent_tools", ("_LAST",)),
    # The programs found on a PATH, keyed by the PATH text: a file added under it is not seen again.
    ("atip_trust.agents.identity", ("_INDEXES",)),
    # Keyed by ATIP_CACHE_DIR alone, but without it the answer follows XDG_CACHE_HOME and HOME.
    ("atip_trust.state.verdict_cache", ("_cache_dir",)),
)


def forget_process_state() -> None:
    """Empty every memo of ``PROCESS_MEMOS`` in the modules imported so far (one not imported holds none)."""
    for name, memos in PROCESS_MEMOS:
        module = sys.modules.get(name)
        if module is not None:
            for memo in memos:
                found = getattr(module, memo)
                found.cache_clear() if hasattr(found, "cache_clear") else found.clear()


#: ``sys.argv[0]`` of a ``python -m atip_trust`` child.
MAIN_FILE = os.path.join(os.path.dirname(atip_trust.__file__), "__main__.py")

#: Commands that never run in-process: ``exec`` replaces the calling process with the tool.
SUBPROCESS_ONLY = ("exec",)


@contextmanager
def _stdin(data: bytes | None) -> Iterator[None]:
    """Descriptor 0 and ``sys.stdin`` as a child's: ``/dev/null``, or a file holding ``data``."""
    saved_fd, saved_stdin = os.dup(0), sys.stdin
    with tempfile.TemporaryFile() if data is not None else open(os.devnull, "rb") as source:
        if data is not None:
            source.write(data)
            source.seek(0)
        os.dup2(source.fileno(), 0)
    try:
        sys.stdin = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)))
        yield
    finally:
        sys.stdin = saved_stdin
        os.dup2(saved_fd, 0)
        os.close(saved_fd)


@contextmanager
def _process(env: Mapping[str, str] | None, cwd: str | os.PathLike[str] | None) -> Iterator[None]:
    """This process's environment replaced by ``env`` (when given) and its directory by ``cwd``."""
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    try:
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        if cwd is not None:
            os.chdir(cwd)
        yield
    finally:
        os.chdir(saved_cwd)
        if env is not None:
            os.environ.clear()
            os.environ.update(saved_env)


def _stream() -> TextIO:
    return io.TextIOWrapper(io.BytesIO(), encoding=sys.__stdout__.encoding if sys.__stdout__ else "utf-8",
                            errors=sys.__stdout__.errors if sys.__stdout__ else "strict", newline="")


def _bytes(stream: TextIO) -> bytes:
    stream.flush()
    return stream.buffer.getvalue()  # type: ignore[attr-defined, no-any-return]


def _text(data: bytes) -> str:
    """As ``subprocess.run(text=True)`` decodes a child's output (universal newlines)."""
    return data.decode(sys.__stdout__.encoding if sys.__stdout__ else "utf-8").replace("\r\n", "\n") \
        .replace("\r", "\n")


def run_cli(argv: Sequence[str | bytes | os.PathLike[str]], *, env: Mapping[str, str] | None = None,
            cwd: str | os.PathLike[str] | None = None, input: str | bytes | None = None,
            text: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[Any]:
    """``subprocess.run([python, -m, atip_trust, *argv], capture_output=True, stdin=DEVNULL or input)``,
    in this process; ``exec`` (SUBPROCESS_ONLY) runs as a child. A call that hangs past ``timeout`` ends
    this process with every thread's traceback (faulthandler), as a child's timeout would fail the test."""
    words = [os.fsdecode(a) for a in argv]  # bytes as a child's sys.argv holds them
    if command_of(words) in SUBPROCESS_ONLY:
        return subprocess.run([sys.executable, "-m", "atip_trust", *words], capture_output=True, text=text,
                              timeout=timeout, cwd=cwd, env=None if env is None else dict(env),
                              input=input, stdin=subprocess.DEVNULL if input is None else None)
    data = input.encode() if isinstance(input, str) else input
    out, err = _stream(), _stream()
    forget_process_state()
    faulthandler.dump_traceback_later(timeout, exit=True, file=sys.__stderr__ or sys.stderr)
    try:
        with _process(env, cwd), _stdin(data):
            saved = sys.stdout, sys.stderr, sys.argv
            # As ``python -m atip_trust`` sets them (``hook --pin`` names its own program from sys.argv).
            sys.stdout, sys.stderr, sys.argv = out, err, [MAIN_FILE, *words]
            try:
                code = main(words)
            finally:
                sys.stdout, sys.stderr, sys.argv = saved
    finally:
        faulthandler.cancel_dump_traceback_later()
        forget_process_state()
    stdout, stderr = _bytes(out), _bytes(err)
    return subprocess.CompletedProcess(words, code, _text(stdout) if text else stdout,
                                       _text(stderr) if text else stderr)


def cli(*argv: str, env: Mapping[str, str] | None = None, cwd: str | os.PathLike[str] | None = None,
        input: str | bytes | None = None) -> Run:
    """In-process (``run_cli``): same parser, same catch point, same output as the console script; an
    ``env`` gets the run's private verdict cache unless it names one (``private_env``)."""
    p = run_cli(argv, env=private_env(None if env is None else dict(env)), cwd=cwd, input=input)
    return Run(p.returncode, p.stdout, p.stderr)


def private_env(env: dict[str, str] | None) -> dict[str, str] | None:
    """``env`` (None: inherit) with the test run's private verdict cache (conftest.py) unless it names
    its own: a test that hands a subprocess a minimal environment must not write the user's cache."""
    if env is None or "ATIP_CACHE_DIR" in env or "ATIP_CACHE_DIR" not in os.environ:
        return env
    return {**env, "ATIP_CACHE_DIR": os.environ["ATIP_CACHE_DIR"]}


def cli_subprocess(*argv: str, env: dict[str, str] | None = None, max_file_bytes: int | None = None) -> Run:
    """A child ``python -m atip_trust``, for a test whose subject is the process itself. ``max_file_bytes``:
    a file-size limit (RLIMIT_FSIZE) on the child, so that any write past it fails with EFBIG as on a full
    disk (works as root, where a read-only mode bit does not stop a write)."""
    def cap() -> None:
        import resource
        resource.setrlimit(resource.RLIMIT_FSIZE, (max_file_bytes, max_file_bytes))

    p = subprocess.run([sys.executable, "-m", "atip_trust", *argv], capture_output=True, text=True,
                       timeout=120, stdin=subprocess.DEVNULL, env=private_env(env),
                       preexec_fn=cap if max_file_bytes is not None else None)
    return Run(p.returncode, p.stdout, p.stderr)
