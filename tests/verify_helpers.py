"""Run ``atip-trust`` as a user would, in-process (fast) or as a subprocess (faithful)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from typing import Any

from atip_trust.cli.main import main


@dataclass
class Run:
    code: int
    out: str
    err: str

    @property
    def json(self) -> Any:
        return json.loads(self.out)


def cli(*argv: str) -> Run:
    """In-process: same parser, same catch point, same output as the console script."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return Run(code, out.getvalue(), err.getvalue())


def private_env(env: dict[str, str] | None) -> dict[str, str] | None:
    """``env`` (None: inherit) with the test run's private verdict cache (conftest.py) unless it names
    its own: a test that hands a subprocess a minimal environment must not write the user's cache."""
    if env is None or "ATIP_CACHE_DIR" in env or "ATIP_CACHE_DIR" not in os.environ:
        return env
    return {**env, "ATIP_CACHE_DIR": os.environ["ATIP_CACHE_DIR"]}


def cli_subprocess(*argv: str, env: dict[str, str] | None = None, max_file_bytes: int | None = None) -> Run:
    """The console script in a child process. ``max_file_bytes``: a file-size limit (RLIMIT_FSIZE) on
    the child, so that any write past it fails with EFBIG as on a full disk (works as root, where a
    read-only mode bit does not stop a write)."""
    def cap() -> None:
        import resource
        resource.setrlimit(resource.RLIMIT_FSIZE, (max_file_bytes, max_file_bytes))

    p = subprocess.run([sys.executable, "-m", "atip_trust", *argv], capture_output=True, text=True,
                       timeout=120, stdin=subprocess.DEVNULL, env=private_env(env),
                       preexec_fn=cap if max_file_bytes is not None else None)
    return Run(p.returncode, p.stdout, p.stderr)
