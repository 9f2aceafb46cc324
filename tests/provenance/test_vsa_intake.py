"""Strict VSA intake (issue 33 item 5): a signed VSA's predicate is typed as slsa-verifier types it (Go's
``json.Unmarshal`` into ``verifiers/internal/vsa/v1.0/vsa.go``), its times are RFC 3339 within a sane
range, its levels ASCII, and no key is duplicated or doubled in another case. Each input is signed by
the trusted key, so only the intake stands between it and a decision: it must be refused with a
clear error (exit 2) or a named problem, never an internal error or an undeserved PASSED."""

from __future__ import annotations

import base64
import hashlib
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from verify_helpers import cli

VERIFIER = "https://ci.example.com/atip-trust/verify"
RESOURCE = "https://github.com/example-org/tool/releases/download/v1.2.0/tool"
BODY = b"#!/bin/sh\necho typed\n"
SHA = hashlib.sha256(BODY).hexdigest()


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    d = tmp_path_factory.mktemp("vsa-intake")
    key = ec.generate_private_key(ec.SECP256R1())
    (d / "ci.pub").write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                             serialization.PublicFormat.SubjectPublicKeyInfo))
    tool = d / "tool"
    tool.write_bytes(BODY)
    tool.chmod(0o755)
    (d / "policy.json").write_text(json.dumps({
        "version": 1, "trust": {"verifiers": [{"id": VERIFIER, "publicKey": "ci.pub", "maxAge": "30d"}]},
        "permissions": {"allow": [{"rule": "tool *", "minTrustLevel": "VERIFIED"}]},
        "defaults": {"noMatch": "deny"}}))
    return {"dir": d, "key": key, "tool": tool}


@pytest.fixture(autouse=True)
def no_org(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ATIP_TRUST_ORG_POLICY", raising=False)


def predicate(**changes: Any) -> dict[str, Any]:
    p: dict[str, Any] = {
        "verifier": {"id": VERIFIER, "version": {"atip-trust": "1"}},
        "timeVerified": (datetime.now(timezone.utc) - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "resourceUri": RESOURCE, "policy": {"uri": "https://example.com/p.json", "digest": {"sha256": "ab" * 32}},
        "inputAttestations": [{"uri": "b.json", "digest": {"sha256": "cd" * 32}}],
        "verificationResult": "PASSED", "verifiedLevels": ["SLSA_BUILD_LEVEL_3"]}
    p.update(changes)
    return p


def signed(world: dict[str, Any], name: str, pred: dict[str, Any] | str) -> Path:
    """A VSA over ``pred`` (a dict, or raw JSON text for key games), signed by the trusted key."""
    body = pred if isinstance(pred, str) else json.dumps(pred)
    payload = ('{"_type":"https://in-toto.io/Statement/v1","subject":[{"name":"tool","digest":{"sha256":"%s"}}],'
               '"predicateType":"https://slsa.dev/verification_summary/v1","predicate":%s}' % (SHA, body)).encode()
    ptype = b"application/vnd.in-toto+json"
    pae = b"DSSEv1 %d %s %d %s" % (len(ptype), ptype, len(payload), payload)
    sig = world["key"].sign(pae, ec.ECDSA(hashes.SHA256()))
    env = {"payloadType": ptype.decode(), "payload": base64.b64encode(payload).decode(),
           "signatures": [{"keyid": "", "sig": base64.b64encode(sig).decode()}]}
    path = world["dir"] / f"{name}.vsa.jsonl"
    path.write_text(json.dumps(env) + "\n")
    return path


def verify_vsa(world: dict[str, Any], path: Path, *levels: str) -> Any:
    more = [a for lv in levels for a in ("--verified-level", lv)]
    return cli("verify-vsa", "--attestation-path", str(path), "--subject-digest", f"sha256:{SHA}",
               "--verifier-id", VERIFIER, "--resource-uri", RESOURCE, "--public-key-path",
               str(world["dir"] / "ci.pub"), *more)


def admit(world: dict[str, Any], path: Path) -> Any:
    return cli("admit", str(world["tool"]), "--command", "status", "--policy", str(world["dir"] / "policy.json"),
               "--vsa", str(path), "--non-interactive", "--no-audit", "--no-cache", "--format", "json")


def test_a_well_typed_vsa_passes_both_readers(world) -> None:
    f = signed(world, "good", predicate())
    assert verify_vsa(world, f, "SLSA_BUILD_LEVEL_3").code == 0
    assert admit(world, f).code == 0


BAD = {
    "year 9999": (predicate(timeVerified="9999-12-31T23:59:59Z"), "year 9999"),
    "year 0001": (predicate(timeVerified="0001-01-01T00:00:00Z"), "year 1"),
    "no T": (predicate(timeVerified="2026-01-02 03:04:05Z"), "RFC 3339"),
    "no offset": (predicate(timeVerified="2026-01-02T03:04:05"), "RFC 3339"),
    "time a number": (predicate(timeVerified=1767322800), "timeVerified"),
    "inputAttestations a string": (predicate(inputAttestations="b.json"), "inputAttestations"),
    "verifier.version a number": (predicate(verifier={"id": VERIFIER, "version": 1}), "version"),
    "verifier.version values": (predicate(verifier={"id": VERIFIER, "version": {"x": 1}}), "version"),
    "verifier.id a number": (predicate(verifier={"id": 7}), "id"),
    "result a list": (predicate(verificationResult=["PASSED"]), "verificationResult"),
    "policy digest values": (predicate(policy={"uri": "p", "digest": {"sha256": 5}}), "digest"),
    "dependencyLevels values": (predicate(dependencyLevels={"a": "3"}), "dependencyLevels"),
}


@pytest.mark.parametrize("name", list(BAD))
def test_attack_a_predicate_slsa_verifier_refuses_is_refused(world, name: str) -> None:
    pred, needle = BAD[name]
    f = signed(world, name.replace(" ", "-"), pred)
    for r in (verify_vsa(world, f), admit(world, f)):
        assert r.code == 2 and needle in r.out + r.err, r.out + r.err
        assert "internal error" not in r.out + r.err


@pytest.mark.parametrize("games", [
    '{"verificationResult":"PASSED","VerificationResult":"FAILED"}',
    '{"verificationResult":"PASSED","VERIFICATIONRESULT":"FAILED"}',
    '{"verificationResult":"PASSED","verificationResult":"FAILED"}',
    '{"verificationresult":"FAILED","verificationResult":"PASSED"}',
], ids=["camel", "upper", "exact duplicate", "lower first"])
def test_attack_verification_result_case_games_are_refused(world, games: str) -> None:
    """Go matches keys case-insensitively and the last wins: slsa-verifier reads FAILED where an exact
    reader reads PASSED. Both keys present: refused, whatever the order."""
    pred = json.dumps(predicate())[:-1] + "," + games[1:]  # the games' keys appended to a good predicate
    pred = pred.replace('"verificationResult": "PASSED", ', "")
    f = signed(world, "games", pred)
    for r in (verify_vsa(world, f), admit(world, f)):
        assert r.code == 2 and "internal error" not in r.out + r.err, r.out + r.err


@pytest.mark.parametrize("level", ["SLSA_BUILD_LEVEL_³", "SLSA_BUILD_LEVEL_３", "SLSA_BUILD_LEVEL_٣",
                                   "SLSA_BUILD_LEVEL_99999999999999999999"])
def test_attack_a_level_in_other_digits_is_no_level(world, level: str) -> None:
    """``str.isdigit`` takes a superscript (int() then raises: an internal error) and a full-width or
    Arabic-Indic digit (read as 3). strconv.Atoi takes ASCII only: a named VSA_BAD_LEVEL problem, and
    no VERIFIED from it."""
    f = signed(world, "level", predicate(verifiedLevels=[level]))
    r = verify_vsa(world, f, "SLSA_BUILD_LEVEL_3")
    assert r.code == 1 and "VSA_BAD_LEVEL" in r.err and "internal error" not in r.err, r.err
    pol = world["dir"] / "policy-l3.json"
    pol.write_text(json.dumps({"version": 1, "trust": {"verifiers": [
        {"id": VERIFIER, "publicKey": "ci.pub", "maxAge": "30d", "minLevel": 3}]},
        "permissions": {"allow": [{"rule": "tool *", "minTrustLevel": "VERIFIED"}]}, "defaults": {"noMatch": "deny"}}))
    a = cli("admit", str(world["tool"]), "--command", "status", "--policy", str(pol), "--vsa", str(f),
            "--non-interactive", "--no-audit", "--no-cache", "--format", "json")
    assert a.code == 1 and a.json["trust_level"] != "VERIFIED", a.out + a.err


def test_attack_a_subject_digest_doubled_in_another_case_is_refused(world) -> None:
    """``"digest"`` and ``"Digest"`` in one subject: Go reads the second, an exact reader the first; the
    summary would vouch for other bytes in each reader."""
    body = json.dumps(predicate())
    payload_subject = '[{"name":"tool","digest":{"sha256":"%s"},"Digest":{"sha256":"%s"}}]' % (SHA, "0" * 64)
    f = signed(world, "subject-games", body)
    env = json.loads(f.read_text())
    stmt = base64.b64decode(env["payload"]).decode()
    stmt = stmt.replace('[{"name":"tool","digest":{"sha256":"%s"}}]' % SHA, payload_subject)
    payload = stmt.encode()
    ptype = b"application/vnd.in-toto+json"
    pae = b"DSSEv1 %d %s %d %s" % (len(ptype), ptype, len(payload), payload)
    env["payload"] = base64.b64encode(payload).decode()
    env["signatures"][0]["sig"] = base64.b64encode(world["key"].sign(pae, ec.ECDSA(hashes.SHA256()))).decode()
    f.write_text(json.dumps(env) + "\n")
    for r in (verify_vsa(world, f), admit(world, f)):
        assert r.code == 2 and "Digest" in r.out + r.err and "internal error" not in r.out + r.err, r.out + r.err
