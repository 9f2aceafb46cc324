"""The committed local-Sigstore fixtures (fixtures/sigstore/manifest.json) through ``atip-trust verify``:
every good bundle verifies, every bad variant (one mutation each) is denied with exit 1."""

from __future__ import annotations

import json

import pytest

from conftest import FIXTURES
from verify_helpers import cli

SIG = FIXTURES / "sigstore"
MANIFEST = json.loads((SIG / "manifest.json").read_text())
BUNDLES = [f for f in MANIFEST["files"] if f["kind"] in ("message", "dsse", "intoto", "key")]


@pytest.mark.parametrize("entry", BUNDLES, ids=[f["file"] for f in BUNDLES])
def test_committed_fixture_bundle_gets_its_expected_outcome(entry: dict) -> None:
    argv = ["verify", str(SIG / entry["artifact"]), "--bundle", str(SIG / entry["file"]),
            "--trusted-root", str(SIG / MANIFEST["trusted_root"]), "--format", "json"]
    if entry.get("key"):
        argv += ["--key", str(SIG / entry["key"])]
    else:
        argv += ["--certificate-identity", entry["identity"], "--certificate-oidc-issuer", entry["issuer"]]
    r = cli(*argv)
    assert "Traceback" not in r.err
    out = r.json
    if entry["expect"] == "verifies":
        assert r.code == 0, out["checks"]
        assert out["trust_level"] == "VERIFIED"
    else:
        assert r.code == 1, (entry["file"], r.code, r.err)
        assert out["trust_level"] in ("COMPROMISED", "UNVERIFIED")
        assert any(c["status"] in ("fail", "error") for c in out["checks"])
