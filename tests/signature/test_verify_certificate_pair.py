"""``verify --cert C --signature S``: cosign's detached certificate and signature (``sign-blob
--output-certificate C --output-signature S``), and cosign's own ``--bundle`` file.

The promise: the pair is checked for real (chain to the trusted root's Fulcio CA, SCT, signature over
the artifact, signer identity) but never verifies alone, because it carries no transparency-log entry
and no verified signing time: exit 1 with a failed ``tlog`` check that says what to give instead. Given
with a bundle, the bundle must carry the same certificate and signature, and the bundle's log proof is
what verifies. Every command runs as a real subprocess against material minted by the test Sigstore.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization

import testsigstore
from verify_helpers import run_cli
from world import World

CLI = [sys.executable, "-m", "atip_trust"]
ID = "https://github.com/acme/tool/.github/workflows/release.yml@refs/tags/v1.0.0"
ISS = "https://token.actions.githubusercontent.com"
TOOL = b"#!/bin/sh\necho tool\n"
IDENTITY = ("--certificate-identity", ID, "--certificate-oidc-issuer", ISS)


def _pem(bundle: dict[str, Any]) -> bytes:
    vm = bundle["verificationMaterial"]
    raw = vm["certificate"] if "certificate" in vm else vm["x509CertificateChain"]["certificates"][0]
    cert = x509.load_der_x509_certificate(base64.b64decode(raw["rawBytes"]))
    return cert.public_bytes(serialization.Encoding.PEM)


def _write_pair(d: Path, name: str, bundle: dict[str, Any]) -> tuple[Path, Path]:
    """What cosign sign-blob --output-certificate/--output-signature writes: PEM, base64 signature."""
    (d / f"{name}.pem").write_bytes(_pem(bundle))
    (d / f"{name}.sig").write_text(bundle["messageSignature"]["signature"] + "\n")
    return d / f"{name}.pem", d / f"{name}.sig"


def _cosign_bundle(bundle: dict[str, Any]) -> dict[str, Any]:
    """cosign's --bundle file (before --new-bundle-format) for the same signing event."""
    entry = bundle["verificationMaterial"]["tlogEntries"][0]
    return {
        "base64Signature": bundle["messageSignature"]["signature"],
        "cert": base64.b64encode(_pem(bundle)).decode(),
        "rekorBundle": {
            "SignedEntryTimestamp": entry["inclusionPromise"]["signedEntryTimestamp"],
            "Payload": {
                "body": entry["canonicalizedBody"],
                "integratedTime": int(entry["integratedTime"]),
                "logIndex": int(entry["logIndex"]),
                "logID": base64.b64decode(entry["logId"]["keyId"]).hex(),
            },
        },
    }


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    w = World(tmp_path_factory.mktemp("pair"), seed=23)
    d = w.dir
    w.file("tool", TOOL)
    w.file("tampered", TOOL + b"# one more line\n")
    # cosign 2.x sign-blob: a v0.1-style entry with an inclusion promise (SET) and no proof.
    signed = w.signed(TOOL, identity=ID, issuer=ISS, bundle_version="0.1", inclusion_proof=False)
    _write_pair(d, "tool", signed)
    w.file("tool.b64pem", base64.b64encode(_pem(signed)).decode() + "\n")
    w.file("tool.sigstore.json", signed)
    w.file("tool.cosign.bundle", _cosign_bundle(signed))
    again = w.signed(TOOL, identity=ID, issuer=ISS, bundle_version="0.1", inclusion_proof=False)
    _write_pair(d, "again", again)
    foreign = testsigstore.TestSigstore(seed=24, name="another-sigstore")
    _write_pair(d, "foreign", foreign.sign_artifact(TOOL, identity=ID, issuer=ISS))
    w.file("garbage.pem", "-----BEGIN CERTIFICATE-----\nnot a certificate\n-----END CERTIFICATE-----\n")
    w.file("garbage.sig", "this is %%% not base64\n")
    return d


def verify(d: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CI": "true"}
    return run_cli(["verify", *argv, "--trusted-root", "trusted_root.json", "--format", "json", "--no-cache"],
                   timeout=120, cwd=d, env=env)


def failed(p: subprocess.CompletedProcess[str]) -> dict[str, dict[str, Any]]:
    assert p.stdout, p.stderr
    return {c["name"]: c for c in json.loads(p.stdout)["checks"] if c["status"] in ("fail", "error")}


def passed(p: subprocess.CompletedProcess[str]) -> set[str]:
    return {c["name"] for c in json.loads(p.stdout)["checks"] if c["status"] == "pass"}


@pytest.mark.parametrize("cert", ["tool.pem", "tool.b64pem"])
def test_a_good_pair_without_a_log_entry_does_not_verify_and_says_tlog(world: Path, cert: str) -> None:
    p = verify(world, "tool", "--cert", cert, "--signature", "tool.sig", *IDENTITY)
    assert p.returncode == 1, p.stdout + p.stderr
    bad = failed(p)
    assert list(bad) == ["tlog"], bad
    assert "no transparency-log entry" in bad["tlog"]["message"] and "--bundle" in bad["tlog"]["message"]
    # Everything the pair can show was checked and passed: chain with SCT, signature, signer.
    assert {"certificate.chain", "signature", "identity", "issuer"} <= passed(p)
    assert json.loads(p.stdout)["trust_level"] == "UNVERIFIED"


def test_cosign_spelling_certificate_is_the_same_flag(world: Path) -> None:
    p = verify(world, "tool", "--certificate", "tool.pem", "--signature", "tool.sig", *IDENTITY)
    assert p.returncode == 1 and list(failed(p)) == ["tlog"], p.stdout + p.stderr


def test_a_pair_over_other_bytes_fails_the_signature(world: Path) -> None:
    p = verify(world, "tampered", "--cert", "tool.pem", "--signature", "tool.sig", *IDENTITY)
    assert p.returncode == 1
    assert "signature" in failed(p) and "signature is invalid" in failed(p)["signature"]["message"]


def test_a_certificate_from_another_ca_fails_the_chain(world: Path) -> None:
    p = verify(world, "tool", "--cert", "foreign.pem", "--signature", "foreign.sig", *IDENTITY)
    assert p.returncode == 1
    assert "certificate.chain" in failed(p) and "signature" not in passed(p), p.stdout


def test_a_pair_from_another_signer_fails_the_identity(world: Path) -> None:
    other = "https://github.com/evil/tool/.github/workflows/release.yml@refs/tags/v1.0.0"
    p = verify(world, "tool", "--cert", "tool.pem", "--signature", "tool.sig",
               "--certificate-identity", other, "--certificate-oidc-issuer", ISS)
    assert p.returncode == 1
    bad = failed(p)
    assert bad["identity"]["expected"] == other and bad["identity"]["actual"] == ID, bad
    assert "tlog" in bad


@pytest.mark.parametrize("bundle", ["tool.cosign.bundle", "tool.sigstore.json"])
def test_the_pair_with_the_bundle_that_carries_it_verifies(world: Path, bundle: str) -> None:
    p = verify(world, "tool", "--cert", "tool.pem", "--signature", "tool.sig", "--bundle", bundle, *IDENTITY)
    assert p.returncode == 0, p.stdout + p.stderr
    assert {"detached", "tlog.body", "signature"} <= passed(p)


def test_cosign_legacy_bundle_alone_verifies_and_binds_the_artifact(world: Path) -> None:
    assert verify(world, "tool", "--bundle", "tool.cosign.bundle", *IDENTITY).returncode == 0
    p = verify(world, "tampered", "--bundle", "tool.cosign.bundle", *IDENTITY)
    assert p.returncode == 1 and "signature" in failed(p), p.stdout


def test_a_pair_that_is_not_the_bundles_fails_naming_both(world: Path) -> None:
    p = verify(world, "tool", "--cert", "again.pem", "--signature", "again.sig",
               "--bundle", "tool.cosign.bundle", *IDENTITY)
    assert p.returncode == 1, p.stdout + p.stderr
    bad = failed(p)
    msg = bad["detached"]["message"]
    assert "tool.cosign.bundle" in msg and "again.pem" in msg and "again.sig" in msg, msg
    assert "tlog" in bad  # the pair itself, uncovered by any bundle, has no log entry either


def test_the_bundles_signature_with_another_certificate_fails(world: Path) -> None:
    p = verify(world, "tool", "--cert", "again.pem", "--signature", "tool.sig",
               "--bundle", "tool.cosign.bundle", *IDENTITY)
    assert p.returncode == 1
    msg = failed(p)["detached"]["message"]
    assert "certificate (--cert again.pem)" in msg and "signature" not in msg.split("carry")[1], msg


@pytest.mark.parametrize(("cert", "sig", "named"), [
    ("garbage.pem", "tool.sig", "garbage.pem"),
    ("tool.sig", "tool.sig", "tool.sig"),  # base64, but not of a PEM certificate
    ("tool.pem", "garbage.sig", "garbage.sig"),
    ("tool.pem", "tool.pem", "tool.pem"),
])
def test_malformed_certificate_or_signature_is_a_clear_error(world: Path, cert: str, sig: str,
                                                             named: str) -> None:
    p = verify(world, "tool", "--cert", cert, "--signature", sig, *IDENTITY)
    assert p.returncode == 2, p.stdout + p.stderr
    assert "Traceback" not in p.stderr and named in p.stderr, p.stderr
    assert json.loads(p.stdout)["decision"]["behavior"] == "deny"


@pytest.mark.parametrize(("argv", "says"), [
    (["--cert", "tool.pem"], "--cert needs --signature"),
    (["--cert", "tool.pem", "--signature", "tool.sig", "--key", "tool.pem"], "not both"),
    (["--cert", "tool.pem", "--signature", "tool.sig"], "--certificate-identity"),
])
def test_incomplete_pair_flags_are_usage_errors(world: Path, argv: list[str], says: str) -> None:
    p = verify(world, "tool", *argv)
    assert p.returncode == 2 and says in p.stderr, p.stderr


def test_admit_names_the_flags_it_takes_instead_of_cert(world: Path) -> None:
    p = run_cli(["admit", "tool", "--cert", "tool.pem"], timeout=120, cwd=world,
                env={**os.environ, "CI": "true"})
    assert p.returncode == 2 and "only verify takes --cert" in p.stderr and "--bundle" in p.stderr, p.stderr


def test_a_cosign_bundle_whose_log_entry_is_for_another_signature_fails(world: Path) -> None:
    # GHSA-8gw7-4j42-w388: cosign accepted any rekorBundle next to a good signature and certificate.
    doc = json.loads((world / "tool.cosign.bundle").read_text())
    doc["base64Signature"] = (world / "again.sig").read_text().strip()
    doc["cert"] = base64.b64encode((world / "again.pem").read_bytes()).decode()
    (world / "spliced.bundle").write_text(json.dumps(doc))
    p = verify(world, "tool", "--bundle", "spliced.bundle", *IDENTITY)
    assert p.returncode == 1 and "tlog.body" in failed(p), p.stdout + p.stderr


def test_a_malformed_cosign_bundle_is_a_clear_error(world: Path) -> None:
    doc = json.loads((world / "tool.cosign.bundle").read_text())
    doc["rekorBundle"]["Payload"]["logID"] = "not hex"
    (world / "badlogid.bundle").write_text(json.dumps(doc))
    p = verify(world, "tool", "--bundle", "badlogid.bundle", *IDENTITY)
    assert p.returncode == 2 and "logID" in p.stderr and "Traceback" not in p.stderr, p.stderr


def test_the_verdict_cache_does_not_serve_another_certificates_verdict(world: Path, tmp_path: Path) -> None:
    env = {**os.environ, "CI": "true", "ATIP_CACHE_DIR": str(tmp_path / "cache")}
    (tmp_path / "c.pem").write_bytes((world / "tool.pem").read_bytes())

    def run() -> int:
        return run_cli(["verify", str(world / "tool"), "--cert", str(tmp_path / "c.pem"),
                        "--signature", str(world / "tool.sig"), "--bundle", str(world / "tool.cosign.bundle"),
                        "--trusted-root", str(world / "trusted_root.json"), *IDENTITY], timeout=120,
                       env=env).returncode

    assert run() == 0
    (tmp_path / "c.pem").write_bytes((world / "again.pem").read_bytes())
    assert run() == 1
