"""Admission from a SLSA VSA (issue 25 item 3): a tool is VERIFIED from a VSA alone only when a verifier
policy trusts (``trust.verifiers``: its key and id) PASSED these exact bytes, for an allowed resource,
at the required level, under a policy that counts, within the maximum age. A trusted FAILED VSA is
evidence of failure; a VSA signed by anyone else is ignored and reported.

The VSAs are written here with ``cryptography`` alone (the DSSE PAE spelled out), so the admission's
reading of them is checked against an independent writer, with real keys and real files.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from verify_helpers import cli, cli_subprocess, run_cli
from world import World

VERIFIER = "https://ci.example.com/atip-trust/verify"
RESOURCE = "https://github.com/example-org/tool/releases/download/v1.2.0/tool"
POLICY_DIGEST = "sha256:" + "ab" * 32
BODY = b"#!/bin/sh\necho vouched for\n"


def _pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.public_key().public_bytes(serialization.Encoding.PEM,
                                         serialization.PublicFormat.SubjectPublicKeyInfo)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    w = World(tmp_path_factory.mktemp("vsa-admit"), root=None)  # a VSA needs no Sigstore root
    ci, rogue = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    w.public_key("keys/ci.pub", ci)
    pol = w.file("policy.json", {
        "version": 1,
        "trust": {"verifiers": [{"id": VERIFIER, "publicKey": "keys/ci.pub", "resourceUris": [RESOURCE],
                                 "minLevel": 3, "maxAge": "30d", "policyDigests": [POLICY_DIGEST]}]},
        "permissions": {"allow": [{"rule": "tool *", "minTrustLevel": "VERIFIED"}]},
        "defaults": {"noMatch": "deny"},
    })
    return {"dir": w.dir, "ci": ci, "rogue": rogue, "tool": w.tool("tool", BODY),
            "other": w.tool("other-tool", BODY + b"# other bytes\n"), "policy": pol,
            "sha256": hashlib.sha256(BODY).hexdigest()}


@pytest.fixture(autouse=True)
def no_org(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ATIP_TRUST_ORG_POLICY", raising=False)


def write_vsa(world: dict[str, Any], name: str, *, key: Any = None, sha256: str | None = None,
              result: str = "PASSED", levels: tuple[str, ...] = ("SLSA_BUILD_LEVEL_3",),
              age: timedelta = timedelta(hours=1), verifier: str = VERIFIER, resource: str = RESOURCE,
              policy_digest: str = POLICY_DIGEST) -> Path:
    """A VSA written and signed with cryptography alone (DSSE v1 PAE spelled out here)."""
    when = (datetime.now(timezone.utc) - age).strftime("%Y-%m-%dT%H:%M:%SZ")
    alg, _, value = policy_digest.partition(":")
    statement = {
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{"name": "tool", "digest": {"sha256": sha256 or world["sha256"]}}],
        "predicateType": "https://slsa.dev/verification_summary/v1",
        "predicate": {"verifier": {"id": verifier}, "timeVerified": when, "resourceUri": resource,
                      "policy": {"uri": "https://example.com/policy.json", "digest": {alg: value}},
                      "inputAttestations": [], "verificationResult": result, "verifiedLevels": list(levels)},
    }
    payload = json.dumps(statement).encode()
    ptype = b"application/vnd.in-toto+json"
    pae = b"DSSEv1 %d %s %d %s" % (len(ptype), ptype, len(payload), payload)
    sig = (key or world["ci"]).sign(pae, ec.ECDSA(hashes.SHA256()))
    env = {"payloadType": ptype.decode(), "payload": base64.b64encode(payload).decode(),
           "signatures": [{"keyid": "", "sig": base64.b64encode(sig).decode()}]}
    path = world["dir"] / f"{name}.vsa.jsonl"
    path.write_text(json.dumps(env) + "\n")
    return path


def admit(world: dict[str, Any], *vsas: Path, tool: str = "tool") -> Any:
    args = [a for v in vsas for a in ("--vsa", str(v))]
    r = cli("admit", str(world[tool]), "--command", "status", "--policy", str(world["policy"]), *args,
            "--non-interactive", "--no-audit", "--no-cache", "--format", "json")
    return r


def vsa_checks(out: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in out["checks"] if c["name"] == "vsa"]


def test_without_a_vsa_the_unsigned_tool_is_denied(world) -> None:
    r = admit(world)
    assert r.code == 1 and r.json["decision"]["behavior"] == "deny"


def test_trusted_passed_vsa_of_these_bytes_admits_from_the_vsa_alone(world) -> None:
    r = admit(world, write_vsa(world, "good"))
    assert r.code == 0, r.out
    out = r.json
    assert out["trust_level"] == "VERIFIED" and out["decision"]["behavior"] == "allow"
    assert [c["status"] for c in vsa_checks(out)] == ["pass"]


def test_vsa_for_other_bytes_does_not_admit_this_tool(world) -> None:
    """Exact digest only: the same VSA admits its own subject and nothing else."""
    vsa = write_vsa(world, "for-tool")
    r = admit(world, vsa, tool="other")
    assert r.code == 1 and r.json["trust_level"] != "VERIFIED"
    (c,) = vsa_checks(r.json)
    assert c["status"] == "skip" and "other bytes" in c["message"]


@pytest.mark.parametrize("case, kw, needle", [
    ("expired", {"age": timedelta(days=31)}, "over maxAge 30d"),
    ("from the future", {"age": -timedelta(days=1)}, "in the future"),
    ("other policy", {"policy_digest": "sha256:" + "cd" * 32}, "policyDigests"),
    ("level too low", {"levels": ("SLSA_BUILD_LEVEL_2",)}, "below SLSA_BUILD_LEVEL_3"),
    ("resource not allowed", {"resource": RESOURCE + "-fork"}, "resourceUri"),
    ("another verifier id under the trusted key", {"verifier": "https://evil.example/v"}, "verifier.id"),
])
def test_trusted_key_but_vsa_outside_policy_denies(world, case, kw, needle) -> None:
    r = admit(world, write_vsa(world, case.replace(" ", "-"), **kw))
    assert r.code == 1, case
    assert r.json["trust_level"] != "VERIFIED"
    (c,) = vsa_checks(r.json)
    assert c["status"] == "skip" and needle in c["message"], c


def test_untrusted_verifier_is_ignored_and_reported(world) -> None:
    r = admit(world, write_vsa(world, "rogue", key=world["rogue"]))
    assert r.code == 1 and r.json["trust_level"] != "VERIFIED"
    (c,) = vsa_checks(r.json)
    assert c["status"] == "skip" and "not signed by a verifier policy trusts" in c["message"]


def test_trusted_failed_vsa_is_evidence_of_failure(world) -> None:
    failed = write_vsa(world, "failed", result="FAILED", levels=())
    r = admit(world, failed)
    assert r.code == 1 and r.json["decision"]["behavior"] == "deny"
    (c,) = vsa_checks(r.json)
    assert c["status"] == "fail"
    # and it outweighs a PASSED one: the verifier's failure stands
    r = admit(world, write_vsa(world, "good2"), failed)
    assert r.code == 1 and r.json["trust_level"] != "VERIFIED"


def test_tampered_vsa_is_not_signed_by_the_verifier(world) -> None:
    good = write_vsa(world, "tamper")
    env = json.loads(good.read_text())
    st = json.loads(base64.b64decode(env["payload"]))
    st["subject"][0]["digest"]["sha256"] = hashlib.sha256((world["dir"] / "other-tool").read_bytes()).hexdigest()
    env["payload"] = base64.b64encode(json.dumps(st).encode()).decode()
    good.write_text(json.dumps(env))
    r = admit(world, good, tool="other")
    assert r.code == 1
    (c,) = vsa_checks(r.json)
    assert "not signed by a verifier policy trusts" in c["message"]


def test_library_admit_takes_vsas(world) -> None:
    import atip_trust

    adm = atip_trust.admit(world["tool"], policy=world["policy"], command="status",
                           vsas=[write_vsa(world, "lib")], audit=False, cache=False)
    assert adm.behavior == "allow"


def test_exec_finds_the_vsa_by_digest_in_bundle_dir(world, tmp_path: Path) -> None:
    bdir = tmp_path / "bundles" / "sha256"
    bdir.mkdir(parents=True)
    src = write_vsa(world, "by-digest")
    (bdir / f"{world['sha256']}.vsa.jsonl").write_bytes(src.read_bytes())
    doc = json.loads(world["policy"].read_text())
    doc["trust"]["verifiers"][0]["publicKey"] = str(world["dir"] / "keys" / "ci.pub")
    doc["permissions"]["allow"].append({"rule": "sh *", "minTrustLevel": "UNSIGNED"})  # the script's interpreter
    pol = tmp_path / "exec-policy.json"
    pol.write_text(json.dumps(doc))
    r = cli_subprocess("exec", "--policy", str(pol), "--bundle-dir", str(tmp_path / "bundles"),
            "--non-interactive", "--no-audit", "--", str(world["tool"]), "status")
    assert r.code == 0, (r.out, r.err)
    assert r.out == "vouched for\n"  # the verified bytes ran (exec replaces the process: a subprocess)


def test_policy_schema_refuses_a_verifier_without_max_age(world, tmp_path: Path) -> None:
    pol = tmp_path / "p.json"
    pol.write_text(json.dumps({"version": 1, "trust": {"verifiers": [{"id": VERIFIER, "publicKey": "k.pub"}]}}))
    r = cli("admit", str(world["tool"]), "--policy", str(pol), "--non-interactive", "--no-audit")
    assert r.code == 2 and "maxAge" in r.err
    assert os.path.exists(pol)


def test_agent_hook_takes_the_vsa_by_digest_in_bundle_dir(world, tmp_path: Path) -> None:
    """An agent's pre-tool hook (Claude Code's JSON) allows the vouched-for program, and only with its VSA."""

    bindir = tmp_path / "bin"
    bindir.mkdir()
    prog = bindir / "vtool"
    prog.write_bytes(BODY)
    prog.chmod(0o755)
    doc = json.loads(world["policy"].read_text())
    doc["trust"]["verifiers"][0]["publicKey"] = str(world["dir"] / "keys" / "ci.pub")
    doc["permissions"]["allow"] = [{"rule": "Bash(vtool *)", "minTrustLevel": "VERIFIED"},
                                   {"rule": "Bash(sh *)", "minTrustLevel": "UNSIGNED"}]  # its #! interpreter
    pol = tmp_path / "hook-policy.json"
    pol.write_text(json.dumps(doc))
    bundles = tmp_path / "bundles"
    (bundles / "sha256").mkdir(parents=True)
    stdin = json.dumps({"session_id": "s", "transcript_path": "/tmp/t.jsonl", "cwd": str(tmp_path),
                        "permission_mode": "default", "hook_event_name": "PreToolUse", "tool_name": "Bash",
                        "tool_input": {"command": "vtool status"}, "tool_use_id": "t1"})
    env = {**os.environ, "PATH": f"{bindir}:{os.environ.get('PATH', '')}"}
    env.pop("ATIP_TRUST_ORG_POLICY", None)

    def ask() -> str:
        p = run_cli(["hook", "claude-code", "--policy", str(pol), "--bundle-dir", str(bundles), "--no-audit"],
                    input=stdin, env=env, timeout=120)
        assert p.returncode == 0, p.stderr
        return str(json.loads(p.stdout)["hookSpecificOutput"]["permissionDecision"])

    assert ask() != "allow"
    (bundles / "sha256" / f"{world['sha256']}.vsa.jsonl").write_bytes(write_vsa(world, "hook").read_bytes())
    assert ask() == "allow"


def test_local_verifier_counts_for_nothing_under_an_org_that_fixes_the_anchors(world, tmp_path: Path,
                                                                               monkeypatch) -> None:
    """A local policy cannot name a verifier whose key its author holds and so vouch for anything past
    an org that states the trust anchors (signers) and no verifier."""
    org = tmp_path / "org.json"
    org.write_text(json.dumps({"version": 1, "trust": {"signers": [
        {"identity": "https://github.com/example-org/x/.github/workflows/r.yml@refs/heads/main",
         "issuer": "https://token.actions.githubusercontent.com"}]}}))
    org.chmod(0o644)
    monkeypatch.setenv("ATIP_TRUST_ORG_POLICY", str(org))
    r = admit(world, write_vsa(world, "under-org"))
    assert r.code == 1 and r.json["trust_level"] != "VERIFIED"
    (c,) = vsa_checks(r.json)
    assert c["status"] == "skip" and "not signed by a verifier policy trusts" in c["message"]
    # and an org that names the verifier itself makes it count
    doc = json.loads(org.read_text())
    doc["trust"]["verifiers"] = [{"id": VERIFIER, "publicKey": str(world["dir"] / "keys" / "ci.pub"),
                                  "maxAge": "30d"}]
    org.write_text(json.dumps(doc))
    r = admit(world, write_vsa(world, "org-named"))
    assert r.json["trust_level"] == "VERIFIED"


def test_attack_a_trusted_failed_vsa_on_a_later_line_of_the_same_file_is_not_skipped(world) -> None:
    """A ``.vsa.jsonl`` holding the verifier's PASSED and then its newer FAILED (e.g. appended on
    re-verification): every line is a VSA, and a trusted FAILED stands over any PASSED (docs/vsa.md).
    Reading the first line alone would admit from the PASSED one."""
    passed = write_vsa(world, "line-passed")
    failed = write_vsa(world, "line-failed", result="FAILED", levels=(), age=timedelta(minutes=5))
    both = world["dir"] / "both.vsa.jsonl"
    both.write_text(passed.read_text() + failed.read_text())
    r = admit(world, both)
    assert r.code == 1 and r.json["trust_level"] != "VERIFIED", r.out
    assert sorted(c["status"] for c in vsa_checks(r.json)) == ["fail", "pass"], vsa_checks(r.json)


def test_attack_an_untrusted_first_line_does_not_hide_a_trusted_failed_vsa(world) -> None:
    rogue = write_vsa(world, "line-rogue", key=world["rogue"])
    failed = write_vsa(world, "line-failed2", result="FAILED", levels=())
    both = world["dir"] / "rogue-then-failed.vsa.jsonl"
    both.write_text(rogue.read_text() + "\n" + failed.read_text())
    r = admit(world, both)
    assert r.code == 1 and any(c["status"] == "fail" for c in vsa_checks(r.json)), r.out


def test_attack_a_second_verifiers_key_cannot_claim_the_strict_verifiers_id(world, tmp_path: Path) -> None:
    """Two entries: the strict release verifier and a lax one with another key (any resource, any level,
    any policy). The lax key signs a VSA that claims the strict verifier's id, for a resource and level
    only the lax entry would accept: the id is bound to the key that signed, so it is ignored."""
    w = World(tmp_path, root=None)
    w.public_key("keys/ci.pub", world["ci"])
    w.public_key("keys/lax.pub", world["rogue"])
    doc = json.loads(world["policy"].read_text())
    doc["trust"]["verifiers"][0]["publicKey"] = str(world["dir"] / "keys" / "ci.pub")
    doc["trust"]["verifiers"].append({"id": "https://lax.example/v", "publicKey": str(tmp_path / "keys" / "lax.pub"),
                                      "maxAge": "30d"})
    pol = tmp_path / "two-verifiers.json"
    pol.write_text(json.dumps(doc))
    vsa = write_vsa(world, "spoofed-id", key=world["rogue"], levels=(), resource=RESOURCE + "-fork",
                    policy_digest="sha256:" + "cd" * 32)
    r = cli("admit", str(world["tool"]), "--command", "status", "--policy", str(pol), "--vsa", str(vsa),
            "--non-interactive", "--no-audit", "--no-cache", "--format", "json")
    assert r.code == 1 and r.json["trust_level"] != "VERIFIED", r.out
    (c,) = vsa_checks(r.json)
    assert c["status"] == "skip" and "verifier.id" in c["message"], c
