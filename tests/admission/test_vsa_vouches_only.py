"""A VSA vouches only for what it states (issue 33 item 4): every document of a VSA file is read by its
own kind; back-dating is judged against every verified signing time (Rekor v2 and timestamp
authorities too); a timestamp-only root (GitHub's) verifies a keyless VSA when the policy allows; a
policy requirement no VSA states makes a PASSED VSA insufficient; ``verify-vsa`` checks one document
per file (as slsa-verifier) and reads a pretty-printed envelope.

Key-signed VSAs are written here with ``cryptography`` alone (the DSSE PAE spelled out); keyless ones by
the test Sigstore (fixtures/testsigstore.py: Fulcio, Rekor v1/v2, a TSA), verified in-process."""

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
CI_ID = "https://github.com/example-org/ci/.github/workflows/verify.yml@refs/heads/main"
ISSUER = "https://token.actions.githubusercontent.com"
BODY = b"#!/bin/sh\necho vouched for\n"
SHA = hashlib.sha256(BODY).hexdigest()


def statement(result: str = "PASSED", age: timedelta = timedelta(hours=1)) -> dict[str, Any]:
    when = (datetime.now(timezone.utc) - age).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"_type": "https://in-toto.io/Statement/v1",
            "subject": [{"name": "tool", "digest": {"sha256": SHA}}],
            "predicateType": "https://slsa.dev/verification_summary/v1",
            "predicate": {"verifier": {"id": VERIFIER}, "timeVerified": when, "resourceUri": RESOURCE,
                          "policy": {"uri": "https://example.com/p.json"}, "inputAttestations": [],
                          "verificationResult": result,
                          "verifiedLevels": ["SLSA_BUILD_LEVEL_3"] if result == "PASSED" else []}}


def envelope(key: ec.EllipticCurvePrivateKey, stmt: dict[str, Any]) -> dict[str, Any]:
    payload = json.dumps(stmt).encode()
    ptype = b"application/vnd.in-toto+json"
    pae = b"DSSEv1 %d %s %d %s" % (len(ptype), ptype, len(payload), payload)
    return {"payloadType": ptype.decode(), "payload": base64.b64encode(payload).decode(),
            "signatures": [{"keyid": "", "sig": base64.b64encode(key.sign(pae, ec.ECDSA(hashes.SHA256()))).decode()}]}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    import testsigstore

    d = tmp_path_factory.mktemp("vsa-vouches")
    ts = testsigstore.TestSigstore(seed=3304, name="atip-test-gh")
    key = ec.generate_private_key(ec.SECP256R1())
    (d / "ci.pub").write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                             serialization.PublicFormat.SubjectPublicKeyInfo))
    roots = {"v2": d / "v2.trusted_root.json", "tsa-only": d / "tsa-only.trusted_root.json"}
    roots["v2"].write_text(json.dumps(ts.trusted_root_v2()))
    roots["tsa-only"].write_text(json.dumps(ts.trusted_root_tsa_only()))
    tool = d / "tool"
    tool.write_bytes(BODY)
    tool.chmod(0o755)
    both = {"version": 1, "trust": {"verifiers": [
        {"id": VERIFIER, "publicKey": "ci.pub", "maxAge": "30d"},
        {"id": VERIFIER, "identity": CI_ID, "issuer": ISSUER, "maxAge": "30d"}]},
        "permissions": {"allow": [{"rule": "tool *", "minTrustLevel": "VERIFIED"}]},
        "defaults": {"noMatch": "deny"}}
    (d / "policy.json").write_text(json.dumps(both))
    return {"dir": d, "ts": ts, "key": key, "roots": roots, "tool": tool, "policy": d / "policy.json"}


@pytest.fixture(autouse=True)
def no_org(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ATIP_TRUST_ORG_POLICY", raising=False)


def keyless(world: dict[str, Any], stmt: dict[str, Any], *, v2: bool = False, tlog: bool = True,
            gen_time: datetime | None = None) -> dict[str, Any]:
    ts = world["ts"]
    if not v2:
        return ts.sign_dsse(stmt, identity=CI_ID, issuer=ISSUER)
    return ts.sign_dsse_v2(stmt, identity=CI_ID, issuer=ISSUER, gen_time=gen_time, tlog=tlog,
                           **({} if tlog else {"sct": False}))


def lines(world: dict[str, Any], name: str, *docs: dict[str, Any]) -> Path:
    path = world["dir"] / name
    path.write_text("".join(json.dumps(d) + "\n" for d in docs))
    return path


def admit(world: dict[str, Any], *vsas: Path, root: str = "v2", more: tuple[str, ...] = (),
          policy: Path | None = None) -> Any:
    args = [a for v in vsas for a in ("--vsa", str(v))]
    return cli("admit", str(world["tool"]), "--command", "status", "--policy", str(policy or world["policy"]),
               "--trusted-root", str(world["roots"][root]), *args, *more, "--non-interactive", "--no-audit",
               "--no-cache", "--format", "json")


def statuses(r: Any) -> list[str]:
    return [c["status"] for c in r.json["checks"] if c["name"] == "vsa"]


def test_a_key_signed_passed_vsa_alone_admits(world) -> None:
    r = admit(world, lines(world, "k.vsa.jsonl", envelope(world["key"], statement())))
    assert r.code == 0 and statuses(r) == ["pass"], r.out + r.err


def test_attack_a_keyless_passed_first_line_does_not_hide_a_key_signed_failed_line(world) -> None:
    """The ``--bundle-dir`` layout ``<hex>.vsa.jsonl`` with a keyless PASSED then a key-signed FAILED:
    read as one kind from the first line, the FAILED was never read."""
    f = lines(world, "mixed1.vsa.jsonl", keyless(world, statement()), envelope(world["key"], statement("FAILED")))
    r = admit(world, f)
    assert r.code == 1 and "fail" in statuses(r) and r.json["trust_level"] != "VERIFIED", r.out + r.err


def test_attack_a_key_signed_passed_first_line_does_not_hide_a_keyless_failed_line(world) -> None:
    f = lines(world, "mixed2.vsa.jsonl", envelope(world["key"], statement()), keyless(world, statement("FAILED")))
    r = admit(world, f)
    assert r.code == 1 and "fail" in statuses(r) and r.json["trust_level"] != "VERIFIED", r.out + r.err


def test_attack_a_rekor_v2_vsa_signed_40_days_ago_claiming_an_hour_does_not_count(world) -> None:
    """Rekor v2 entries carry no integrated time: the timestamp authority's signed time shows when the
    summary was signed, and a claimed later verification cannot stretch its maxAge."""
    old = datetime.now(timezone.utc) - timedelta(days=40)
    r = admit(world, lines(world, "v2-old.vsa.jsonl", keyless(world, statement(), v2=True, gen_time=old)))
    assert r.code == 1 and statuses(r) == ["skip"], r.out + r.err
    (c,) = [c for c in r.json["checks"] if c["name"] == "vsa"]
    assert "after the time it was signed" in c["message"] and old.strftime("%Y-%m-%d") in c["message"]


def test_a_rekor_v2_vsa_signed_when_it_says_counts(world) -> None:
    now = datetime.now(timezone.utc) - timedelta(hours=1)
    r = admit(world, lines(world, "v2-now.vsa.jsonl", keyless(world, statement(), v2=True, gen_time=now)))
    assert r.code == 0 and statuses(r) == ["pass"], r.out + r.err


def test_a_timestamp_only_root_verifies_a_keyless_vsa(world) -> None:
    """GitHub's instance: no log, a TSA. ``verify`` accepts such a bundle as an attestation; a VSA in
    one is evaluated the same way (the root lists no log, so it requires none)."""
    when = datetime.now(timezone.utc) - timedelta(hours=1)
    f = lines(world, "tsa.vsa.jsonl", keyless(world, statement(), v2=True, tlog=False, gen_time=when))
    r = admit(world, f, root="tsa-only")
    assert r.code == 0 and statuses(r) == ["pass"], r.out + r.err


def test_attack_a_timestamp_only_vsa_under_a_root_with_logs_is_not_counted(world) -> None:
    """A root that lists logs requires a log entry: a timestamp-only VSA does not count there."""
    when = datetime.now(timezone.utc) - timedelta(hours=1)
    f = lines(world, "tsa2.vsa.jsonl", keyless(world, statement(), v2=True, tlog=False, gen_time=when))
    r = admit(world, f, root="v2")
    assert r.code == 1 and statuses(r) == ["skip"], r.out + r.err


@pytest.mark.parametrize("flags", [
    ("--predicate-type", "https://slsa.dev/provenance/v1"),
    ("--certificate-identity", "https://github.com/example-org/tool/.github/workflows/release.yml@refs/tags/v1",
     "--certificate-oidc-issuer", ISSUER),
    ("--repo", "example-org/tool"),
], ids=["predicate type", "certificate identity", "gh repo"])
def test_attack_a_requirement_a_vsa_cannot_answer_makes_it_insufficient(world, flags: tuple[str, ...]) -> None:
    """With only a VSA, ``--predicate-type``, ``--certificate-identity`` and gh's ``--repo`` were not
    applied: the VSA made the tool VERIFIED whoever signed it and whatever its attestation was."""
    f = lines(world, "req.vsa.jsonl", envelope(world["key"], statement()))
    r = admit(world, f, more=flags)
    assert r.code == 1 and statuses(r) == ["skip"] and r.json["trust_level"] != "VERIFIED", r.out + r.err
    (c,) = [c for c in r.json["checks"] if c["name"] == "vsa"]
    assert "VSA insufficient" in c["message"]


def test_attack_a_local_signer_requirement_narrows_an_org_verifier(world, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The org names a VSA verifier; a local layer requiring a signer identity narrows: a VSA, which names
    no signer, no longer suffices (local layers only narrow)."""
    org = tmp_path / "org.json"
    org.write_text(json.dumps({"version": 1, "trust": {"verifiers": [
        {"id": VERIFIER, "publicKey": str(world["dir"] / "ci.pub"), "maxAge": "30d"}]}}))
    org.chmod(0o644)
    monkeypatch.setenv("ATIP_TRUST_ORG_POLICY", str(org))
    local = tmp_path / "local.json"
    local.write_text(json.dumps({"version": 1, "trust": {"signers": [{"identity": CI_ID, "issuer": ISSUER}]},
                                 "permissions": {"allow": [{"rule": "tool *", "minTrustLevel": "VERIFIED"}]},
                                 "defaults": {"noMatch": "deny"}}))
    f = lines(world, "org.vsa.jsonl", envelope(world["key"], statement()))
    r = admit(world, f, policy=local)
    # An org whose only anchor is a verifier fixes the anchor set (policy/anchors.py): the test world's
    # --trusted-root flag is then refused outright (exit 2), which is a denial too; where it is taken,
    # the VSA must not suffice.
    assert r.code in (1, 2) and "allow" not in r.out.split("\n", 1)[0], r.out + r.err
    if r.code == 1:
        assert statuses(r) == ["skip"], r.out + r.err


# --- verify-vsa: one document per file, pretty-printed accepted -----------------------------------------

def verify_vsa(world: dict[str, Any], path: Path) -> Any:
    return cli("verify-vsa", "--attestation-path", str(path), "--subject-digest", f"sha256:{SHA}",
               "--verifier-id", VERIFIER, "--resource-uri", RESOURCE, "--public-key-path",
               str(world["dir"] / "ci.pub"), "--format", "json")


def test_verify_vsa_reads_a_pretty_printed_envelope(world) -> None:
    f = world["dir"] / "pretty.vsa.json"
    f.write_text(json.dumps(envelope(world["key"], statement()), indent=2) + "\n")
    r = verify_vsa(world, f)
    assert r.code == 0 and r.json["result"] == "PASSED", r.out + r.err


def test_attack_verify_vsa_does_not_pass_a_file_whose_second_vsa_failed(world) -> None:
    """PASSED then FAILED in one file: only the first was read (exit 0). A file of several documents is
    refused, as slsa-verifier refuses it."""
    f = lines(world, "two.vsa.jsonl", envelope(world["key"], statement()), envelope(world["key"], statement("FAILED")))
    r = verify_vsa(world, f)
    assert r.code == 2 and "2 JSON documents" in r.err, r.out + r.err


def test_attack_verify_vsa_keyless_does_not_pass_a_file_whose_second_vsa_failed(world) -> None:
    f = lines(world, "two-keyless.vsa.jsonl", keyless(world, statement()), keyless(world, statement("FAILED")))
    r = cli("verify-vsa", "--attestation-path", str(f), "--subject-digest", f"sha256:{SHA}",
            "--verifier-id", VERIFIER, "--resource-uri", RESOURCE, "--certificate-identity", CI_ID,
            "--certificate-oidc-issuer", ISSUER, "--trusted-root", str(world["roots"]["v2"]))
    assert r.code == 2 and "2 JSON documents" in r.err, r.out + r.err


def test_verify_vsa_keyless_under_a_timestamp_only_root(world) -> None:
    when = datetime.now(timezone.utc) - timedelta(hours=1)
    f = lines(world, "tsa-verify.vsa.jsonl", keyless(world, statement(), v2=True, tlog=False, gen_time=when))
    r = cli("verify-vsa", "--attestation-path", str(f), "--subject-digest", f"sha256:{SHA}",
            "--verifier-id", VERIFIER, "--resource-uri", RESOURCE, "--certificate-identity", CI_ID,
            "--certificate-oidc-issuer", ISSUER, "--trusted-root", str(world["roots"]["tsa-only"]))
    assert r.code == 0, r.out + r.err


def test_attack_a_trusted_failed_vsa_denies_even_where_the_policy_would_allow_unverified(world, tmp_path: Path) -> None:
    """One trusted FAILED for the digest denies: under a policy that allows unsigned tools, capping the
    trust level below VERIFIED changed nothing, so the verifier's FAILED was an allow."""
    lax = tmp_path / "lax.json"
    lax.write_text(json.dumps({"version": 1, "trust": {"verifiers": [
        {"id": VERIFIER, "publicKey": str(world["dir"] / "ci.pub"), "maxAge": "30d"}]},
        "requirements": {"minTrustLevel": "UNSIGNED"}, "permissions": {"allow": ["tool *"]}}))
    assert admit(world, policy=lax).code == 0  # no VSA: allowed as unsigned
    f = lines(world, "lax-failed.vsa.jsonl", envelope(world["key"], statement("FAILED")))
    r = admit(world, f, policy=lax)
    assert r.code == 1 and r.json["decision"]["reasons"][0]["code"] == "VSA_FAILED", r.out + r.err


def test_a_source_requirement_is_not_dropped_for_a_vsa(world, tmp_path: Path) -> None:
    """``trust.sources`` (repository and ref) needs the provenance itself, which a VSA does not carry:
    the VSA may make the tool VERIFIED, but the source requirement still denies (never silently dropped)."""
    pol = tmp_path / "sources.json"
    pol.write_text(json.dumps({"version": 1, "trust": {
        "verifiers": [{"id": VERIFIER, "publicKey": str(world["dir"] / "ci.pub"), "maxAge": "30d"}],
        "sources": [{"repository": "https://github.com/example-org/tool", "refs": ["refs/tags/v1.2.0"]}]},
        "permissions": {"allow": [{"rule": "tool *", "minTrustLevel": "VERIFIED"}]}, "defaults": {"noMatch": "deny"}}))
    r = admit(world, lines(world, "src.vsa.jsonl", envelope(world["key"], statement())), policy=pol)
    assert r.code == 1, r.out + r.err
    assert "SOURCE_NOT_ALLOWED" in [x["code"] for x in r.json["decision"]["reasons"]], r.out
