"""Issue 33 item 1 and 8: one anchor set, from the org (policy/anchors.py); a local layer, a flag or a second
org file only narrows it; ``permissions.localAllow: false`` keeps local allow rules from widening the org.

Each road of the issue as an attacker would take it, with its control (the same evidence admitted once
the org itself grants the anchor), so the attack test is known to be live. Real files, real bundles
from the local test Sigstore, real VSAs signed with real keys, the CLI as users call it.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from test_vsa_admit import write_vsa
from verify_helpers import cli
from world import ISSUER, ORG_ID, World

TOOL = b"#!/bin/sh\necho anchors\n"
VERIFIER = "https://ci.example.com/atip-trust/verify"
RESOURCE = "https://github.com/example-org/tool/releases/download/v1.2.0/tool"
POLICY_DIGEST = "sha256:" + "ab" * 32
SIGNER = {"identity": ORG_ID, "issuer": ISSUER}
ALLOW_VERIFIED = {"permissions": {"allow": [{"rule": "tool *", "minTrustLevel": "VERIFIED"}]},
                  "defaults": {"noMatch": "deny"}}


def _verifier(key: str) -> dict[str, Any]:
    return {"id": VERIFIER, "publicKey": key, "resourceUris": [RESOURCE], "minLevel": 3, "maxAge": "30d",
            "policyDigests": [POLICY_DIGEST]}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    w = World(tmp_path_factory.mktemp("anchor-set"), seed=93)
    ci, rogue = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    w.public_key("keys/ci.pub", ci)
    w.public_key("keys/rogue.pub", rogue)
    root_v2 = w.ts.write_trusted_root_v2(w.dir / "root-v2.json")  # lists logs and a TSA
    tool = w.tool("tool", TOOL)
    signed = w.file("tool.sigstore.json", w.signed(TOOL, identity=ORG_ID))
    # Timestamp-only: the same identity, no log entry (GitHub's instance signs so; here it is a stripped bundle).
    stripped = w.file("tool.tsa.sigstore.json", w.ts.sign_artifact_v2(TOOL, identity=ORG_ID, issuer=ISSUER,
                                                                      tlog=False))
    d = {"dir": w.dir, "ci": ci, "rogue": rogue, "sha256": hashlib.sha256(TOOL).hexdigest()}
    d["key_bundle"] = w.file("tool.key.sigstore.json", w.ts.sign_with_key(TOOL, rogue))
    return {**d, "root": w.root, "root_v2": root_v2, "tool": tool, "signed": signed, "stripped": stripped,
            "rogue_vsa": write_vsa(d, "rogue", key=rogue), "ci_vsa": write_vsa(d, "ci")}


def _dump(path: Path, doc: dict[str, Any]) -> Path:
    path.write_text(json.dumps(doc))
    path.chmod(0o644)
    return path


@pytest.fixture
def org(monkeypatch: pytest.MonkeyPatch, world: dict[str, Any]) -> Any:
    """The machine's org policy (ATIP_TRUST_ORG_POLICY; no /etc file)."""
    from atip_trust.policy import load

    monkeypatch.setattr(load, "standard_org_policy_path", lambda: str(world["dir"] / "absent-org.json"))

    def install(name: str, doc: dict[str, Any]) -> Path:
        p = _dump(world["dir"] / f"org-{name}.json", {"version": 1, **doc})
        monkeypatch.setenv("ATIP_TRUST_ORG_POLICY", str(p))
        return p

    return install


def _local(world: dict[str, Any], name: str, doc: dict[str, Any]) -> Path:
    return _dump(world["dir"] / f"local-{name}.json", {"version": 1, **ALLOW_VERIFIED, **doc})


def _admit(world: dict[str, Any], policy: Path, *extra: str, bundle: str | None = "signed") -> Any:
    ev = ["--bundle", str(world[bundle])] if bundle else []
    return cli("admit", str(world["tool"]), "--command", "status", "--policy", str(policy), *ev, *extra,
               "--non-interactive", "--no-audit", "--no-cache", "--format", "json")


# -- road: a local requireTransparencyLog: false under the org's pinned root -------------------------


def test_attack_local_tlog_false_cannot_lift_the_log_the_orgs_pinned_root_implies(world, org) -> None:
    """The org pins a root that lists logs (a log entry implied); a local `false` would let a bundle
    stripped of its entry verify on its timestamp alone."""
    org("pinned-v2", {"trust": {"signers": [SIGNER], "trustedRoots": [{"path": str(world["root_v2"])}]}})
    p = _local(world, "tlog-false", {"trust": {"requireTransparencyLog": False}})
    r = _admit(world, p, bundle="stripped")
    assert r.code == 1 and r.json["trust_level"] != "VERIFIED", r.out
    from atip_trust.policy.compose import load_policy

    policy = load_policy(p)
    assert policy.tlog_required is None
    assert any("requireTransparencyLog false ignored" in n for n in policy.notes), policy.notes


def test_control_the_org_itself_allowing_timestamp_only_verifies(world, org) -> None:
    org("pinned-v2-tsa", {"trust": {"signers": [SIGNER], "trustedRoots": [{"path": str(world["root_v2"])}],
                                    "requireTransparencyLog": False}})
    p = _local(world, "plain", {})
    r = _admit(world, p, bundle="stripped")
    assert r.code == 0 and r.json["trust_level"] == "VERIFIED", r.out


def test_a_local_tlog_true_still_narrows_the_org(world, org) -> None:
    org("pinned-v2-tsa-2", {"trust": {"signers": [SIGNER], "trustedRoots": [{"path": str(world["root_v2"])}],
                                      "requireTransparencyLog": False}})
    r = _admit(world, _local(world, "tlog-true", {"trust": {"requireTransparencyLog": True}}), bundle="stripped")
    assert r.code == 1 and r.json["trust_level"] != "VERIFIED", r.out


# -- road: a second org layer (--org-policy) adding an anchor ----------------------------------------


def test_attack_a_second_org_policy_cannot_add_a_verifier(world, org) -> None:
    """The machine's org trusts the CI verifier; an --org-policy whose author holds another key names
    that key as a verifier too. Org layers intersect: only verifiers both grant count."""
    org("ci-verifier", {"trust": {"verifiers": [_verifier(str(world["dir"] / "keys/ci.pub"))]}})
    second = _dump(world["dir"] / "second-org.json",
                   {"version": 1, "trust": {"verifiers": [_verifier(str(world["dir"] / "keys/rogue.pub"))]}})
    p = _local(world, "plain-2", {})
    r = _admit(world, p, "--org-policy", str(second), "--vsa", str(world["rogue_vsa"]), bundle=None)
    assert r.code == 1 and r.json["trust_level"] != "VERIFIED", r.out
    # The machine's own verifier no longer counts either (the second file does not grant it): narrower.
    r = _admit(world, p, "--org-policy", str(second), "--vsa", str(world["ci_vsa"]), bundle=None)
    assert r.code == 1, r.out


def test_control_the_machines_org_verifier_admits_from_its_vsa(world, org) -> None:
    org("ci-verifier-2", {"trust": {"verifiers": [_verifier(str(world["dir"] / "keys/ci.pub"))]}})
    r = _admit(world, _local(world, "plain-3", {}), "--vsa", str(world["ci_vsa"]), bundle=None)
    assert r.code == 0 and r.json["trust_level"] == "VERIFIED", r.out


def test_attack_a_second_org_policy_cannot_add_a_signer_or_root(world, org) -> None:
    """The machine's org fixes the anchors (a verifier only); a second org file names the test root and
    the release identity the attacker can mint under it."""
    org("ci-verifier-3", {"trust": {"verifiers": [_verifier(str(world["dir"] / "keys/ci.pub"))]}})
    second = _dump(world["dir"] / "second-org-root.json", {"version": 1, "trust": {
        "signers": [SIGNER], "trustedRoots": [{"path": str(world["root"])}]}})
    r = _admit(world, _local(world, "plain-4", {}), "--org-policy", str(second))
    assert r.code in (1, 2) and r.json.get("trust_level") != "VERIFIED", r.out


def test_attack_a_second_org_policy_cannot_add_a_public_key(world, org) -> None:
    """The machine's org fixes the anchors (its root, no key); a second org file lists the attacker's
    key, and `--key` offers it."""
    org("root-only", {"trust": {"trustedRoots": [{"path": str(world["root"])}]}})
    second = _dump(world["dir"] / "second-org-key.json", {"version": 1, "trust": {
        "trustedRoots": [{"path": str(world["root"])}], "publicKeys": [{"path": str(world["dir"] / "keys/rogue.pub")}]}})
    p = _local(world, "plain-5", {})
    r = _admit(world, p, "--org-policy", str(second), "--key", str(world["dir"] / "keys/rogue.pub"), bundle="key_bundle")
    assert r.code in (1, 2) and r.json.get("trust_level") != "VERIFIED", r.out
    # Control: both org files list the key: it counts.
    org("root-key", {"trust": {"trustedRoots": [{"path": str(world["root"])}],
                               "publicKeys": [{"path": str(world["dir"] / "keys/rogue.pub")}]}})
    r = _admit(world, p, "--org-policy", str(second), "--key", str(world["dir"] / "keys/rogue.pub"), bundle="key_bundle")
    assert r.code == 0 and r.json["trust_level"] == "VERIFIED", r.out


# -- road: an org whose only anchor is a verifier ----------------------------------------------------


def test_attack_org_with_only_a_verifier_fixes_the_anchor_set(world, org) -> None:
    """A verifier is an anchor like a signer: an org that names only one fixes the whole set, so a local
    root and signer cannot sign their way to VERIFIED."""
    org("only-verifier", {"trust": {"verifiers": [_verifier(str(world["dir"] / "keys/ci.pub"))]}})
    p = _local(world, "root-and-signer", {"trust": {"trustedRoots": [{"path": str(world["root"])}],
                                                    "signers": [SIGNER]}})
    r = _admit(world, p)
    assert r.code in (1, 2) and r.json.get("trust_level") != "VERIFIED", r.out


def test_control_without_an_org_the_local_root_and_signer_verify(world, monkeypatch) -> None:
    monkeypatch.delenv("ATIP_TRUST_ORG_POLICY", raising=False)
    from atip_trust.policy import load

    monkeypatch.setattr(load, "standard_org_policy_path", lambda: str(world["dir"] / "absent-org.json"))
    p = _local(world, "root-and-signer-2", {"trust": {"trustedRoots": [{"path": str(world["root"])}],
                                                      "signers": [SIGNER]}})
    r = _admit(world, p)
    assert r.code == 0 and r.json["trust_level"] == "VERIFIED", r.out


def test_a_local_verifier_list_under_the_org_is_ignored(world, org) -> None:
    org("signers-only", {"trust": {"signers": [SIGNER]}})
    p = _local(world, "rogue-verifier", {"trust": {"verifiers": [_verifier(str(world["dir"] / "keys/rogue.pub"))]}})
    r = _admit(world, p, "--vsa", str(world["rogue_vsa"]), bundle=None)
    assert r.code == 1 and r.json["trust_level"] != "VERIFIED", r.out


# -- item 8: permissions.localAllow false ------------------------------------------------------------


def _ask_org(org: Any, local_allow: bool | None) -> None:
    perms: dict[str, Any] = {"ask": ["tool deploy *"]}
    if local_allow is not None:
        perms["localAllow"] = local_allow
    org(f"ask-{local_allow}", {"permissions": perms, "defaults": {"noMatch": "ask"},
                               "tools": {"deny": [{"name": "tool"}]}})


def test_attack_local_allow_cannot_widen_the_orgs_no_match_ask_when_local_allow_is_off(world, org) -> None:
    _ask_org(org, False)
    p = _dump(world["dir"] / "local-allow-all.json", {
        "version": 1, "permissions": {"allow": ["Bash"]},
        "tools": {"allow": [{"digest": "sha256:" + world["sha256"]}]},
        "defaults": {"allowVerifiedReadOnly": True}})
    r = _admit(world, p, bundle=None)
    assert r.code == 1 and r.json["decision"]["behavior"] == "deny", r.out
    explain = cli("policy", "explain", str(p))
    from atip_trust.policy.compose import load_policy

    policy = load_policy(p)
    assert policy.allow_rules == [] and policy.ignored_allow_rules == ("Bash [local]",)
    assert not policy.defaults.allow_verified_read_only and policy.tool_allow == []
    assert any("localAllow false" in n for n in policy.notes)
    assert explain.code == 0


def test_attack_a_local_tools_allow_digest_cannot_lift_the_orgs_deny_by_name(world, org) -> None:
    """Without the switch too: an org's deny by name stands against a local digest entry."""
    _ask_org(org, None)
    p = _dump(world["dir"] / "local-digest.json", {
        "version": 1, "permissions": {"allow": ["Bash"]},
        "tools": {"allow": [{"name": "tool", "digest": "sha256:" + world["sha256"]}]}})
    r = _admit(world, p, bundle=None)
    assert r.code == 1 and "TOOL_DENIED" in [x["code"] for x in r.json["decision"]["reasons"]], r.out


def test_policy_explain_shows_the_ignored_allow_rules(world, tmp_path: Path) -> None:
    from atip_trust.policy.compose import compose
    from atip_trust.policy.explain import explain_policy
    from atip_trust.policy.load import layer_from_document

    org = layer_from_document({"version": 1, "permissions": {"localAllow": False, "allow": ["gh pr view *"]}},
                              source="org")
    local = layer_from_document({"version": 1, "permissions": {"allow": ["Bash"]}}, source="local")
    text = "\n".join(explain_policy(compose([org, local])))
    assert "Allow rules ignored (the org policy sets permissions.localAllow false" in text
    assert "  - Bash [local]" in text and "gh pr view * [org]" in text
    alone = "\n".join(explain_policy(compose([org])))  # `policy explain --org FILE`
    assert "Only the org policy's allow rules count (permissions.localAllow false)" in alone
