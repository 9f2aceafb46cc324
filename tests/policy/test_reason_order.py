"""A decision says its cause first (issue 26, item 5): a wrong signer's ``SIGNER_NOT_IN_POLICY`` comes
before the gates, rule qualifiers and the no-match default that follow from it (it was 6th of 7), a rule
that denies the command on its own still comes first, and a bundle for another file says in a plain
sentence that the signature is for other bytes (the level stays COMPROMISED, as docs/decisions.md documents).
Through the CLI and the library, with bundles of the local test Sigstore."""

from __future__ import annotations

from typing import Any

import pytest

import atip_trust
from atip_trust.facts.report import OTHER_BYTES

from verify_helpers import cli
from world import ISSUER, World

ORG_ID = "https://github.com/acme/tools/.github/workflows/release.yml@refs/tags/v1.0.0"
EVIL_ID = "https://github.com/evil/tools/.github/workflows/release.yml@refs/tags/v1.0.0"
TOOL = b"#!/bin/sh\necho tool\n"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    w = World(tmp_path_factory.mktemp("reasons"), seed=265)
    return {
        "root": w.root, "tool": w.tool("tool", TOOL),
        "evil": w.bundle("evil.sigstore.json", TOOL, identity=EVIL_ID),
        # the right signer, over another file's bytes
        "other": w.bundle("other.sigstore.json", b"another release\n", identity=ORG_ID),
        "policy": w.policy_file(
            signers=(ORG_ID,),
            capabilities={"destructive": {"minTrustLevel": "VERIFIED", "below": "deny"},
                          "network": {"minTrustLevel": "VERIFIED", "below": "ask"}},
            permissions={"deny": ["Bash(tool rm *)"], "allow": [{"rule": "tool *", "minTrustLevel": "VERIFIED"}]},
            defaults={"noMatch": "deny"}),
    }


def admit_cli(world: dict[str, Any], bundle: str, command: str) -> list[str]:
    r = cli("admit", str(world["tool"]), "--command", command, "--policy", str(world["policy"]), "--bundle",
            str(world[bundle]), "--format", "json", "--no-audit", "--no-cache", "--non-interactive")
    assert r.code == 1, r.out + r.err
    return [x["code"] for x in r.json["decision"]["reasons"]]


def test_a_wrong_signer_is_the_first_reason_not_the_sixth(world) -> None:
    codes = admit_cli(world, "evil", "status")
    assert codes[0] == "SIGNER_NOT_IN_POLICY", codes
    assert {"RULE_QUALIFIER_NOT_MET", "NO_MATCHING_RULE"} <= set(codes[1:])
    policy = atip_trust.load_admission_policy(world["policy"])
    adm = atip_trust.admit(world["tool"], policy=policy, command="status", bundles=world["evil"], audit=False)
    assert adm.decision.reasons[0].code == "SIGNER_NOT_IN_POLICY"


def test_a_rule_that_denies_the_command_by_itself_stays_first(world) -> None:
    codes = admit_cli(world, "evil", "rm -rf /")
    assert codes[0] == "COMMAND_DENIED" and codes[1] == "SIGNER_NOT_IN_POLICY", codes


def test_a_bundle_for_another_file_says_the_signature_is_for_other_bytes(world) -> None:
    r = cli("verify", str(world["tool"]), "--bundle", str(world["other"]), "--trusted-root", str(world["root"]),
            "--certificate-identity", ORG_ID, "--certificate-oidc-issuer", ISSUER, "--no-cache")
    assert r.code == 1
    assert "COMPROMISED" in r.out.splitlines()[0]        # the level stays as documented
    assert f"deny: CHECK_DIGEST_FAIL: {OTHER_BYTES}" in r.out  # and the first reason says what it means
    reasons = [ln for ln in r.out.splitlines() if ln.startswith("  deny:")]
    assert reasons[0].startswith("  deny: CHECK_DIGEST_FAIL"), reasons
    codes = admit_cli(world, "other", "status")
    policy = atip_trust.load_admission_policy(world["policy"])
    adm = atip_trust.admit(world["tool"], policy=policy, command="status", bundles=world["other"], audit=False)
    first = adm.decision.reasons[0]
    assert codes[0] == first.code == "TRUST_COMPROMISED" and OTHER_BYTES in first.message

