"""Run ``atip-trust`` as a user would, in-process (fast) or as a subprocess (faithful)."""

from __future__ import annotations

import io
import json
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


def cli_subprocess(*argv: str, env: dict[str, str] | None = None) -> Run:
    p = subprocess.run([sys.executable, "-m", "atip_trust", *argv], capture_output=True, text=True,
                       timeout=120, stdin=subprocess.DEVNULL, env=env)
    return Run(p.returncode, p.stdout, p.stderr)
