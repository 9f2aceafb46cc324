"""Attacks on the trust anchors: they come from the org, and nothing below it widens them.

* a local policy adds a trusted root, a builder, a registry signer or a keyless signer the org did not
  state (compose.py: an org that states any anchor list fixes the whole set; locals only narrow);
* ``--trusted-root`` / ``--staging`` replaces the root a policy pins (constraints.choose_trusted_root);
* ``verify --policy`` identity flags must tighten the policy's signers, not be dropped;
* ``verify --policy policies/default.json`` on a file with no signature must not pass a CI gate.

Real files, real bundles from the local test Sigstore, the CLI as users call it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

import testsigstore
from verify_helpers import cli
from world import ISSUER, ORG_ID, World

ROOT = Path(__file__).resolve().parents[2]
POLICIES = ROOT / "policies"
KEYS = ROOT / "fixtures" / "keys"
OTHER_ID = "https://github.com/example-org/other/.github/workflows/release.yml@refs/tags/v1.0.0"
REGISTRY_ID = "https://github.com/attacker/shims/.github/workflows/sign.yml@refs/heads/main"
EVIL_BUILDER = "https://ci.attacker.example/builder"
#: How a builder entry says its signature proves it (provenance/slsa.py): here the signing workflow itself,
#: so that a builder entry is refused or honoured for the anchor rule alone, never for a missing binding.
BINDING = {"signerWorkflow": "https://github.com/example-org/tools/.github/workflows/release.yml@refs/tags/v1.0.0",
           "signerIssuer": "https://token.actions.githubusercontent.com"}
ALLOW_ALL = {"permissions": {"allow": ["Bash"]}}
TOOL = b"#!/bin/sh\necho status\n"
SAFE_READ = {
    "destructive": False, "reversible": True, "idempotent": True, "network": False,
    "filesystem": {"read": True, "write": False, "delete": False}, "cost": {"billable": False},
    "interactive": {"stdin": "none", "prompts": False, "tty": False},
}


def _dump(path: Path, obj: Any) -> Path:
    path.write_text(json.dumps(obj, indent=2))
    path.chmod(0o644)
    return path


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    w = World(tmp_path_factory.mktemp("anchors"), seed=91)
    root_copy = w.dir / "copy-of-root.json"
    shutil.copyfile(w.root, root_copy)
    other_root = testsigstore.TestSigstore(seed=92).write_trusted_root(w.dir / "other_root.json")
    tool = w.tool("tool", TOOL)
    hexd = hashlib.sha256(TOOL).hexdigest()
    # Whoever holds the test root mints a certificate for the org's own release identity.
    signed = _dump(w.dir / "tool.sigstore.json", w.signed(TOOL, identity=ORG_ID))
    stmt = testsigstore.slsa_v1_statement("tool", hexd, builder_id=EVIL_BUILDER)
    prov = _dump(w.dir / "tool.prov.sigstore.json", w.ts.sign_dsse(stmt, identity=ORG_ID, issuer=ISSUER))
    shim = {
        "atip": {"version": "0.6"}, "name": "tool", "version": "1.0.0", "description": "status",
        "binary": {"hash": f"sha256:{hexd}", "name": "tool", "version": "1.0.0"},
        "trust": {"source": "org", "verified": True},
        "commands": {"status": {"description": "Show status", "effects": SAFE_READ}},
    }
    w.shim("shims", shim, hexd, identity=REGISTRY_ID)
    unsigned = w.file("unsigned.txt", b"release artifact nobody signed\n")
    return {"dir": w.dir, "root": w.root, "root_copy": root_copy, "other_root": other_root, "tool": tool,
            "signed": signed, "prov": prov, "shims": w.dir / "shims", "unsigned": unsigned}


@pytest.fixture
def org(monkeypatch: pytest.MonkeyPatch, world: dict[str, Any]) -> Any:
    """Install an org (managed) policy for this test via ATIP_TRUST_ORG_POLICY, no /etc file."""
    from atip_trust.policy import load

    monkeypatch.setattr(load, "standard_org_policy_path", lambda: world["dir"] / "absent-org.json")

    def install(name: str, trust: dict[str, Any], **extra: Any) -> Path:
        p = _dump(world["dir"] / f"org-{name}.json", {"version": 1, "trust": trust, **extra})
        monkeypatch.setenv("ATIP_TRUST_ORG_POLICY", str(p))
        return p

    return install


def local(world: dict[str, Any], name: str, trust: dict[str, Any], **extra: Any) -> Path:
    return _dump(world["dir"] / f"local-{name}.json", {"version": 1, "trust": trust, **ALLOW_ALL, **extra})


def verify(world: dict[str, Any], policy: Path, *extra: str, bundle: str = "signed") -> Any:
    return cli("verify", str(world["tool"]), "--bundle", str(world[bundle]), "--policy", str(policy),
               "--format", "json", *extra)


SIGNER = {"identity": ORG_ID, "issuer": ISSUER}
TEST_ROOT = {"path": "trusted_root.json"}


# -- the org fixes the anchor set: a local trusted root ---------------------------------------------


def test_local_trusted_root_cannot_widen_org_signers(world, org) -> None:
    """The org names its release identity; a local policy adds a root under which anyone mints it."""
    org("signers-only", {"signers": [SIGNER]}, requirements={"minTrustLevel": "VERIFIED"})
    p = local(world, "adds-root", {"trustedRoots": [TEST_ROOT], "signers": [SIGNER]})
    r = verify(world, p)
    assert r.code == 1, r.out + r.err
    out = r.json
    assert out["trust_level"] != "VERIFIED" and out["decision"]["behavior"] == "deny"
    # The org's silence on roots means the embedded public-good root, not the local file.
    assert out["trusted_root"]["name"].startswith("production")
    explain = cli("policy", "explain", str(p))
    assert explain.code == 0
    # Same attack on admit: the tool is not VERIFIED and not allowed.
    a = cli("admit", str(world["tool"]), "--command", "status", "--policy", str(p), "--bundle",
            str(world["signed"]), "--non-interactive", "--no-audit", "--format", "json")
    assert a.code == 1, a.out + a.err
    assert a.json["trust_level"] != "VERIFIED"
    assert "TRUST_BELOW_MINIMUM" in [x["code"] for x in a.json["decision"]["reasons"]]


def test_local_trusted_root_note_names_the_ignored_root_and_the_orgs(world, org) -> None:
    from atip_trust.policy.compose import load_policy

    org("signers-only-note", {"signers": [SIGNER]})
    p = local(world, "adds-root-note", {"trustedRoots": [TEST_ROOT]})
    policy = load_policy(p, managed=True)
    assert policy.trusted_roots == ["production"] and policy.trusted_roots_pinned
    assert any(str(world["root"]) in n and "production" in n for n in policy.notes), policy.notes


def test_org_stating_the_root_itself_verifies(world, org) -> None:
    """Control: the same bundle verifies once the org itself names the root (the attack test is live)."""
    org("root-and-signers", {"signers": [SIGNER], "trustedRoots": [{"path": str(world["root"])}]})
    p = local(world, "same-root", {"trustedRoots": [TEST_ROOT]})
    r = verify(world, p)
    assert r.code == 0, r.out + r.err
    assert r.json["trust_level"] == "VERIFIED"


def test_local_root_the_org_does_not_list_is_ignored_when_the_org_lists_roots(world, org) -> None:
    org("pins-other-root", {"signers": [SIGNER], "trustedRoots": [{"path": str(world["other_root"])}]})
    p = local(world, "own-root", {"trustedRoots": [TEST_ROOT]})
    r = verify(world, p)
    assert r.code == 1, r.out + r.err
    assert r.json["trusted_root"]["name"] == str(world["other_root"])


# -- the org fixes the anchor set: a local keyless signer or key ------------------------------------


def test_local_signer_cannot_verify_when_org_states_only_keys(world, org) -> None:
    org("keys-only", {"trustedRoots": [{"path": str(world["root"])}],
                      "publicKeys": [{"path": str(KEYS / "p256.pub")}]})
    p = local(world, "adds-signer", {"signers": [SIGNER]})
    r = verify(world, p)
    assert r.code != 0, r.out + r.err
    out = r.json
    assert out["trust_level"] == "UNVERIFIED"
    fails = [c for c in out["checks"] if c["name"] == "identity" and c["status"] == "fail"]
    assert fails and fails[0]["actual"] == ORG_ID and fails[0]["expected"] == []


def test_cli_key_cannot_add_an_anchor_when_org_states_only_signers(world, org) -> None:
    org("signers-no-keys", {"signers": [SIGNER]})
    p = local(world, "keys", {"publicKeys": [{"path": str(KEYS / "p256.pub")}]})
    r = cli("verify", str(KEYS / "artifact.txt"), "--key", str(KEYS / "p256.pub"),
            "--signature", str(KEYS / "artifact.txt.p256.sig"), "--policy", str(p))
    assert r.code == 2, r.out + r.err
    assert "not a trust anchor" in r.err and "no trust.publicKeys" in r.err


# -- the org fixes the anchor set: a local builder ---------------------------------------------------


def test_local_builder_cannot_add_level_org_did_not_state(world, org) -> None:
    """The org requires SLSA Build L3 and trusts the shipped builder map (by its silence); a local
    policy declares its own builder at level 3."""
    org("slsa3", {"signers": [SIGNER], "trustedRoots": [{"path": str(world["root"])}]},
        requirements={"minSlsaLevel": 3})
    p = local(world, "evil-builder", {"trustedBuilders": [{"id": EVIL_BUILDER, "level": 3, **BINDING}]})
    r = verify(world, p, bundle="prov")
    assert r.code == 1, r.out + r.err
    out = r.json
    assert out["trust_level"] == "PROVENANCE_FAIL"
    assert out["provenance"]["slsa_level"] in (None, 0)
    (builder,) = [c for c in out["checks"] if c["name"] in ("builder", "slsa_level") and c["status"] == "fail"][:1]
    assert EVIL_BUILDER in json.dumps(builder)


def test_org_stating_the_builder_itself_grants_its_level(world, org) -> None:
    """Control: the same provenance passes when the org names the builder."""
    org("slsa3-builder", {"signers": [SIGNER], "trustedRoots": [{"path": str(world["root"])}],
                          "trustedBuilders": [{"id": EVIL_BUILDER, "level": 3, **BINDING}]},
        requirements={"minSlsaLevel": 3})
    p = local(world, "no-builders", {})
    r = verify(world, p, bundle="prov")
    assert r.code == 0, r.out + r.err
    assert r.json["provenance"]["slsa_level"] == 3


def test_local_builder_list_narrows_the_org_list_to_the_lowest_level(world, org) -> None:
    from atip_trust.policy.compose import load_policy

    org("two-builders", {"trustedBuilders": [{"id": EVIL_BUILDER, "level": 3},
                                             {"id": "https://b.example/two", "level": 2}]})
    p = local(world, "narrow-builders", {"trustedBuilders": [{"id": EVIL_BUILDER, "level": 1},
                                                              {"id": "https://b.example/new", "level": 3}]})
    policy = load_policy(p, managed=True)
    assert [(b.id, b.level) for b in policy.trusted_builders] == [(EVIL_BUILDER, 1)]
    assert any("https://b.example/new" in n for n in policy.notes)


# -- the org fixes the anchor set: a local registry signer -------------------------------------------


def test_local_registry_signer_cannot_verify_shim_when_org_states_anchors(world, org) -> None:
    """A local registry signer would make the attacker's shim 'verified', and its read-only claim
    would allow the command (defaults.allowVerifiedReadOnly)."""
    org("no-registries", {"signers": [SIGNER], "trustedRoots": [{"path": str(world["root"])}]})
    p = local(world, "adds-registry",
              {"registries": [{"url": "file:///srv/shims",
                               "signers": [{"identity": REGISTRY_ID, "issuer": ISSUER}]}]},
              defaults={"noMatch": "deny", "allowVerifiedReadOnly": True}, permissions={})
    r = cli("admit", str(world["tool"]), "--command", "status", "--policy", str(p), "--bundle",
            str(world["signed"]), "--shim-dir", str(world["shims"]), "--non-interactive", "--no-audit",
            "--format", "json")
    assert r.code == 1, r.out + r.err
    out = r.json
    assert out["trust_level"] == "VERIFIED" and out["effects_verified"] is False
    assert "NO_MATCHING_RULE" in [x["code"] for x in out["decision"]["reasons"]]


def test_org_stating_the_registry_itself_verifies_the_shim(world, org) -> None:
    """Control: the same shim counts when the org names the registry signer."""
    org("with-registry", {"signers": [SIGNER], "trustedRoots": [{"path": str(world["root"])}],
                          "registries": [{"url": "file:///srv/shims",
                                          "signers": [{"identity": REGISTRY_ID, "issuer": ISSUER}]}]})
    p = local(world, "plain", {}, defaults={"noMatch": "deny", "allowVerifiedReadOnly": True},
              permissions={})
    r = cli("admit", str(world["tool"]), "--command", "status", "--policy", str(p), "--bundle",
            str(world["signed"]), "--shim-dir", str(world["shims"]), "--non-interactive", "--no-audit",
            "--format", "json")
    assert r.code == 0, r.out + r.err
    assert r.json["effects_verified"] is True


def test_attack_a_second_org_policy_cannot_add_a_registry(world, org) -> None:
    """Issue 33: org layers compose by intersection. The machine's org names no registry; a second org
    file (--org-policy) names the attacker's registry signer: its shim must not count."""
    org("no-registries-2", {"signers": [SIGNER], "trustedRoots": [{"path": str(world["root"])}]})
    second = _dump(world["dir"] / "second-org-registry.json", {"version": 1, "trust": {
        "signers": [SIGNER], "trustedRoots": [{"path": str(world["root"])}],
        "registries": [{"url": "file:///srv/shims", "signers": [{"identity": REGISTRY_ID, "issuer": ISSUER}]}]}})
    p = local(world, "plain-registry", {}, defaults={"noMatch": "deny", "allowVerifiedReadOnly": True},
              permissions={})
    r = cli("admit", str(world["tool"]), "--command", "status", "--policy", str(p), "--org-policy", str(second),
            "--bundle", str(world["signed"]), "--shim-dir", str(world["shims"]), "--non-interactive",
            "--no-audit", "--format", "json")
    assert r.code == 1, r.out + r.err
    assert r.json["trust_level"] == "VERIFIED" and r.json["effects_verified"] is False


def test_org_silent_on_every_anchor_lets_local_anchors_stand(world, org) -> None:
    org("no-anchors", {}, tools={"deny": [{"name": "curl"}]})
    p = local(world, "own-anchors", {"trustedRoots": [TEST_ROOT], "signers": [SIGNER]})
    r = verify(world, p)
    assert r.code == 0, r.out + r.err


# -- --trusted-root / --staging cannot replace a pinned root ----------------------------------------


def test_cli_trusted_root_cannot_replace_policy_pinned_root(world) -> None:
    p = local(world, "pins-other", {"trustedRoots": [{"path": "other_root.json"}], "signers": [SIGNER]})
    for cmd in ("verify", "admit"):
        extra = ["--non-interactive", "--no-audit"] if cmd == "admit" else []
        r = cli(cmd, str(world["tool"]), "--bundle", str(world["signed"]), "--policy", str(p),
                "--trusted-root", str(world["root"]), *extra)
        assert r.code == 2, (cmd, r.out, r.err)
        # Names both: the flag's root and the pinned one, with their digests.
        assert str(world["root"]) in r.err and str(world["other_root"]) in r.err, r.err
        assert "not a trusted root the policy pins" in r.err
        s = cli(cmd, str(world["tool"]), "--bundle", str(world["signed"]), "--policy", str(p),
                "--staging", *extra)
        assert s.code == 2 and "--staging" in s.err, (cmd, s.out, s.err)


def test_cli_trusted_root_cannot_replace_the_orgs_implied_public_good_root(world, org) -> None:
    """The org names signers and no root: the pinned root is the public-good one, not the flag's."""
    org("signers-only-cli", {"signers": [SIGNER]})
    p = local(world, "nothing", {})
    env = {**os.environ}
    r = cli("verify", str(world["tool"]), "--bundle", str(world["signed"]), "--policy", str(p),
                       "--trusted-root", str(world["root"]), "--format", "json", env=env)
    assert r.code == 2, r.out + r.err
    assert "production" in r.err and str(world["root"]) in r.err


def test_cli_trusted_root_with_the_same_bytes_as_the_pinned_root_is_accepted(world) -> None:
    p = local(world, "pins-test-root", {"trustedRoots": [TEST_ROOT], "signers": [SIGNER]})
    r = verify(world, p, "--trusted-root", str(world["root_copy"]))
    assert r.code == 0, r.out + r.err
    assert r.json["trusted_root"]["name"] == str(world["root_copy"])


def test_cli_trusted_root_without_a_pin_still_chooses(world) -> None:
    p = local(world, "no-root", {"signers": [SIGNER]})
    r = verify(world, p, "--trusted-root", str(world["root"]))
    assert r.code == 0, r.out + r.err


# -- identity flags tighten verify --policy ---------------------------------------------------------


def test_identity_flag_tightens_policy_signers(world) -> None:
    p = local(world, "org-wide", {"trustedRoots": [TEST_ROOT], "signers": [
        {"identityRegexp": "https://github\\.com/example-org/.+", "issuer": ISSUER}]})
    r = verify(world, p, "--certificate-identity", OTHER_ID, "--certificate-oidc-issuer", ISSUER)
    assert r.code == 1, r.out + r.err
    out = r.json
    assert out["trust_level"] == "UNVERIFIED"
    fails = [c for c in out["checks"] if c["name"] == "identity" and c["status"] == "fail"]
    assert fails and fails[0]["expected"] == OTHER_ID and fails[0]["actual"] == ORG_ID
    assert "flags" in fails[0]["message"]
    # The matching flag passes: the flags tighten, they do not break the policy's own signers.
    ok = verify(world, p, "--certificate-identity", ORG_ID, "--certificate-oidc-issuer", ISSUER)
    assert ok.code == 0, ok.out + ok.err


def test_claim_flag_tightens_policy_signers(world) -> None:
    p = local(world, "org-wide-claims", {"trustedRoots": [TEST_ROOT], "signers": [SIGNER]})
    r = verify(world, p, "--certificate-identity", ORG_ID, "--certificate-oidc-issuer", ISSUER,
               "--certificate-runner-environment", "self-hosted")
    assert r.code == 1, r.out + r.err
    out = r.json
    assert out["trust_level"] == "UNVERIFIED"
    (claim,) = [c for c in out["checks"] if c["name"] == "claim.runner_environment"]
    assert claim["status"] == "fail" and claim["expected"] == "self-hosted"


def test_policy_signers_still_hold_when_flags_name_another_identity(world) -> None:
    """The flags cannot widen either: a flag naming the signer does not help when the policy does not."""
    p = local(world, "other-only", {"trustedRoots": [TEST_ROOT], "signers": [
        {"identity": OTHER_ID, "issuer": ISSUER}]})
    r = verify(world, p, "--certificate-identity", ORG_ID, "--certificate-oidc-issuer", ISSUER)
    assert r.code == 1, r.out + r.err
    assert r.json["trust_level"] == "UNVERIFIED"


# -- the default policy in a CI gate ----------------------------------------------------------------


def test_default_policy_verify_unsigned_file_fails(world) -> None:
    r = cli("verify", str(world["unsigned"]), "--policy", str(POLICIES / "default.json"), "--format", "json")
    assert r.code == 1, r.out + r.err
    out = r.json
    assert out["trust_level"] == "UNSIGNED" and out["decision"]["behavior"] == "deny"
    reason = out["decision"]["reasons"][0]
    assert (reason["code"], reason["expected"], reason["actual"]) == ("TRUST_NOT_VERIFIED", "VERIFIED", "UNSIGNED")


def test_policy_minimum_below_verified_does_not_let_verify_pass(world) -> None:
    p = local(world, "min-unverified", {}, requirements={"minTrustLevel": "UNSIGNED"})
    r = cli("verify", str(world["unsigned"]), "--policy", str(p), "--format", "json")
    assert r.code == 1, r.out + r.err
    assert r.json["decision"]["reasons"][0]["code"] == "TRUST_NOT_VERIFIED"


def test_default_policy_admit_of_an_unsigned_tool_is_unchanged(world) -> None:
    """Dropping ``minTrustLevel: UNSIGNED`` from the default changes nothing for admit: the same
    decision and reasons as the default that stated it."""
    doc = json.loads((POLICIES / "default.json").read_text())
    old = _dump(world["dir"] / "default-with-unsigned-minimum.json",
                {**doc, "requirements": {"minTrustLevel": "UNSIGNED"}})
    for command, effects in (("status", None), ("status", "shim")):
        runs = []
        for policy in (POLICIES / "default.json", old):
            extra = ["--shim-dir", str(world["shims"])] if effects else []
            r = cli("admit", str(world["tool"]), "--command", command, "--policy", str(policy), *extra,
                    "--non-interactive", "--no-audit", "--format", "json")
            runs.append((r.code, r.json["trust_level"], r.json["decision"]["behavior"],
                         [x["code"] for x in r.json["decision"]["reasons"]]))
        assert runs[0] == runs[1]
        assert runs[0][0] == 1 and "TRUST_BELOW_MINIMUM" not in runs[0][3]


# -- the org's anchor files: as safe as the org policy that names them (red team) ---------------------


def test_attack_an_org_trusted_root_file_writable_by_others_is_refused(world, org, tmp_path: Path) -> None:
    """The org policy is root-owned and checked, but the trusted root it names by path is world-writable:
    whoever rewrites it adds their own CA and mints the org's release identity. Refused (exit 2), as a
    writable org policy is."""
    root = tmp_path / "org-root.json"
    shutil.copyfile(world["root"], root)
    root.chmod(0o666)
    org("writable-root", {"signers": [SIGNER], "trustedRoots": [{"path": str(root)}]})
    r = verify(world, local(world, "plain", {}))
    assert r.code == 2 and "trusted root" in r.err and "writable" in r.err, r.out + r.err
    root.chmod(0o644)  # control: the same files, safe, verify
    assert verify(world, local(world, "plain", {})).code == 0


def test_attack_an_org_public_key_file_writable_by_others_is_refused(world, org, tmp_path: Path) -> None:
    key = tmp_path / "org.pub"
    shutil.copyfile(KEYS / "p256.pub", key)
    key.chmod(0o666)
    org("writable-key", {"publicKeys": [{"path": str(key)}]})
    args = ("verify", str(KEYS / "artifact.txt"), "--key", str(key), "--signature",
            str(KEYS / "artifact.txt.p256.sig"), "--policy", str(local(world, "plain", {})), "--format", "json")
    r = cli(*args)
    assert r.code == 2 and "public key" in r.err and "writable" in r.err, r.out + r.err
    key.chmod(0o644)
    assert cli(*args).code == 0, cli(*args).err


def test_attack_an_org_vsa_verifier_key_writable_by_others_is_refused(world, org, tmp_path: Path) -> None:
    key = tmp_path / "ci-vsa.pub"
    shutil.copyfile(KEYS / "p256.pub", key)
    key.chmod(0o666)
    org("writable-verifier", {"signers": [SIGNER], "trustedRoots": [{"path": str(world["root"])}],
                              "verifiers": [{"id": "https://ci.example/v", "publicKey": str(key), "maxAge": "1d"}]})
    r = verify(world, local(world, "plain", {}))
    assert r.code == 2 and "verifier" in r.err and "writable" in r.err, r.out + r.err
    key.chmod(0o644)
    assert verify(world, local(world, "plain", {})).code == 0
