"""Files of the ATIP repository that tests read where they live, ``../shared/reference/atip-examples/``
beside the checkout, instead of a copy kept in this repository (issue 27). A clone elsewhere on the
same machine (CI's) finds the folder by walking up, or at /work/shared."""

from __future__ import annotations

from pathlib import Path

import pytest

_ROOT = Path(__file__).resolve().parents[1]


def examples_dir() -> Path:
    candidates = [p / "shared" / "reference" / "atip-examples" for p in _ROOT.parents]
    candidates.append(Path("/work/shared/reference/atip-examples"))
    for c in candidates:
        if c.is_dir():
            return c
    return _ROOT.parent / "shared" / "reference" / "atip-examples"


def reference_example(name: str) -> Path:
    """``examples/NAME`` of the ATIP repository; the calling test is skipped, saying where it looked,
    when the file is absent."""
    path = examples_dir() / name
    if not path.is_file():
        pytest.skip(f"{name} of the ATIP repository not found at {path} (it lives in "
                    "../shared/reference/atip-examples/ beside the checkout)")
    return path


__all__ = ["examples_dir", "reference_example"]
