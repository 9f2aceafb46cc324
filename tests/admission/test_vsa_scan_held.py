"""VSAs as evidence in ``scan`` (discovery) and in a ``HeldTool`` (issue 25 item 3): the same rule as
``admit``: VERIFIED from a VSA only when a verifier ``trust.verifiers`` lists PASSED this exact digest
at the required level, under a listed policy digest, within its maximum age.

VSAs are written with ``cryptography`` alone (the DSSE PAE spelled out) and, for the keyless case, by
the local test Sigstore; the admission reads them through the real code. A held tool's clock is moved
by replacing ``datetime`` in the module that reads the time (admission/vsa.py) (never a sleep): the question is what
the held tool decides *after* the VSA's maximum age, not how long a test waits.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from verify_helpers import cli

VERIFIER = "https://ci.example.com/atip-trust/verify"
RESOURCE = "https://github.com/example-org/tool/releases/download/v1.2.0/tool"
POLICY_DIGEST = "sha256:" + "ab" * 32
CI_ID = "https://github.com/example-org/ci/.github/workflows/verify.yml@refs/heads/main"
ISSUER = "https://token.actions.githubusercontent.com"
BODY = b"#!/bin/sh\necho scanned\n"
OTHER = b"#!/bin/sh\necho other bytes\n"


@pytest.fixture()
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    import testsigstore

    monkeypatch.delenv("ATIP_TRUST_ORG_POLICY", raising=False)
    ci, rogue = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    pub = tmp_path / "ci.pub"
    pub.write_bytes(ci.public_key().public_bytes(serialization.Encoding.PEM,
                                                 serialization.PublicFormat.SubjectPublicKeyInfo))
    bins = tmp_path / "bin"
    bins.mkdir()
    bins.chmod(0o755)
    for name, body in (("tool", BODY), ("other", OTHER)):
        (bins / name).write_bytes(body)
        (bins / name).chmod(0o755)
    ts = testsigstore.TestSigstore(seed=2504)
    root = ts.write_trusted_root(tmp_path / "trusted_root.json")
    pol = tmp_path / "policy.json"
    pol.write_text(json.dumps({
        "version": 1,
        "trust": {"verifiers": [
            {"id": VERIFIER, "publicKey": str(pub), "resourceUris": [RESOURCE], "minLevel": 3, "maxAge": "30d",
             "policyDigests": [POLICY_DIGEST]},
            {"id": VERIFIER, "identity": CI_ID, "issuer": ISSUER, "maxAge": "30d"}]},
        "permissions": {"allow": [{"rule": "tool *", "minTrustLevel": "VERIFIED"},
                                  {"rule": "other *", "minTrustLevel": "VERIFIED"}]},
        "defaults": {"noMatch": "deny"},
    }))
    return {"dir": tmp_path, "ci": ci, "rogue": rogue, "bins": bins, "policy": pol, "ts": ts, "root": root,
            "sha256": hashlib.sha256(BODY).hexdigest(), "other_sha256": hashlib.sha256(OTHER).hexdigest()}


def statement(sha256: str, *, result: str, age: timedelta, levels: tuple[str, ...],
              policy_digest: str = POLICY_DIGEST) -> dict[str, Any]:
    alg, _, value = policy_digest.partition(":")
    return {"_type": "https://in-toto.io/Statement/v1", "subject": [{"name": "tool", "digest": {"sha256": sha256}}],
            "predicateType": "https://slsa.dev/verification_summary/v1",
            "predicate": {"verifier": {"id": VERIFIER},
                          "timeVerified": (datetime.now(timezone.utc) - age).strftime("%Y-%m-%dT%H:%M:%SZ"),
                          "resourceUri": RESOURCE, "policy": {"uri": "https://example.com/p.json",
                                                              "digest": {alg: value}},
                          "inputAttestations": [], "verificationResult": result, "verifiedLevels": list(levels)}}


def write_vsa(world: dict[str, Any], path: Path, *, key: Any = None, sha256: str | None = None,
              result: str = "PASSED", age: timedelta = timedelta(hours=1),
              levels: tuple[str, ...] = ("SLSA_BUILD_LEVEL_3",), policy_digest: str = POLICY_DIGEST) -> Path:
    payload = json.dumps(statement(sha256 or world["sha256"], result=result, age=age, levels=levels,
                                   policy_digest=policy_digest)).encode()
    ptype = b"application/vnd.in-toto+json"
    pae = b"DSSEv1 %d %s %d %s" % (len(ptype), ptype, len(payload), payload)
    sig = (key or world["ci"]).sign(pae, ec.ECDSA(hashes.SHA256()))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"payloadType": ptype.decode(), "payload": base64.b64encode(payload).decode(),
                                "signatures": [{"keyid": "", "sig": base64.b64encode(sig).decode()}]}) + "\n")
    return path


def write_keyless_vsa(world: dict[str, Any], path: Path, identity: str) -> Path:
    stmt = statement(world["sha256"], result="PASSED", age=timedelta(hours=1), levels=("SLSA_BUILD_LEVEL_3",))
    bundle = world["ts"].sign_dsse(stmt, identity=identity, issuer=ISSUER, integrated_time=int(time.time()) - 3600)
    path.write_text(json.dumps(bundle) + "\n")
    return path


# --- scan ----------------------------------------------------------------------------------------------

def scan(world: dict[str, Any], *flags: str) -> dict[str, dict[str, Any]]:
    r = cli("scan", str(world["bins"]), "--policy", str(world["policy"]), "--trusted-root", str(world["root"]),
            "--no-cache", "--format", "json", *flags)
    assert r.code == 0, (r.out, r.err)
    rows = json.loads(r.out)
    return {row["tool"]: row for row in rows}


def vsa_checks(row: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in row["checks"] if c["name"] == "vsa"]


def test_scan_takes_a_vsa_for_the_tool_it_names_and_no_other(world) -> None:
    vsa = write_vsa(world, world["dir"] / "tool.vsa.jsonl")
    rows = scan(world, "--vsa", str(vsa))
    assert rows["tool"]["trust_level"] == "VERIFIED", rows["tool"]
    assert [c["status"] for c in vsa_checks(rows["tool"])] == ["pass"]
    assert rows["other"]["trust_level"] != "VERIFIED" and vsa_checks(rows["other"]) == []


def test_scan_finds_the_vsa_by_digest_in_bundle_dir(world) -> None:
    bundles = world["dir"] / "bundles"
    write_vsa(world, bundles / "sha256" / f"{world['sha256']}.vsa.jsonl")
    rows = scan(world, "--bundle-dir", str(bundles))
    assert rows["tool"]["trust_level"] == "VERIFIED"
    assert rows["other"]["trust_level"] != "VERIFIED"


@pytest.mark.parametrize("case, kw, status, needle", [
    ("untrusted key", {"key": "rogue"}, "skip", "not signed by a verifier policy trusts"),
    ("expired", {"age": timedelta(days=31)}, "skip", "over maxAge"),
    ("FAILED", {"result": "FAILED", "levels": ()}, "fail", "reported FAILED"),
    ("other policy", {"policy_digest": "sha256:" + "cd" * 32}, "skip", "policyDigests"),
    ("level too low", {"levels": ("SLSA_BUILD_LEVEL_2",)}, "skip", "below SLSA_BUILD_LEVEL_3"),
])
def test_scan_does_not_verify_a_tool_from_a_vsa_outside_policy(world, case, kw, status, needle) -> None:
    if kw.get("key") == "rogue":
        kw = {**kw, "key": world["rogue"]}
    vsa = write_vsa(world, world["dir"] / "case.vsa.jsonl", **kw)
    rows = scan(world, "--vsa", str(vsa))
    assert rows["tool"]["trust_level"] != "VERIFIED", case
    (c,) = vsa_checks(rows["tool"])
    assert c["status"] == status and needle in c["message"], c


def test_scan_vsa_naming_one_tool_but_signed_over_another_is_only_offered_where_it_is_checked(world) -> None:
    """A VSA whose statement claims the other tool's digest is routed there, and there its signature
    and subject are checked in full: the claim used for routing grants nothing by itself."""
    vsa = write_vsa(world, world["dir"] / "for-other.vsa.jsonl", sha256=world["other_sha256"], key=world["rogue"])
    rows = scan(world, "--vsa", str(vsa))
    assert vsa_checks(rows["tool"]) == []
    (c,) = vsa_checks(rows["other"])
    assert c["status"] == "skip" and rows["other"]["trust_level"] != "VERIFIED"


def test_scan_keyless_vsa_counts_for_the_listed_identity_only(world) -> None:
    good = write_keyless_vsa(world, world["dir"] / "keyless.vsa.jsonl", CI_ID)
    assert scan(world, "--vsa", str(good))["tool"]["trust_level"] == "VERIFIED"
    evil = write_keyless_vsa(world, world["dir"] / "evil.vsa.jsonl",
                             "https://github.com/evil-org/ci/.github/workflows/verify.yml@refs/heads/main")
    row = scan(world, "--vsa", str(evil))["tool"]
    assert row["trust_level"] != "VERIFIED" and "evil-org" in vsa_checks(row)[0]["message"]


def test_scan_refuses_a_vsa_file_that_is_no_vsa(world) -> None:
    bad = world["dir"] / "bad.vsa.jsonl"
    bad.write_text('{"hello": "world"}\n')
    r = cli("scan", str(world["bins"]), "--policy", str(world["policy"]), "--vsa", str(bad), "--no-cache")
    assert r.code == 2 and "not a VSA" in r.err


# --- HeldTool ------------------------------------------------------------------------------------------

@pytest.fixture()
def clock(monkeypatch: pytest.MonkeyPatch) -> dict[str, timedelta]:
    """Move the clock the VSA checks and the held tool read (both through admission/vsa.py)."""
    import atip_trust.admission.vsa as vsa_mod

    shift = {"by": timedelta(0)}

    class Shifted(datetime):
        @classmethod
        def now(cls, tz: Any = None) -> Any:  # type: ignore[override]
            return datetime.now(tz) + shift["by"]

    monkeypatch.setattr(vsa_mod, "datetime", Shifted)
    return shift


def held(world: dict[str, Any], **kw: Any) -> Any:
    from atip_trust import HeldTool

    return HeldTool.open(world["bins"] / "tool", policy=world["policy"], trusted_root=world["root"], audit=False,
                         cache=False, **kw)


def test_held_tool_admits_from_a_trusted_vsa_and_denies_once_it_is_past_max_age(world, clock) -> None:
    vsa = write_vsa(world, world["dir"] / "held.vsa.jsonl", age=timedelta(days=29))
    with held(world, vsas=[vsa]) as tool:
        assert tool.admit("status").behavior == "allow"
        # VSAs age: a tool held with them is admitted in full on every call, never decided on a held report
        assert tool.admit("status").cache != "held"
        clock["by"] = timedelta(days=2)  # the VSA is now 31 days old: over maxAge 30d
        adm = tool.admit("status")
        assert adm.behavior == "deny" and adm.report.trust_level.name != "VERIFIED"
        assert any("over maxAge" in c.message for c in adm.report.checks if c.name == "vsa")


def test_held_tool_replaced_vsa_failed_is_decided_on_the_new_vsa(world) -> None:
    vsa = write_vsa(world, world["dir"] / "held.vsa.jsonl")
    with held(world, vsas=[vsa]) as tool:
        assert tool.admit("status").behavior == "allow"
        write_vsa(world, vsa, result="FAILED", levels=())
        assert tool.admit("status").behavior == "deny"


def test_held_tool_sees_a_vsa_that_appears_in_bundle_dir_by_digest(world) -> None:
    bundles = world["dir"] / "bundles"
    bundles.mkdir()
    with held(world, bundle_dir=bundles) as tool:
        assert tool.admit("status").behavior == "deny"
        assert tool.admit("status").cache != "held"  # a VSA may appear by digest at any call
        write_vsa(world, bundles / "sha256" / f"{world['sha256']}.vsa.jsonl")
        assert tool.admit("status").behavior == "allow"
        # and a trusted FAILED one appearing beside it takes the trust away again
        write_vsa(world, bundles / f"{world['sha256']}.vsa.jsonl", result="FAILED", levels=())
        assert tool.admit("status").behavior == "deny"


@pytest.mark.parametrize("case", ["untrusted key", "other digest"])
def test_held_tool_does_not_trust_a_vsa_outside_policy(world, case) -> None:
    kw = {"key": world["rogue"]} if case == "untrusted key" else {"sha256": world["other_sha256"]}
    vsa = write_vsa(world, world["dir"] / "case.vsa.jsonl", **kw)
    with held(world, vsas=[vsa]) as tool:
        assert tool.admit("status").behavior == "deny"


def test_held_tool_takes_a_keyless_vsa_by_identity(world) -> None:
    vsa = write_keyless_vsa(world, world["dir"] / "keyless.vsa.jsonl", CI_ID)
    with held(world, vsas=[vsa]) as tool:
        assert tool.admit("status").behavior == "allow"


def test_attack_scan_routes_a_vsa_file_by_every_vsa_in_it_not_the_first_line(world) -> None:
    """A ``.vsa.jsonl`` whose first line is about the other tool and whose second is the verifier's
    FAILED for this one: routing by the first line alone would drop the evidence of failure, and the
    tool would be VERIFIED from its PASSED VSA."""
    good = write_vsa(world, world["dir"] / "tool-passed.vsa.jsonl")
    first = write_vsa(world, world["dir"] / "l1.vsa.jsonl", sha256=world["other_sha256"])
    second = write_vsa(world, world["dir"] / "l2.vsa.jsonl", result="FAILED", levels=())
    mixed = world["dir"] / "mixed.vsa.jsonl"
    mixed.write_text(first.read_text() + second.read_text())
    rows = scan(world, "--vsa", str(good), "--vsa", str(mixed))
    assert rows["tool"]["trust_level"] != "VERIFIED", rows["tool"]
    assert "fail" in [c["status"] for c in vsa_checks(rows["tool"])]


def test_attack_held_tool_artifact_is_the_bytes_the_last_call_decided_on(world) -> None:
    """A tool held with a bundle_dir is admitted in full at each call, from its path. The bytes held at
    ``open`` (A) are later FAILED by the verifier, and the path now names other bytes (B) the verifier
    PASSED: the call allows B, and ``held.artifact`` (what a runtime runs, ``exec_fd``) must be B, never
    the A held since ``open``."""
    bundles = world["dir"] / "bundles"
    write_vsa(world, bundles / "sha256" / f"{world['sha256']}.vsa.jsonl")
    path = world["bins"] / "tool"
    with held(world, bundle_dir=bundles) as tool:
        assert tool.admit("status").behavior == "allow"
        write_vsa(world, bundles / "sha256" / f"{world['sha256']}.vsa.jsonl", result="FAILED", levels=())
        write_vsa(world, bundles / "sha256" / f"{world['other_sha256']}.vsa.jsonl", sha256=world["other_sha256"])
        new = world["bins"] / "tool.new"
        new.write_bytes(OTHER)
        new.chmod(0o755)
        os.replace(new, path)
        adm = tool.admit("status")
        assert adm.behavior == "allow" and str(adm.report.digests["sha256"]).endswith(world["other_sha256"])
        assert hashlib.sha256(os.pread(tool.artifact.fd, 1 << 16, 0)).hexdigest() == world["other_sha256"]
