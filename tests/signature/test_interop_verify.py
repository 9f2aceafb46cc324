"""Interop: every real bundle in ../shared/fixtures/interop agrees with its producer's declared outcome,
run through the CLI as a user would (see interop_cases.py). Skips cleanly when the folder is absent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import INTEROP
from interop_cases import GITHUB_ROOT, build, load_rows
from verify_helpers import run_cli

ROWS = load_rows(INTEROP) if (INTEROP / "index.json").is_file() else []

#: Known disagreements, each with its reason. strict=True: the day one starts agreeing, the test fails
#: and this list must shrink.
KNOWN: dict[str, str] = {}


def _param(row: dict) -> object:
    reason = KNOWN.get(row["case"])
    marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
    return pytest.param(row, id=row["case"], marks=marks)


@pytest.mark.skipif(not ROWS, reason=f"interop fixtures absent at {INTEROP}")
@pytest.mark.parametrize("row", [_param(r) for r in ROWS])
def test_interop_case_agrees_with_declared_outcome(row: dict, interop_dir: Path, tmp_path: Path) -> None:
    case = build(row, interop_dir, tmp_path)
    proc = run_cli([*case.argv, "--format", "json"])  # in-process, as a fresh child would run it
    assert "Traceback" not in proc.stderr, proc.stderr
    out = json.loads(proc.stdout)
    if case.expect_ok:
        assert proc.returncode == 0, f"declared {case.note!r}; got {proc.returncode}: {proc.stdout[-3000:]}"
        assert out["trust_level"] == "VERIFIED"
    else:
        assert proc.returncode in (1, 2), f"declared {case.note!r} but exit {proc.returncode}"
        assert out["decision"]["behavior"] == "deny"
        if GITHUB_ROOT in case.note:
            assert "GitHub" in proc.stdout + proc.stderr, "must name the missing GitHub trusted root"
