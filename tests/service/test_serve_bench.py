"""bench/serve.py's smoke run: every figure it promises is printed (no timing is asserted)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.bench
def test_serve_bench_prints_latency_memory_and_thin_client_figures() -> None:
    p = subprocess.run([sys.executable, str(ROOT / "bench" / "serve.py"), "--requests", "32"], cwd=ROOT,
                       capture_output=True, text=True, timeout=1200, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr[-2000:]
    for figure in ("http hook   1 clients", "http hook  16 clients", "/v1/admit   1 clients", "/v1/admit  16 clients",
                   "resident set after", "thin client"):
        assert figure in p.stdout, p.stdout
