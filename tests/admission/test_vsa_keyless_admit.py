"""Admission from a keyless VSA (issue 25 item 3, "key or Sigstore identity"): a ``trust.verifiers`` entry
may name a Sigstore identity instead of a key; a VSA in a Sigstore bundle whose Fulcio certificate
matches it counts, any other identity is ignored and reported.

The bundles are minted by the local test Sigstore (fixtures/testsigstore.py: a real CA, CT log and
Rekor log with Merkle proofs) and verified by unmodified sigstore-python through
``signature/keyless.py``; nothing in the verifier is replaced.
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from verify_helpers import cli

VERIFIER = "https://ci.example.com/atip-trust/verify"
RESOURCE = "https://github.com/example-org/tool/releases/download/v1.2.0/tool"
CI_ID = "https://github.com/example-org/ci/.github/workflows/verify.yml@refs/heads/main"
ISSUER = "https://token.actions.githubusercontent.com"
EVIL_ID = "https://github.com/evil-org/ci/.github/workflows/verify.yml@refs/heads/main"
BODY = b"#!/bin/sh\necho vouched for keylessly\n"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    import testsigstore

    d = tmp_path_factory.mktemp("vsa-keyless-admit")
    ts = testsigstore.TestSigstore(seed=2501)
    root = ts.write_trusted_root(d / "trusted_root.json")
    tool = d / "tool"
    tool.write_bytes(BODY)
    tool.chmod(0o755)
    other = d / "other-tool"
    other.write_bytes(BODY + b"# other bytes\n")
    other.chmod(0o755)
    pol = d / "policy.json"
    pol.write_text(json.dumps({
        "version": 1,
        "trust": {"verifiers": [{"id": VERIFIER, "identity": CI_ID, "issuer": ISSUER,
                                 "resourceUris": [RESOURCE], "minLevel": 3, "maxAge": "30d"}]},
        "permissions": {"allow": [{"rule": "tool *", "minTrustLevel": "VERIFIED"}]},
        "defaults": {"noMatch": "deny"},
    }))
    return {"dir": d, "ts": ts, "root": root, "tool": tool, "other": other, "policy": pol,
            "sha256": hashlib.sha256(BODY).hexdigest()}


@pytest.fixture(autouse=True)
def no_org(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ATIP_TRUST_ORG_POLICY", raising=False)


def mint(world: dict[str, Any], name: str, *, identity: str = CI_ID, sha256: str | None = None,
         result: str = "PASSED", age: timedelta = timedelta(hours=1), signed_ago: timedelta | None = None,
         levels: tuple[str, ...] = ("SLSA_BUILD_LEVEL_3",)) -> Path:
    """A VSA in a Sigstore bundle, logged ``signed_ago`` ago (default: when it says it verified)."""
    when = datetime.now(timezone.utc) - age
    logged = int(time.time() - (signed_ago if signed_ago is not None else age).total_seconds())
    stmt = {"_type": "https://in-toto.io/Statement/v1",
            "subject": [{"name": "tool", "digest": {"sha256": sha256 or world["sha256"]}}],
            "predicateType": "https://slsa.dev/verification_summary/v1",
            "predicate": {"verifier": {"id": VERIFIER}, "timeVerified": when.strftime("%Y-%m-%dT%H:%M:%SZ"),
                          "resourceUri": RESOURCE, "policy": {"uri": "https://example.com/p.json"},
                          "inputAttestations": [], "verificationResult": result, "verifiedLevels": list(levels)}}
    bundle = world["ts"].sign_dsse(stmt, identity=identity, issuer=ISSUER, integrated_time=logged)
    path = world["dir"] / f"{name}.vsa.sigstore.json"
    path.write_text(json.dumps(bundle))
    return path


def admit(world: dict[str, Any], *vsas: Path, tool: str = "tool", policy: Path | None = None) -> Any:
    args = [a for v in vsas for a in ("--vsa", str(v))]
    return cli("admit", str(world[tool]), "--command", "status", "--policy", str(policy or world["policy"]),
               "--trusted-root", str(world["root"]), *args, "--non-interactive", "--no-audit", "--no-cache",
               "--format", "json")


def vsa_checks(out: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in out["checks"] if c["name"] == "vsa"]


def test_keyless_vsa_from_the_listed_identity_admits_from_the_vsa_alone(world) -> None:
    r = admit(world, mint(world, "good"))
    assert r.code == 0, r.out
    assert r.json["trust_level"] == "VERIFIED" and r.json["decision"]["behavior"] == "allow"
    (c,) = vsa_checks(r.json)
    assert c["status"] == "pass" and CI_ID in c["message"]


def test_keyless_vsa_from_an_unlisted_identity_is_ignored_and_reported(world) -> None:
    r = admit(world, mint(world, "evil", identity=EVIL_ID))
    assert r.code == 1 and r.json["trust_level"] != "VERIFIED"
    (c,) = vsa_checks(r.json)
    assert c["status"] == "skip" and EVIL_ID in c["message"] and "trust.verifiers" in c["message"]


def test_keyless_vsa_from_the_listed_identity_for_other_bytes_does_not_admit(world) -> None:
    r = admit(world, mint(world, "for-tool"), tool="other")
    assert r.code == 1 and r.json["trust_level"] != "VERIFIED"
    (c,) = vsa_checks(r.json)
    assert c["status"] == "skip" and "other bytes" in c["message"]


def test_expired_keyless_vsa_denies(world) -> None:
    r = admit(world, mint(world, "old", age=timedelta(days=31)))
    assert r.code == 1
    (c,) = vsa_checks(r.json)
    assert c["status"] == "skip" and "over maxAge 30d" in c["message"]


def test_keyless_vsa_post_dated_after_its_log_entry_denies(world) -> None:
    """A summary signed 40 days ago that claims to have verified an hour ago: the log's integrated
    time shows when it was signed, so the claimed time cannot stretch its maxAge."""
    r = admit(world, mint(world, "post-dated", age=timedelta(hours=1), signed_ago=timedelta(days=40)))
    assert r.code == 1
    (c,) = vsa_checks(r.json)
    assert c["status"] == "skip" and "after the time it was signed" in c["message"]


def test_keyless_failed_vsa_from_the_listed_identity_is_evidence_of_failure(world) -> None:
    failed = mint(world, "failed", result="FAILED", levels=())
    r = admit(world, failed)
    assert r.code == 1
    (c,) = vsa_checks(r.json)
    assert c["status"] == "fail"
    r = admit(world, mint(world, "good-too"), failed)
    assert r.code == 1 and r.json["trust_level"] != "VERIFIED"


@pytest.mark.parametrize("mutate", ["certificate", "signature", "set", "log_key", "payload_hash"])
def test_keyless_vsa_whose_bundle_does_not_verify_is_ignored(world, mutate) -> None:
    """The listed identity, but a certificate from a CA outside the trusted root, a signature over other
    bytes, a forged log promise or log key, a log entry for another payload: sigstore-python refuses
    each, and the VSA counts for nothing."""
    stmt = json.loads(base64.b64decode(json.loads(mint(world, "base").read_text())["dsseEnvelope"]["payload"]))
    bundle = world["ts"].sign_dsse(stmt, identity=CI_ID, issuer=ISSUER, integrated_time=int(time.time()),
                                   mutate=mutate)
    bad = world["dir"] / f"{mutate}.vsa.sigstore.json"
    bad.write_text(json.dumps(bundle))
    r = admit(world, bad)
    assert r.code == 1 and r.json["trust_level"] != "VERIFIED"
    (c,) = vsa_checks(r.json)
    assert c["status"] == "skip" and "not signed by a verifier policy trusts" in c["message"]


def test_identity_regexp_verifier_matches_the_whole_identity_only(world, tmp_path: Path) -> None:
    doc = json.loads(world["policy"].read_text())
    v = doc["trust"]["verifiers"][0]
    del v["identity"]
    v["identityRegexp"] = r"https://github\.com/example-org/ci/\.github/workflows/verify\.yml@refs/heads/main"
    pol = tmp_path / "regexp.json"
    pol.write_text(json.dumps(doc))
    assert admit(world, mint(world, "re-good"), policy=pol).code == 0
    # A prefix match would let a longer identity through; the regexp must match all of it.
    longer = CI_ID + "-evil"
    r = admit(world, mint(world, "re-longer", identity=longer), policy=pol)
    assert r.code == 1 and vsa_checks(r.json)[0]["status"] == "skip"


def test_key_signed_vsa_does_not_count_for_a_keyless_verifier(world, tmp_path: Path) -> None:
    """A verifier named by identity trusts no key: a DSSE envelope signed by any key is ignored."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec

    payload = base64.b64decode(json.loads(mint(world, "src").read_text())["dsseEnvelope"]["payload"])
    ptype = b"application/vnd.in-toto+json"
    pae = b"DSSEv1 %d %s %d %s" % (len(ptype), ptype, len(payload), payload)
    sig = ec.generate_private_key(ec.SECP256R1()).sign(pae, ec.ECDSA(hashes.SHA256()))
    env = tmp_path / "key.vsa.jsonl"
    env.write_text(json.dumps({"payloadType": ptype.decode(), "payload": base64.b64encode(payload).decode(),
                               "signatures": [{"keyid": "", "sig": base64.b64encode(sig).decode()}]}) + "\n")
    r = admit(world, env)
    assert r.code == 1
    assert vsa_checks(r.json)[0]["status"] == "skip"


@pytest.mark.parametrize("entry, needle", [
    ({"id": VERIFIER, "identity": CI_ID, "maxAge": "1d"}, "issuer"),
    ({"id": VERIFIER, "identity": CI_ID, "issuer": ISSUER, "publicKey": "k.pub", "maxAge": "1d"},
     "should not be valid"),
    ({"id": VERIFIER, "identityRegexp": "(", "issuer": ISSUER, "maxAge": "1d"}, "regular expression"),
    ({"id": VERIFIER, "identity": CI_ID, "issuer": ISSUER, "claims": {"nope": "x"}, "maxAge": "1d"}, "claim"),
])
def test_policy_refuses_a_malformed_keyless_verifier(world, tmp_path: Path, entry, needle) -> None:
    pol = tmp_path / "bad.json"
    pol.write_text(json.dumps({"version": 1, "trust": {"verifiers": [entry]}}))
    r = cli("policy", "check", str(pol))
    assert r.code == 2 and needle in r.err, r.err


def test_keyless_verifier_claims_must_match_the_certificate(world, tmp_path: Path) -> None:
    """A verifier entry may pin Fulcio claims (as trust.signers): the right identity from another
    repository owner does not count."""
    doc = json.loads(world["policy"].read_text())
    doc["trust"]["verifiers"][0]["claims"] = {"source_repository_owner_uri": "https://github.com/example-org"}
    pol = tmp_path / "claims.json"
    pol.write_text(json.dumps(doc))
    stmt = json.loads(base64.b64decode(json.loads(mint(world, "c-base").read_text())["dsseEnvelope"]["payload"]))

    def with_owner(owner: str) -> Path:
        bundle = world["ts"].sign_dsse(stmt, identity=CI_ID, issuer=ISSUER, integrated_time=int(time.time()) - 3600,
                                       extensions={"source_repository_owner_uri": owner})
        path = tmp_path / f"{owner.rsplit('/', 1)[-1]}.vsa.sigstore.json"
        path.write_text(json.dumps(bundle))
        return path

    assert admit(world, with_owner("https://github.com/example-org"), policy=pol).code == 0
    r = admit(world, with_owner("https://github.com/evil-org"), policy=pol)
    assert r.code == 1 and vsa_checks(r.json)[0]["status"] == "skip"


def test_pretty_printed_keyless_vsa_bundle_is_read_as_a_bundle(world, tmp_path: Path) -> None:
    """A bundle as sigstore tools may write it (indented JSON over many lines) counts as the one-line form."""
    src = json.loads(mint(world, "one-line").read_text())
    pretty = tmp_path / "pretty.vsa.sigstore.json"
    pretty.write_text(json.dumps(src, indent=2))
    assert admit(world, pretty).code == 0


def test_attack_a_keyless_failed_vsa_after_a_passed_one_in_the_same_file_is_not_skipped(world) -> None:
    """Two bundles from the listed identity in one ``.jsonl``: the PASSED first, then a FAILED. Each is
    a VSA; stopping at the first that verifies would admit from the PASSED one."""
    passed = json.loads(mint(world, "kl-passed").read_text())
    failed = json.loads(mint(world, "kl-failed", result="FAILED", levels=(), age=timedelta(minutes=5)).read_text())
    both = world["dir"] / "kl-both.vsa.jsonl"
    both.write_text(json.dumps(passed) + "\n" + json.dumps(failed) + "\n")
    r = admit(world, both)
    assert r.code == 1 and r.json["trust_level"] != "VERIFIED", r.out
    assert any(c["status"] == "fail" for c in vsa_checks(r.json)), vsa_checks(r.json)
