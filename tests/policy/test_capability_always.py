"""A policy can say "ask before any destructive command, even of a VERIFIED tool" without listing every
command (issue 26, item 6): ``capabilities.<class>.always`` is ask or deny at any trust level. An allow
rule does not lift it, a waiver does not (it is not about trust), composition keeps deny over ask, and
a command without that effect is untouched. Real signed tool and verified metadata from the local test
Sigstore, through the CLI and the library."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

import atip_trust
from atip_trust.errors import PolicyError
from atip_trust.policy.explain import explain_policy

from verify_helpers import cli
from world import ISSUER, World

ORG_ID = "https://github.com/acme/tools/.github/workflows/release.yml@refs/tags/v1.0.0"
TOOL = b"#!/bin/sh\necho acme\n"
SAFE = {"destructive": False, "reversible": True, "idempotent": True, "network": False,
        "filesystem": {"read": True, "write": False, "delete": False}, "cost": {"billable": False},
        "interactive": {"stdin": "none", "prompts": False, "tty": False}}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    w = World(tmp_path_factory.mktemp("always"), seed=266)
    meta = json.dumps({"atip": {"version": "0.6"}, "name": "acme", "version": "1.0.0", "description": "acme",
                       "binary": {"hash": f"sha256:{hashlib.sha256(TOOL).hexdigest()}", "name": "acme"},
                       "commands": {"status": {"description": "status", "effects": SAFE},
                                    "rm": {"description": "remove", "effects": {**SAFE, "destructive": True,
                                                                                "reversible": False}}}}).encode()
    return {"dir": w.dir, "root": w.root, "tool": w.tool("acme", TOOL),
            "bundle": w.bundle("acme.sigstore.json", TOOL, identity=ORG_ID), "meta": w.file("acme.json", meta),
            "meta_bundle": w.bundle("acme.json.bundle", meta, identity=ORG_ID)}


def write_policy(world: dict[str, Any], name: str, **extra: Any) -> Path:
    path = world["dir"] / f"{name}.json"
    path.write_text(json.dumps({
        "version": 1,
        "trust": {"trustedRoots": [{"path": str(world["root"])}], "signers": [{"identity": ORG_ID, "issuer": ISSUER}]},
        "permissions": {"allow": [{"rule": "acme *", "minTrustLevel": "VERIFIED"}]},
        "defaults": {"noMatch": "deny"},
        **extra,
    }))
    return path


def admit(world: dict[str, Any], policy: Path, command: str, *more: str) -> Any:
    return cli("admit", str(world["tool"]), "--command", command, "--policy", str(policy), "--bundle",
               str(world["bundle"]), "--metadata", str(world["meta"]), "--metadata-bundle", str(world["meta_bundle"]),
               "--format", "json", "--no-audit", "--no-cache", "--interactive", "always", *more)


def test_ask_before_any_destructive_command_of_a_verified_tool(world) -> None:
    policy = write_policy(world, "ask", capabilities={"destructive": {"always": "ask"}})
    rm = admit(world, policy, "rm x")
    assert rm.code == 3, rm.out + rm.err
    assert rm.json["trust_level"] == "VERIFIED" and rm.json["effects_verified"] is True
    first = rm.json["decision"]["reasons"][0]
    assert first["code"] == "CAPABILITY_ALWAYS" and first["rule"] == "capabilities.destructive"
    assert admit(world, policy, "status").code == 0  # no destructive effect: the allow rule stands
    non_interactive = admit(world, policy, "rm x", "--non-interactive")
    assert non_interactive.code == 1  # an ask without a user is a denial


def test_deny_at_any_level_and_composition_keeps_deny_over_ask(world, monkeypatch: pytest.MonkeyPatch) -> None:
    org = write_policy(world, "org", capabilities={"destructive": {"always": "deny"}})
    local = write_policy(world, "local", capabilities={"destructive": {"minTrustLevel": "VERIFIED", "always": "ask"}})
    assert admit(world, org, "rm x").code == 1
    monkeypatch.setenv("ATIP_TRUST_ORG_POLICY", str(org))
    both = admit(world, local, "rm x")
    assert both.code == 1 and both.json["decision"]["reasons"][0]["code"] == "CAPABILITY_ALWAYS"


def test_a_waiver_does_not_lift_it_and_the_library_decides_the_same(world, monkeypatch) -> None:
    monkeypatch.delenv("ATIP_TRUST_ORG_POLICY", raising=False)
    path = write_policy(world, "waived", capabilities={"destructive": {"always": "ask"}},
                        waivers=[{"tool": "acme", "reason": "migration", "expires": "2099-01-01"}])
    policy = atip_trust.load_admission_policy(path)
    adm = atip_trust.admit(world["tool"], policy=policy, command=["rm", "x"], bundles=world["bundle"],
                           metadata=world["meta"], metadata_bundle=world["meta_bundle"], interactive="always",
                           audit=False)
    assert adm.behavior == "ask" and adm.decision.reasons[0].code == "CAPABILITY_ALWAYS"
    assert "  - destructive: ask at any trust level" in explain_policy(policy)


def test_a_gate_needs_a_minimum_or_always(world) -> None:
    bad = world["dir"] / "bad.json"
    bad.write_text(json.dumps({"version": 1, "capabilities": {"destructive": {"below": "deny"}}}))
    with pytest.raises(PolicyError):
        atip_trust.load_admission_policy(bad)
