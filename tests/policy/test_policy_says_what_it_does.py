"""``policy explain`` and ``policy check`` say what a policy does (issue 34, item 5): ``tools.allow`` is a
filter (a tool on it still needs a permission, and is denied ``NO_MATCHING_RULE`` without one, as the
admission shows), ``trust.verifiers`` are listed (a VSA-only policy is not "nothing verifies"), and the
audit settings are stated. The real CLI on real policy files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from verify_helpers import cli

ROOT = Path(__file__).resolve().parents[2]
FX = ROOT / "fixtures" / "sigstore"
GENERATOR = ("https://github.com/slsa-framework/slsa-github-generator/.github/workflows/"
             "generator_generic_slsa3.yml@refs/tags/v2.1.0")


def write(tmp_path: Path, doc: dict[str, object]) -> Path:
    p = tmp_path / "policy.json"
    p.write_text(json.dumps({"version": 1, **doc}))
    return p


@pytest.mark.parametrize("command", ["explain", "check"])
def test_tools_allow_is_explained_as_a_filter_that_needs_a_permission(tmp_path: Path, command: str) -> None:
    p = write(tmp_path, {"trust": {"trustedRoots": [{"path": str(FX / "trusted_root.json")}],
                                   "signers": [{"identity": GENERATOR,
                                                "issuer": "https://token.actions.githubusercontent.com"}]},
                         "tools": {"allow": [{"name": "hello-tool"}]}, "defaults": {"noMatch": "deny"}})
    r = cli("policy", command, str(p))
    assert r.code == 0, r.err
    assert "a filter" in r.out and "still needs a permission" in r.out and "hello-tool" in r.out
    # What it says is what happens: the VERIFIED tool on the list, with no rule, is denied.
    admitted = cli("admit", str(FX / "artifacts" / "hello-tool"), "--policy", str(p), "--bundle",
                   str(FX / "good" / "hello-tool.dsse.sigstore.json"), "--no-audit", "--format", "json")
    assert admitted.json["trust_level"] == "VERIFIED" and admitted.json["decision"]["behavior"] == "deny"
    assert "NO_MATCHING_RULE" in {x["code"] for x in admitted.json["decision"]["reasons"]}


def test_a_vsa_only_policy_lists_its_verifiers_not_nothing_verifies(tmp_path: Path) -> None:
    key = tmp_path / "ci-vsa.pub"
    key.write_bytes(ec.generate_private_key(ec.SECP256R1()).public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    p = write(tmp_path, {"trust": {"verifiers": [{"id": "https://ci.example.com/verify", "publicKey": "ci-vsa.pub",
                                                  "minLevel": 2, "maxAge": "30d"}]}})
    r = cli("policy", "explain", str(p))
    assert r.code == 0, r.err
    assert "nothing verifies" not in r.out
    assert "VSA verifiers" in r.out and "https://ci.example.com/verify" in r.out and "level >= 2" in r.out


def test_the_audit_settings_are_stated(tmp_path: Path) -> None:
    p = write(tmp_path, {"audit": {"log": "/var/log/atip-trust/audit.jsonl", "required": True}})
    local = cli("policy", "explain", str(p)).out
    assert "Audit log: /var/log/atip-trust/audit.jsonl" in local and "--no-audit is refused" in local
    org = cli("policy", "explain", "--org", str(p)).out
    assert "a different --audit-log is refused" in org
    plain = cli("policy", "explain", str(write(tmp_path, {}))).out
    assert "Audit log: the user state directory's audit.jsonl" in plain and "--no-audit turns the line off" in plain
