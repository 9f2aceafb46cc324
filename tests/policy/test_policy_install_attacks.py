"""``policy install --org`` runs as root on a release folder someone else may have prepared: a file of
the release that is a link would be read as root and published 0644 under /etc/atip-trust (here a
temporary folder standing in for it, tests/policy/test_policy_install.py's ``machine``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from atip_trust.cli.main import main

from test_policy_install import machine  # noqa: F401 - the fixture

SECRET = "root-only secret: the shadow file's line\n"


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    path = tmp_path / "shadow"
    path.write_text(SECRET)
    os.chmod(path, 0o600)
    return path


def _release(tmp_path: Path, trust: dict[str, object]) -> Path:
    work = tmp_path / "mallory-release"
    work.mkdir()
    (work / "policy.json").write_text(json.dumps({"version": 1, "trust": trust}))
    return work


def _published(etc: Path) -> list[str]:
    return [p.name for p in etc.rglob("*") if p.is_file() and SECRET in p.read_text(errors="replace")] \
        if etc.exists() else []


@pytest.mark.parametrize("trust", [{"publicKeys": [{"path": "k.pem"}]}, {"trustedRoots": [{"path": "k.pem"}]}],
                         ids=["public-key", "trusted-root"])
def test_an_anchor_that_links_to_a_root_only_file_is_not_published(
        machine: Path, tmp_path: Path, secret: Path, capsys: pytest.CaptureFixture[str],  # noqa: F811
        trust: dict[str, object]) -> None:
    work = _release(tmp_path, trust)
    os.symlink(secret, work / "k.pem")
    assert main(["policy", "install", "--org", str(work / "policy.json")]) == 2
    assert _published(machine) == []
    assert "link" in capsys.readouterr().err


def test_an_anchor_under_a_linked_folder_is_not_published(
        machine: Path, tmp_path: Path, secret: Path, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    work = _release(tmp_path, {"publicKeys": [{"path": "keys/shadow"}]})
    os.symlink(secret.parent, work / "keys")
    assert main(["policy", "install", "--org", str(work / "policy.json")]) == 2
    assert _published(machine) == []


def test_a_signature_companion_that_links_to_a_root_only_file_is_not_published(
        machine: Path, tmp_path: Path, secret: Path, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    """An unsigned release is copied with its ``.sig.json`` / ``.sigstore.json`` unread by any check."""
    work = _release(tmp_path, {})
    os.symlink(secret, work / "policy.json.sig.json")
    assert main(["policy", "install", "--org", str(work / "policy.json")]) == 2
    assert _published(machine) == []
