"""Trusted-root validity windows are closed intervals [start, end] (protobuf-specs TimeRange), exactly:
a time equal to ``end`` is inside, one microsecond later is outside. sigstore-python 4.5.1 compares a
TSA timestamp with ``< end``; trustroot._closed_tsa_windows corrects that without widening it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from atip_trust.signature.trustroot import TrustRoot

from verify_helpers import run_cli

CASE = "conformance-trust-root-tsa-validity-end-inclusive"
IDENTITY = ("https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/"
            ".github/workflows/extremely-dangerous-oidc-beacon.yml@refs/heads/main")
ISSUER = "https://token.actions.githubusercontent.com"
#: The RFC 3161 genTime of the case's timestamp (its README, `openssl ts -reply -text`).
GEN_TIME = "2025-06-12T12:02:20Z"


def _verify(case: Path, root: Path) -> subprocess.CompletedProcess[str]:
    return run_cli(["verify", str(case / "a.txt"), "--bundle", str(case / "bundle.sigstore.json"),
                    "--trusted-root", str(root), "--certificate-identity", IDENTITY,
                    "--certificate-oidc-issuer", ISSUER, "--format", "json"])


def _root_with_tsa_end(case: Path, tmp_path: Path, end: str) -> Path:
    doc = json.loads((case / "trusted_root.json").read_text())
    doc["timestampAuthorities"][0]["validFor"]["end"] = end
    out = tmp_path / "trusted_root.json"
    out.write_text(json.dumps(doc))
    return out


@pytest.fixture
def case(interop_dir: Path) -> Path:
    path = interop_dir / CASE
    if not path.is_dir():
        pytest.skip(f"interop case {CASE} absent")
    return path


def test_timestamp_equal_to_tsa_validity_end_is_inside(case: Path) -> None:
    root = json.loads((case / "trusted_root.json").read_text())
    assert root["timestampAuthorities"][0]["validFor"]["end"] == GEN_TIME  # the case's premise
    proc = _verify(case, case / "trusted_root.json")
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert json.loads(proc.stdout)["trust_level"] == "VERIFIED"


def test_timestamp_one_microsecond_after_tsa_validity_end_is_refused(case: Path, tmp_path: Path) -> None:
    root = _root_with_tsa_end(case, tmp_path, "2025-06-12T12:02:19.999999Z")
    proc = _verify(case, root)
    assert proc.returncode == 1, proc.stdout[-2000:]
    out = json.loads(proc.stdout)
    assert out["trust_level"] != "VERIFIED"
    assert out["decision"]["behavior"] == "deny"


def test_closed_window_adjustment_touches_only_tsa_ends_and_keeps_reported_digest(case: Path) -> None:
    raw = (case / "trusted_root.json").read_bytes()
    root = TrustRoot.from_bytes(raw, name="case")
    from atip_trust.signature.trustroot import _closed_tsa_windows

    adjusted = json.loads(_closed_tsa_windows(raw))
    original = json.loads(raw)
    assert adjusted["timestampAuthorities"][0]["validFor"]["end"] == "2025-06-12T12:02:20.000001Z"
    adjusted["timestampAuthorities"][0]["validFor"]["end"] = GEN_TIME
    assert adjusted == original  # nothing else moved
    root.sigstore_trusted_root()  # sigstore accepts the adjusted document
    import hashlib

    assert root.digest == "sha256:" + hashlib.sha256(raw).hexdigest()
