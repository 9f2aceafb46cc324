"""Where the tests find material that is not part of this repository (the interop bundles, the ATIP
repository's examples, slsa-verifier's test vector): ``../shared/`` beside the checkout's root, or the
folder ``ATIP_SHARED_DIR`` names (README, "Run the tests"). Nothing else is searched, and no machine's
absolute path is written here (tests/base/test_no_machine_paths.py): a test that needs an absent file
skips, saying where it looked."""

from __future__ import annotations

import os
from pathlib import Path

#: The environment variable that names the shared folder (default: ``../shared`` beside the checkout).
SHARED_ENV = "ATIP_SHARED_DIR"
REPO = Path(__file__).resolve().parents[1]


def shared_dir() -> Path:
    env = os.environ.get(SHARED_ENV)
    return Path(env) if env else REPO.parent / "shared"


def shared_path(*parts: str, env: str | None = None) -> Path:
    """``<shared>/parts…``; ``env``, when set in the environment, names that very folder instead."""
    override = os.environ.get(env) if env else None
    return Path(override) if override else shared_dir().joinpath(*parts)


def where(*parts: str, env: str | None = None) -> str:
    """For a skip message: the path looked at and how to point elsewhere."""
    extra = f" or {env}" if env else ""
    return f"{shared_path(*parts, env=env)} (../shared/{'/'.join(parts)} beside the checkout; set {SHARED_ENV}{extra})"


__all__ = ["REPO", "SHARED_ENV", "shared_dir", "shared_path", "where"]
