"""Shared test fixtures: paths, the interop folder, and the project's fixture generators on sys.path."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"

# The local test Sigstore and other fixture generators live in fixtures/ (CONTRACT.md layout).
if str(FIXTURES) not in sys.path:
    sys.path.insert(0, str(FIXTURES))

from interop_cases import find_interop  # noqa: E402

INTEROP = find_interop()


@pytest.fixture(scope="session")
def interop_dir() -> Path:
    if not (INTEROP / "index.json").is_file():
        pytest.skip(f"interop fixtures not found at {INTEROP} (they live in ../shared/fixtures/interop)")
    return INTEROP
