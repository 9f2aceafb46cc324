"""Decisions from hand-built trust reports: every rule kind, composition, modes, waivers, effects trust."""

from __future__ import annotations

import copy
import itertools
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from atip_trust._base.record import replace
from atip_trust.facts.report import (
    EvidenceSummary,
    ProvenanceResult,
    SignatureResult,
    TrustLevel,
    TrustReport,
)
from atip_trust.policy.compose import compose, load_policy
from atip_trust.policy.decide import decide as policy_decide
from atip_trust.policy.decide import to_agent_tool
from atip_trust.policy.load import layer_from_document
from atip_trust.policy.model import Policy

DIGEST = "ab" * 32
OTHER = "cd" * 32
ISSUER = "https://token.actions.githubusercontent.com"
ORG_ID = "https://github.com/example-org/tools/.github/workflows/release.yml@refs/tags/v1.0.0"
EVIL_ID = "https://github.com/evil/tool/.github/workflows/release.yml@refs/tags/v1.0.0"
NOW = datetime(2026, 11, 23, tzinfo=UTC)

SAFE_READ = {
    "destructive": False, "reversible": True, "idempotent": True, "network": True,
    "filesystem": {"read": True, "write": False, "delete": False},
    "cost": {"billable": False}, "interactive": {"stdin": "none", "prompts": False, "tty": False},
}
DESTRUCTIVE = {**SAFE_READ, "destructive": True, "reversible": False}


def report(
    level: TrustLevel = TrustLevel.VERIFIED,
    *,
    identity: str | None = ORG_ID,
    digest: str = DIGEST,
    provenance: ProvenanceResult | None = None,
    claims: dict[str, Any] | None = None,
) -> TrustReport:
    sig = SignatureResult(status="absent")
    attestations: list[EvidenceSummary] = []
    if identity is not None and level >= TrustLevel.UNVERIFIED:
        sig = SignatureResult(status="valid", identity=identity, issuer=ISSUER, kind="keyless")
        # As evaluation/evaluate.py reports it: signer qualifiers count per-evidence entries, not the headline.
        attestations = [EvidenceSummary("bundle", "sigstore", "dsse", valid=True, applies=True,
                                        signer_trusted=level > TrustLevel.UNVERIFIED,
                                        identity=identity, issuer=ISSUER)]
    return TrustReport(
        path="/usr/bin/tool", digests={"sha256": digest}, trust_level=level, signature=sig,
        provenance=provenance or ProvenanceResult(), claims=claims, attestations=attestations,
    )


def pol(doc: dict[str, Any], source: str = "local") -> Policy:
    return compose([layer_from_document({"version": 1, **doc}, source=source)])  # type: ignore[arg-type]


def decide(p: Policy, rep: TrustReport | None = None, *, tool: str = "gh", command: str | None = None,
           effects: Any = None, verified: bool = False, interactive: bool = True,
           metadata_source: str | None = None) -> Any:
    return policy_decide(p, rep or report(), tool_name=tool, command=command, effects=effects,
                    effects_verified=verified, interactive=interactive, now=NOW,
                    metadata_source=metadata_source)


SIGNERS = {"trust": {"signers": [{"identity": ORG_ID, "issuer": ISSUER}]}}

# (name, policy, report, tool, command, effects, verified, interactive, behavior, code of first reason)
TABLE: list[tuple[str, dict[str, Any], TrustReport, str, str | None, Any, bool, bool, str, str]] = [
    ("deny rule", {"permissions": {"deny": ["Bash(gh repo delete *)"]}}, report(), "gh", "repo delete x",
     SAFE_READ, True, True, "deny", "COMMAND_DENIED"),
    ("ask rule", {"permissions": {"ask": ["gh pr merge *"]}}, report(), "gh", "pr merge 1",
     SAFE_READ, True, True, "ask", "COMMAND_ASK"),
    ("ask rule without a user", {"permissions": {"ask": ["gh pr merge *"]}}, report(), "gh", "pr merge 1",
     SAFE_READ, True, False, "deny", "ASK_WITHOUT_USER"),
    ("allow rule", {"permissions": {"allow": ["gh pr view *"]}}, report(), "gh", "pr view 1",
     SAFE_READ, True, True, "allow", "COMMAND_ALLOWED"),
    ("broad deny beats specific allow", {"permissions": {"deny": ["Bash(gh *)"], "allow": ["gh pr view 1"]}},
     report(), "gh", "pr view 1", SAFE_READ, True, True, "deny", "COMMAND_DENIED"),
    ("broad ask beats specific allow", {"permissions": {"ask": ["gh:*"], "allow": ["gh pr view 1"]}},
     report(), "gh", "pr view 1", SAFE_READ, True, True, "ask", "COMMAND_ASK"),
    ("codex prefix deny", {"permissions": {"deny": [{"prefix": ["git", "push", ["-f", "--force"]]}]}},
     report(), "git", "push --force origin", SAFE_READ, True, True, "deny", "COMMAND_DENIED"),
    ("qualified allow holds", {"permissions": {"allow": [
        {"rule": "terraform plan *", "minTrustLevel": "VERIFIED",
         "signer": {"identityRegexp": "https://github\\.com/example-org/.+", "issuer": ISSUER}}]}},
     report(), "terraform", "plan", SAFE_READ, True, True, "allow", "COMMAND_ALLOWED"),
    ("qualified allow: wrong signer", {"permissions": {"allow": [
        {"rule": "terraform plan *", "signer": {"identityRegexp": "https://github\\.com/example-org/.+",
                                                "issuer": ISSUER}}]}},
     report(identity=EVIL_ID), "terraform", "plan", SAFE_READ, True, True, "ask", "NO_MATCHING_RULE"),
    ("qualified allow: level too low", {"permissions": {"allow": [
        {"rule": "terraform plan *", "minTrustLevel": "VERIFIED"}]}},
     report(TrustLevel.UNVERIFIED), "terraform", "plan", SAFE_READ, True, False, "deny", "ASK_WITHOUT_USER"),
    ("signer regexp is anchored", {"permissions": {"allow": [
        {"rule": "gh *", "signer": {"identityRegexp": "https://github\\.com/example-org/tools", "issuer": ISSUER}}]}},
     report(), "gh", None, SAFE_READ, True, True, "ask", "NO_MATCHING_RULE"),
    ("tool denied by name", {"tools": {"deny": [{"name": "curl"}]}, "permissions": {"allow": ["Bash"]}},
     report(), "curl", None, SAFE_READ, True, True, "deny", "TOOL_DENIED"),
    ("tool denied by digest", {"tools": {"deny": [{"digest": f"sha256:{DIGEST}"}]},
                               "permissions": {"allow": ["Bash"]}},
     report(), "gh", None, SAFE_READ, True, True, "deny", "TOOL_DENIED_DIGEST"),
    ("tool not on allowlist", {"tools": {"allow": [{"name": "git"}]}, "permissions": {"allow": ["Bash"]}},
     report(), "gh", None, SAFE_READ, True, True, "deny", "TOOL_NOT_ALLOWED"),
    ("name pinned to other bytes", {"tools": {"allow": [{"name": "gh", "digest": f"sha256:{OTHER}"}]},
                                    "permissions": {"allow": ["Bash"]}},
     report(), "gh", None, SAFE_READ, True, True, "deny", "DIGEST_PIN_MISMATCH"),
    ("digest pin wins over name deny", {"tools": {"deny": [{"name": "gh"}],
                                                  "allow": [{"digest": f"sha256:{DIGEST}"}]},
                                        "permissions": {"allow": ["Bash"]}},
     report(), "gh", None, SAFE_READ, True, True, "allow", "COMMAND_ALLOWED"),
    ("digest deny wins over name allow", {"tools": {"allow": [{"name": "gh"}],
                                                    "deny": [{"digest": f"sha256:{DIGEST}"}]},
                                          "permissions": {"allow": ["Bash"]}},
     report(), "gh", None, SAFE_READ, True, True, "deny", "TOOL_DENIED_DIGEST"),
    ("tools.deniedCommands", {"tools": {"deniedCommands": ["gh repo delete"]}, "permissions": {"allow": ["Bash"]}},
     report(), "gh", "repo delete o/r --yes", SAFE_READ, True, True, "deny", "COMMAND_DENIED"),
    ("delegation allowedTools", {"delegation": {"allowedTools": ["git"]}, "permissions": {"allow": ["Bash"]}},
     report(), "gh", None, SAFE_READ, True, True, "deny", "DELEGATION_TOOL_NOT_ALLOWED"),
    ("delegation deniedCommands", {"delegation": {"deniedCommands": ["gh repo delete"]},
                                   "permissions": {"allow": ["Bash"]}},
     report(), "gh", "repo delete x", SAFE_READ, True, True, "deny", "COMMAND_DENIED"),
    ("delegation effectRestrictions", {"delegation": {"effectRestrictions": {"destructive": False}},
                                       "permissions": {"allow": ["Bash"]}},
     report(), "gh", "repo delete", DESTRUCTIVE, True, True, "deny", "EFFECT_RESTRICTED"),
    ("effect restriction: unverified safe claim", {"delegation": {"effectRestrictions": {"destructive": False}},
                                                   "permissions": {"allow": ["Bash"]}},
     report(), "gh", "pr view", SAFE_READ, False, True, "deny", "EFFECT_RESTRICTED"),
    ("capability gate asks", {"capabilities": {"network": {"minTrustLevel": "VERIFIED", "below": "ask"}},
                              "permissions": {"allow": ["Bash"]}},
     report(TrustLevel.UNSIGNED), "gh", "pr view", SAFE_READ, True, True, "ask", "CAPABILITY_GATED"),
    ("capability gate denies", {"capabilities": {"destructive": {"minTrustLevel": "VERIFIED", "below": "deny"}},
                                "permissions": {"allow": ["Bash"]}},
     # Cause first (issue 26): the policy names no signer, which is why the gate applies.
     report(TrustLevel.UNVERIFIED), "gh", "repo delete", DESTRUCTIVE, True, True, "deny", "NO_SIGNERS_IN_POLICY"),
    ("capability gate passes when trusted", {"capabilities": {"destructive": {"minTrustLevel": "VERIFIED",
                                                                            "below": "deny"}},
                                             "permissions": {"allow": ["Bash"]}},
     report(), "gh", "repo delete", DESTRUCTIVE, True, True, "allow", "COMMAND_ALLOWED"),
    ("minimum trust level", {"requirements": {"minTrustLevel": "VERIFIED"}, "permissions": {"allow": ["Bash"]}},
     report(TrustLevel.UNSIGNED), "gh", None, SAFE_READ, True, True, "deny", "TRUST_BELOW_MINIMUM"),
    ("provenance required", {"requirements": {"provenanceRequired": True}, "permissions": {"allow": ["Bash"]}},
     report(), "gh", None, SAFE_READ, True, True, "deny", "PROVENANCE_REQUIRED"),
    ("missing provenance never passes a SLSA level", {"requirements": {"minSlsaLevel": 1},
                                                      "permissions": {"allow": ["Bash"]}},
     report(), "gh", None, SAFE_READ, True, True, "deny", "SLSA_LEVEL_TOO_LOW"),
    ("SLSA level met", {"requirements": {"minSlsaLevel": 2}, "permissions": {"allow": ["Bash"]}},
     report(provenance=ProvenanceResult(status="valid", slsa_level=3)), "gh", None, SAFE_READ, True, True,
     "allow", "COMMAND_ALLOWED"),
    ("metadata source", {"requirements": {"metadataSources": ["native", "vendor"]},
                         "permissions": {"allow": ["Bash"]}},
     report(claims={"source": "community"}), "gh", None, SAFE_READ, True, True, "deny",
     "METADATA_SOURCE_NOT_ALLOWED"),
    ("two of two signers", {"trust": {"signers": [{"identity": ORG_ID, "issuer": ISSUER},
                                                 {"identity": EVIL_ID, "issuer": ISSUER}]},
                            "requirements": {"signatures": {"threshold": 2}}, "permissions": {"allow": ["Bash"]}},
     report(), "gh", None, SAFE_READ, True, True, "deny", "SIGNATURE_THRESHOLD"),
    ("source repository", {"trust": {"sources": [{"repository": "https://github.com/cli/cli",
                                                  "refs": ["refs/tags/v*"]}]},
                           "permissions": {"allow": ["Bash"]}},
     report(provenance=ProvenanceResult(status="valid", source={"uri": "git+https://github.com/evil/cli",
                                                                "ref": "refs/tags/v2"})),
     "gh", None, SAFE_READ, True, True, "deny", "SOURCE_NOT_ALLOWED"),
    ("source repository matches", {"trust": {"sources": [{"repository": "https://github.com/cli/cli",
                                                          "refs": ["refs/tags/v*"]}]},
                                   "permissions": {"allow": ["Bash"]}},
     report(provenance=ProvenanceResult(status="valid", source={"uri": "git+https://github.com/cli/cli@refs/tags/v2",
                                                                "ref": "refs/tags/v2"})),
     "gh", None, SAFE_READ, True, True, "allow", "COMMAND_ALLOWED"),
    ("COMPROMISED is denied even under allow-all", {"permissions": {"allow": ["Bash"]}, "mode": "warn"},
     report(TrustLevel.COMPROMISED), "gh", None, SAFE_READ, True, True, "deny", "TRUST_COMPROMISED"),
    ("no match, interactive", {}, report(), "gh", "pr view", None, False, True, "ask", "NO_MATCHING_RULE"),
    ("no match, non-interactive", {}, report(), "gh", "pr view", None, False, False, "deny", "ASK_WITHOUT_USER"),
    ("noMatch deny", {"defaults": {"noMatch": "deny"}}, report(), "gh", "pr view", None, False, True,
     "deny", "NO_MATCHING_RULE"),
    ("verified read-only allowed", {"defaults": {"allowVerifiedReadOnly": True}}, report(), "gh", "pr view",
     SAFE_READ, True, False, "allow", "READ_ONLY_VERIFIED"),
    ("unverified read-only claim is not trusted", {"defaults": {"allowVerifiedReadOnly": True}}, report(),
     "gh", "pr view", SAFE_READ, False, False, "deny", "ASK_WITHOUT_USER"),
    ("read-only needs a VERIFIED tool", {"defaults": {"allowVerifiedReadOnly": True}},
     report(TrustLevel.UNSIGNED), "gh", "pr view", SAFE_READ, True, True, "ask", "NO_MATCHING_RULE"),
    ("empty signer list allows nobody", {"trust": {"signers": []}, "requirements": {"minTrustLevel": "VERIFIED"},
                                         "permissions": {"allow": ["Bash"]}},
     report(), "gh", None, SAFE_READ, True, True, "deny", "SIGNER_NOT_IN_POLICY"),
    ("signer not in policy is UNVERIFIED", {**SIGNERS, "requirements": {"minTrustLevel": "VERIFIED"},
                                            "permissions": {"allow": ["Bash"]}},
     report(identity=EVIL_ID), "gh", None, SAFE_READ, True, True, "deny", "SIGNER_NOT_IN_POLICY"),
    ("warn mode allows and reports", {"mode": "warn", "permissions": {"deny": ["gh repo delete *"]}},
     report(), "gh", "repo delete x", SAFE_READ, True, True, "allow", "MODE_WARN"),
    ("audit mode allows and reports", {"mode": "audit", "requirements": {"minTrustLevel": "VERIFIED"}},
     report(TrustLevel.UNSIGNED), "gh", None, None, False, False, "allow", "MODE_AUDIT"),
]


@pytest.mark.parametrize(
    ("doc", "rep", "tool", "command", "effects", "verified", "interactive", "behavior", "code"),
    [row[1:] for row in TABLE],
    ids=[row[0] for row in TABLE],
)
def test_rule_kinds(doc: dict[str, Any], rep: TrustReport, tool: str, command: str | None, effects: Any,
                    verified: bool, interactive: bool, behavior: str, code: str) -> None:
    d = decide(pol(doc), rep, tool=tool, command=command, effects=effects, verified=verified,
               interactive=interactive)
    assert d.behavior == behavior, [r.to_json() for r in d.reasons]
    assert d.reasons[0].code == code, [r.to_json() for r in d.reasons]
    assert d.policy_digest and d.policy_digest.startswith("sha256:")
    assert d.report_digest == rep.digest()


def test_warn_mode_reports_what_enforce_would_deny() -> None:
    d = decide(pol({"mode": "warn", "permissions": {"deny": ["gh repo delete *"]}}), command="repo delete x")
    assert d.behavior == "allow" and d.mode == "warn"
    codes = [r.code for r in d.reasons]
    assert codes[:2] == ["MODE_WARN", "COMMAND_DENIED"]
    assert d.reasons[0].expected == "deny"


def test_expired_waiver_is_ignored_and_reported() -> None:
    base = {"requirements": {"minTrustLevel": "VERIFIED"}, "permissions": {"allow": ["Bash"]}}
    live = {**base, "waivers": [{"tool": "gh", "reason": "vendor signs next release",
                                 "expires": (NOW + timedelta(days=1)).isoformat()}]}
    dead = {**base, "waivers": [{"tool": "gh", "reason": "vendor signs next release",
                                 "expires": (NOW - timedelta(seconds=1)).isoformat()}]}
    unsigned = report(TrustLevel.UNSIGNED)
    d_live = decide(pol(live), unsigned)
    assert d_live.behavior == "allow"
    assert "WAIVED" in [r.code for r in d_live.reasons]
    d_dead = decide(pol(dead), unsigned)
    assert d_dead.behavior == "deny"
    codes = [r.code for r in d_dead.reasons]
    assert codes[0] == "TRUST_BELOW_MINIMUM" and "WAIVER_EXPIRED" in codes


def test_waiver_never_lifts_compromised() -> None:
    doc = {"permissions": {"allow": ["Bash"]},
           "waivers": [{"digest": f"sha256:{DIGEST}", "reason": "x", "expires": "2099-01-01"}]}
    assert decide(pol(doc), report(TrustLevel.COMPROMISED)).behavior == "deny"


def test_hostile_destructive_false_claim_only_counts_when_verified() -> None:
    """A tool's own --agent output says `destructive: false` for a destructive command."""
    p = pol({"capabilities": {"destructive": {"minTrustLevel": "VERIFIED", "below": "deny"}},
             "permissions": {"allow": ["Bash"]}})
    lying = {**SAFE_READ, "destructive": False}
    d = decide(p, report(TrustLevel.UNVERIFIED, identity=EVIL_ID), command="wipe", effects=lying,
               verified=False)
    assert d.behavior == "deny"
    assert "EFFECTS_UNVERIFIED" in [r.code for r in d.reasons]


def test_risk_adding_effect_wins_when_merging_tool_and_command() -> None:
    from atip_trust.facts.effects import states_for_command

    meta = {"effects": {"destructive": True}, "commands": {"status": {"effects": {"destructive": False}}}}
    states, found = states_for_command(meta, ["status"])
    assert found and states["destructive"] == "risky"
    states, found = states_for_command(meta, ["nope"])
    assert not found and set(states.values()) == {"unknown"}
    # A word that is not a sub-command of a group is not "the group with arguments".
    meta2 = {"commands": {"pr": {"effects": {"destructive": False},
                                 "commands": {"view": {"effects": {"destructive": False}}}}}}
    _, found = states_for_command(meta2, ["pr", "delete-all"])
    assert not found


# -- composition -----------------------------------------------------------------------------------

ORG_DOCS: list[dict[str, Any]] = [
    {},
    {"permissions": {"deny": ["gh repo delete *"]}},
    {"permissions": {"ask": ["gh pr merge *"]}},
    {"requirements": {"minTrustLevel": "VERIFIED"}},
    {"defaults": {"noMatch": "deny"}},
    {**SIGNERS, "requirements": {"minTrustLevel": "VERIFIED"}},
    {"tools": {"allow": [{"name": "git"}]}},
    {"capabilities": {"destructive": {"minTrustLevel": "VERIFIED", "below": "deny"}}},
]
LOCAL_DOCS: list[dict[str, Any]] = [
    {},
    {"permissions": {"allow": ["Bash"]}},
    {"mode": "audit", "permissions": {"allow": ["gh *"]}},
    {"trust": {"signers": [{"identity": EVIL_ID, "issuer": ISSUER}]}, "permissions": {"allow": ["Bash"]}},
    {"waivers": [{"tool": "gh", "reason": "x", "expires": "2099-01-01"}], "permissions": {"allow": ["Bash"]}},
    {"defaults": {"allowVerifiedReadOnly": True}},
    {"tools": {"allow": [{"name": "gh"}, {"digest": f"sha256:{DIGEST}"}]}},
]
SCENARIOS = [
    (report(), "repo delete x", DESTRUCTIVE),
    (report(), "pr merge 1", SAFE_READ),
    (report(TrustLevel.UNSIGNED, identity=None), "pr view", SAFE_READ),
    (report(identity=EVIL_ID), "pr view", SAFE_READ),
    (report(TrustLevel.UNVERIFIED, identity=EVIL_ID), "repo delete x", DESTRUCTIVE),
]
RANK = {"allow": 0, "ask": 1, "deny": 2}


@pytest.mark.parametrize("org_i,local_i", list(itertools.product(range(len(ORG_DOCS)), range(len(LOCAL_DOCS)))))
def test_composition_never_widens_an_org_denial(org_i: int, local_i: int) -> None:
    org = layer_from_document({"version": 1, **copy.deepcopy(ORG_DOCS[org_i])}, source="org")
    local = layer_from_document({"version": 1, **copy.deepcopy(LOCAL_DOCS[local_i])}, source="local")
    both = compose([local, org])
    org_only = compose([org])
    local_only = compose([local])
    for rep, command, effects in SCENARIOS:
        kw = {"command": command, "effects": effects, "verified": True, "interactive": True}
        combined = decide(both, rep, **kw)
        for alone in (decide(org_only, rep, **kw), decide(local_only, rep, **kw)):
            if alone.mode != "enforce":
                continue
            # A layer's denial stands; so does an ask a layer states (a rule or a gate). Only a layer's
            # silence (no matching rule) may be filled by another layer's allow, as in Claude Code.
            if alone.behavior == "deny":
                assert combined.behavior == "deny", (command, combined.reasons)
            elif alone.behavior == "ask" and {r.code for r in alone.reasons} & {"COMMAND_ASK", "CAPABILITY_GATED"}:
                assert RANK[combined.behavior] >= RANK["ask"], (command, combined.reasons)
        non_interactive = decide(both, rep, **{**kw, "interactive": False})
        assert non_interactive.behavior != "ask"


def test_local_cannot_add_a_signer_or_waiver_under_an_org() -> None:
    org = layer_from_document({"version": 1, **SIGNERS, "requirements": {"minTrustLevel": "VERIFIED"}},
                              source="org")
    local = layer_from_document({"version": 1, "trust": {"signers": [{"identity": EVIL_ID, "issuer": ISSUER}]},
                                 "waivers": [{"tool": "gh", "reason": "x", "expires": "2099-01-01"}],
                                 "permissions": {"allow": ["Bash"]}}, source="local")
    p = compose([local, org])
    assert [s.identity for s in p.signers] == [ORG_ID]
    assert p.waivers == []
    assert any("waiver" in n for n in p.notes) and any("signers" in n for n in p.notes)
    d = decide(p, report(identity=EVIL_ID))
    assert d.behavior == "deny"


def test_org_enforce_beats_local_warn() -> None:
    org = layer_from_document({"version": 1, "permissions": {"deny": ["gh repo delete *"]}}, source="org")
    local = layer_from_document({"version": 1, "mode": "warn"}, source="local")
    d = decide(compose([local, org]), command="repo delete x")
    assert d.behavior == "deny" and d.mode == "enforce" and d.rule_source == "org"


def test_agent_tool_export_shape() -> None:
    p = pol({"permissions": {"deny": ["gh repo delete *"]}}, source="org")
    d = decide(p, command="repo delete x")
    out = to_agent_tool(d, invocation_id="inv_1", decided_at=NOW)
    assert out["behavior"] == "deny"
    assert out["source"] == "policy_settings"
    assert out["reason"] == {"type": "rule", "rule_ref": "gh repo delete *",
                             "message": "command 'gh repo delete x' matches a deny rule"}
    assert out["policy_refs"] == [p.digest]
    assert out["invocation_id"] == "inv_1"
    assert out["decided_at"] == NOW.isoformat()


def test_policy_digest_is_canonical() -> None:
    a = pol({"mode": "enforce", "defaults": {"noMatch": "deny"}})
    b = compose([layer_from_document({"defaults": {"noMatch": "deny"}, "mode": "enforce", "version": 1},
                                     source="local")])
    assert a.digest == b.digest
    assert pol({"mode": "warn"}).digest != a.digest


def test_passthrough_only_when_no_rule_spoke() -> None:
    silent = decide(pol({}), command="pr view", interactive=False)
    assert to_agent_tool(silent, passthrough_on_no_match=True)["behavior"] == "passthrough"
    assert to_agent_tool(silent)["behavior"] == "deny"
    denied = decide(pol({"permissions": {"deny": ["gh pr view *"]}}), command="pr view")
    assert to_agent_tool(denied, passthrough_on_no_match=True)["behavior"] == "deny"


# -- the shipped policies, as a library user loads them ---------------------------------------------

POLICIES = Path(__file__).resolve().parents[2] / "policies"
CLI_ID = "https://github.com/cli/cli/.github/workflows/deployment.yml@refs/heads/trunk"


def test_default_policy() -> None:
    p = load_policy(POLICIES / "default.json")
    # Public-good root, not pinned (a flag may choose another root); the shipped builder map.
    assert p.trusted_roots == [] and not p.trusted_roots_pinned and p.trusted_builders
    # Verified read-only command: allowed even without a person.
    assert decide(p, command="pr view", effects=SAFE_READ, verified=True, interactive=False).behavior == "allow"
    # The same claim, unverified: asked when someone can answer, denied when not.
    assert decide(p, command="pr view", effects=SAFE_READ, verified=False).behavior == "ask"
    assert decide(p, command="pr view", effects=SAFE_READ, verified=False, interactive=False).behavior == "deny"
    # Destructive below VERIFIED: denied outright.
    assert decide(p, report(TrustLevel.UNVERIFIED), command="repo delete", effects=DESTRUCTIVE,
                  verified=True).behavior == "deny"
    assert decide(p, report(TrustLevel.COMPROMISED), command="pr view", effects=SAFE_READ,
                  verified=True).behavior == "deny"


def test_enterprise_strict_policy() -> None:
    p = load_policy(POLICIES / "enterprise-strict.json")
    good = report(identity=CLI_ID, claims={"source": "vendor"},
                  provenance=ProvenanceResult(status="valid", slsa_level=3,
                                              source={"uri": "git+https://github.com/cli/cli",
                                                      "ref": "refs/heads/trunk"}))
    # metadataSources: only a source verification established (signed, bound metadata) counts.
    claimed_only = decide(p, good, command="pr view 1", effects=SAFE_READ)
    assert claimed_only.behavior == "deny" and claimed_only.reasons[0].code == "METADATA_SOURCE_NOT_ALLOWED"
    assert decide(p, good, command="pr view 1", effects=SAFE_READ, metadata_source="vendor").behavior == "allow"
    merge = decide(p, good, command="pr merge 1", effects=SAFE_READ, metadata_source="vendor")
    assert merge.behavior == "ask" and merge.reasons[0].code == "COMMAND_ASK"
    assert decide(p, good, command="repo delete o/r", effects=DESTRUCTIVE,
                  metadata_source="vendor").behavior == "deny"
    assert decide(p, good, command="api /user", effects=SAFE_READ,
                  metadata_source="vendor").behavior == "deny"  # noMatch deny
    low = report(identity=CLI_ID, claims={"source": "vendor"},
                 provenance=ProvenanceResult(status="valid", slsa_level=1,
                                             source={"uri": "git+https://github.com/cli/cli",
                                                     "ref": "refs/heads/trunk"}))
    d = decide(p, low, command="pr view 1", effects=SAFE_READ, metadata_source="vendor")
    assert d.behavior == "deny" and d.reasons[0].code == "SLSA_LEVEL_TOO_LOW"
    assert decide(p, good, tool="curl").behavior == "deny"


def test_ci_policy() -> None:
    p = load_policy(POLICIES / "ci.json")
    ci_id = "https://github.com/example-org/app/.github/workflows/build.yml@refs/heads/main"
    good = report(identity=ci_id)
    assert decide(p, good, command="run list", interactive=False).behavior == "deny"  # effects unknown
    assert decide(p, good, command="run list", effects=SAFE_READ, verified=True,
                  interactive=False).behavior == "allow"
    # Interactive effects restricted by delegation even for VERIFIED tools.
    prompts = {**SAFE_READ, "interactive": {"stdin": "required", "prompts": True, "tty": True}}
    assert decide(p, good, command="run list", effects=prompts, verified=True, interactive=False).behavior == "deny"
    assert decide(p, good, command="release delete v1", effects=SAFE_READ, verified=True,
                  interactive=False).behavior == "deny"
    assert decide(p, report(identity=EVIL_ID), command="run list", effects=SAFE_READ, verified=True,
                  interactive=False).behavior == "deny"


def test_m_of_n_counts_distinct_trusted_signers_from_the_evidence() -> None:
    doc = {"trust": {"signers": [{"identity": ORG_ID, "issuer": ISSUER},
                                 {"identity": EVIL_ID, "issuer": ISSUER}]},
           "requirements": {"signatures": {"threshold": 2}}, "permissions": {"allow": ["Bash"]}}
    rep = report()
    entry = EvidenceSummary("bundle", "sigstore", "dsse", valid=True, applies=True, signer_trusted=True,
                            issuer=ISSUER)
    rep.attestations = [replace(entry, identity=ORG_ID), replace(entry, identity=ORG_ID)]
    assert decide(pol(doc), rep).behavior == "deny"  # the same signer twice is one signer
    rep.attestations.append(replace(entry, identity=EVIL_ID, signer_trusted=False))
    assert decide(pol(doc), rep).behavior == "deny"  # an untrusted signer does not count
    rep.attestations.append(replace(entry, identity=EVIL_ID))
    assert decide(pol(doc), rep).behavior == "allow"


def test_a_decisions_report_digest_is_the_digest_of_the_report_it_decided_on() -> None:
    """The digest is worked out on first read (decide() stays cheap for a caller that does not read
    it); read, it is the report's own, in the JSON and the audit fields; given, it is taken as is."""
    rep = report()
    p = pol({"version": 1, "permissions": {"allow": [{"rule": "gh *", "minTrustLevel": "VERIFIED"}]}})
    want = rep.digest()
    d = policy_decide(p, rep, tool_name="gh", command=["pr", "view"])
    assert d.report_digest == want == rep.digest()
    # The output with the decision beside the facts: the digest is still the facts' alone.
    assert rep.to_json(decision=d)["decision"] == d.to_json() and rep.digest() == want
    assert d.to_json()["report_digest"] == rep.digest()
    given = policy_decide(p, rep, tool_name="gh", command=["pr", "view"], report_digest="sha256:" + "0" * 64)
    assert given.report_digest == "sha256:" + "0" * 64
    assert copy.deepcopy(d) == d and d == given.__class__(d.behavior, d.reasons, d.policy_digest,
                                                          rep.digest(), d.rule_source, d.mode)
