"""Files of the ATIP repository that tests read where they live, ``../shared/reference/atip-examples/``
beside the checkout (or under ``ATIP_SHARED_DIR``), instead of a copy kept in this repository (issue 27)."""

from __future__ import annotations

from pathlib import Path

import pytest

from shared_material import shared_path, where


def examples_dir() -> Path:
    return shared_path("reference", "atip-examples")


def reference_example(name: str) -> Path:
    """``examples/NAME`` of the ATIP repository; the calling test is skipped, saying where it looked,
    when the file is absent."""
    path = examples_dir() / name
    if not path.is_file():
        pytest.skip(f"{name} of the ATIP repository not found in {where('reference', 'atip-examples')}")
    return path


__all__ = ["examples_dir", "reference_example"]
