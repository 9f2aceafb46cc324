"""The bench suite's smoke run (bench/run.py --quick, also ``python -m bench``): every figure is measured
and printed next to its same-run reference as a ratio. No timing is asserted: speed is read from the
figures, never decided by a test on a shared machine."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIGURES = ("hash", "admit", "verify", "decide", "batch", "usrbin", "rss")


@pytest.mark.bench
def test_quick_bench_prints_every_figure_as_a_ratio(tmp_path: Path) -> None:
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    p = subprocess.run([sys.executable, "-m", "bench", "--quick"], cwd=ROOT, capture_output=True,
                       text=True, timeout=900, stdin=subprocess.DEVNULL, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    rows = [ln for ln in p.stdout.splitlines() if re.search(r"ratio +[0-9.]+x", ln)]
    labels = " ".join(rows)
    for needle in ("hash 32 MiB", "admit, warm", "python -m sigstore", "python -c pass",
                   "verify in-process", "decide()", "admit(), cache hit", "held tool, a call",
                   "admit(), cache hit, strict", "held tool, a call, strict", "batch of 40",
                   "/usr/bin executables", "peak RSS"):
        assert needle in labels, p.stdout
    assert not list(tmp_path.iterdir()), "the bench left files behind"
