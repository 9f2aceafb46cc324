"""A trusted root whose key uses an algorithm or curve cryptography does not implement (issue 33 item 5):
a named refusal of that key (exit 2, naming where it is), never ``internal error: UnsupportedAlgorithm``.
The curve OID of a real P-256 key is changed to one no library knows (1.2.840.10045.3.1.99)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization

import testsigstore
from verify_helpers import cli

P256 = bytes.fromhex("06082A8648CE3D030107")
UNKNOWN = bytes.fromhex("06082A8648CE3D030163")


def _unknown_curve(der: bytes) -> bytes:
    assert P256 in der
    return der.replace(P256, UNKNOWN, 1)


@pytest.mark.parametrize("where", ["tlogs", "ctlogs", "certificateAuthorities"])
def test_an_unknown_curve_in_a_root_line_is_a_named_refusal(tmp_path: Path, where: str) -> None:
    ts = testsigstore.TestSigstore(seed=3305)
    good, bad = ts.trusted_root(), ts.trusted_root()
    if where == "certificateAuthorities":
        entry = bad[where][0]["certChain"]["certificates"][-1]
        der = base64.b64decode(entry["rawBytes"])
        cert = x509.load_der_x509_certificate(der)
        spki = cert.public_key().public_bytes(serialization.Encoding.DER,
                                              serialization.PublicFormat.SubjectPublicKeyInfo)
        entry["rawBytes"] = base64.b64encode(der.replace(spki, _unknown_curve(spki), 1)).decode()
    else:
        pk = bad[where][0]["publicKey"]
        pk["rawBytes"] = base64.b64encode(_unknown_curve(base64.b64decode(pk["rawBytes"]))).decode()
    root = tmp_path / "trusted_root.jsonl"
    root.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    tool = tmp_path / "tool"
    tool.write_bytes(b"#!/bin/sh\n")
    bundle = tmp_path / "b.sigstore.json"
    bundle.write_text(json.dumps(ts.sign_artifact(tool.read_bytes(), identity="https://x.example/id",
                                                  issuer="https://issuer.example")))
    r = cli("verify", str(tool), "--bundle", str(bundle), "--trusted-root", str(root),
            "--certificate-identity", "https://x.example/id", "--certificate-oidc-issuer", "https://issuer.example",
            "--no-cache")
    assert r.code == 2, r.out + r.err
    assert "internal error" not in r.err and "UnsupportedAlgorithm" not in r.err, r.err
    assert "refused" in r.err and where in r.err and "1.2.840.10045.3.1.99" in r.err, r.err
