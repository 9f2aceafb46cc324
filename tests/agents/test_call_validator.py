"""The call validator (agents/calls.py): every violation code, the promises beyond the reference
validator (unknown effects are risky, tool-level effects reach every command, the trust threshold is the
verified level, delegation only tightens), and that the validator and the policy's capability gating are
one decision. Reports are built by hand as in tests/policy/test_policy_decide.py; the admission-bound test at
the end uses real bundles from the local test Sigstore."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

import atip_trust
from atip_trust.agents.calls import VIOLATION_SEVERITY, CallDecision, check_call, validate_call
from atip_trust.errors import PolicyError
from atip_trust.facts.effects import command_states
from atip_trust.facts.metadata import parse_metadata
from atip_trust.facts.report import TrustLevel, TrustReport
from atip_trust.policy.compose import compose
from atip_trust.policy.decide import decide
from atip_trust.policy.load import layer_from_document
from atip_trust.policy.model import Policy

import testsigstore

SAFE: dict[str, Any] = {
    "destructive": False, "reversible": True, "idempotent": True, "network": False,
    "filesystem": {"read": True, "write": False, "delete": False},
    "cost": {"billable": False, "estimate": "free"},
    "interactive": {"stdin": "none", "prompts": False, "tty": False},
}


def _eff(**change: Any) -> dict[str, Any]:
    out = copy.deepcopy(SAFE)
    for key, value in change.items():
        if "." in key:
            outer, inner = key.split(".")
            out[outer][inner] = value
        else:
            out[key] = value
    return out


def _cmd(effects: dict[str, Any] | None, **extra: Any) -> dict[str, Any]:
    node: dict[str, Any] = {"description": "a command", **extra}
    if effects is not None:
        node["effects"] = effects
    return node


TOOL: dict[str, Any] = {
    "atip": {"version": "0.6"}, "name": "tool", "version": "1.0.0", "description": "a tool",
    "commands": {
        "status": _cmd(SAFE),
        "destroy": _cmd(_eff(destructive=True)),
        "final": _cmd(_eff(reversible=False)),
        "charge": _cmd(_eff(**{"cost.billable": True})),
        "fetch": _cmd(_eff(network=True)),
        "write": _cmd(_eff(**{"filesystem.write": True})),
        "prune": _cmd(_eff(**{"filesystem.delete": True})),
        "again": _cmd(_eff(idempotent=False)),
        "prompt": _cmd(_eff(**{"interactive.prompts": True})),
        "costly": _cmd(_eff(**{"cost.estimate": "high"})),
        "list": _cmd(SAFE, options=[{"name": "state", "flags": ["-s", "--state"], "type": "enum",
                                     "enum": ["open", "closed"], "description": "state"}]),
        "bare": _cmd(None),
    },
}
CLASSES = ("destructive", "nonReversible", "nonIdempotent", "billable", "network", "filesystemWrite",
           "filesystemDelete", "interactive")


def make_policy(**doc: Any) -> Policy:
    base: dict[str, Any] = {
        "version": 1,
        "capabilities": {c: {"minTrustLevel": "VERIFIED", "below": "ask"} for c in CLASSES},
        "permissions": {"allow": ["tool *"]},
        "calls": {"maxCostEstimate": "medium"},
    }
    base.update(doc)
    return compose([layer_from_document(json.loads(json.dumps(base)), source="local")])


def report(level: TrustLevel) -> TrustReport:
    return TrustReport(path="/usr/bin/tool", digests={"sha256": "ab" * 32}, trust_level=level)


def codes(d: CallDecision) -> set[str]:
    return {v.code for v in d.violations}


# (flat name, arguments, policy changes, the one violation code, behavior) — the trust level is
# PROVENANCE_FAIL (below every gate) and the metadata counts as verified, so only the risky class shows.
TABLE = [
    ("tool_destroy", {}, {}, "DESTRUCTIVE_OPERATION", "ask"),
    ("tool_final", {}, {}, "NON_REVERSIBLE_OPERATION", "ask"),
    ("tool_charge", {}, {}, "BILLABLE_OPERATION", "ask"),
    ("tool_fetch", {}, {}, "NETWORK_OPERATION", "ask"),
    ("tool_write", {}, {}, "FILESYSTEM_WRITE", "ask"),
    ("tool_prune", {}, {}, "FILESYSTEM_DELETE", "ask"),
    ("tool_again", {}, {}, "NON_IDEMPOTENT_OPERATION", "ask"),
    ("tool_prompt", {}, {}, "INTERACTIVE_OPERATION", "ask"),
    ("tool_costly", {}, {}, "COST_EXCEEDS_LIMIT", "ask"),
    ("tool_status", {}, {"requirements": {"minTrustLevel": "VERIFIED"}}, "TRUST_BELOW_THRESHOLD", "deny"),
    ("tool_nuke", {}, {}, "UNKNOWN_COMMAND", "deny"),
    ("tool_list", {"state": "merged"}, {}, "ARGUMENT_INVALID", "deny"),
    ("tool_list", {"colour": "red"}, {}, "ARGUMENT_INVALID", "deny"),
    ("tool_status", {}, {"delegation": {"allowedTools": ["git"]}}, "DELEGATION_TOOL_NOT_ALLOWED", "deny"),
    ("tool_status", {}, {"delegation": {"deniedCommands": ["tool status"]}}, "DELEGATION_COMMAND_DENIED",
     "deny"),
]


@pytest.mark.parametrize(("name", "args", "changes", "code", "behavior"), TABLE,
                         ids=[f"{row[3]}-{row[0]}" for row in TABLE])
def test_each_violation_code_is_reported_alone_with_the_reference_severity(
        name: str, args: dict[str, Any], changes: dict[str, Any], code: str, behavior: str) -> None:
    # An unknown command's effects are unknown, hence risky: below VERIFIED every gate would show too
    # (test_an_unknown_command_is_gated_as_unknown_effects); at VERIFIED it shows alone.
    level = TrustLevel.VERIFIED if code == "UNKNOWN_COMMAND" else TrustLevel.PROVENANCE_FAIL
    d = validate_call(TOOL, name, args, policy=make_policy(**changes), report=report(level),
                      effects_verified=True)
    assert codes(d) == {code}, [v.message for v in d.violations]
    (v,) = d.violations
    assert v.severity == VIOLATION_SEVERITY[code] and not d.valid
    assert d.behavior == behavior
    # The same call from a VERIFIED tool under a policy that says nothing extra is clean, except where
    # the call itself is wrong (unknown command, bad arguments): those no trust level can fix.
    clean = validate_call(TOOL, name, args, policy=make_policy(), report=report(TrustLevel.VERIFIED),
                          effects_verified=True)
    if code in ("UNKNOWN_COMMAND", "ARGUMENT_INVALID", "COST_EXCEEDS_LIMIT"):
        assert code in codes(clean)
    else:
        assert clean.valid and clean.behavior == "allow", [v.message for v in clean.violations]


def test_an_unknown_command_is_gated_as_unknown_effects() -> None:
    d = validate_call(TOOL, "tool_nuke", {}, policy=make_policy(), report=report(TrustLevel.UNVERIFIED),
                      effects_verified=True)
    assert {"UNKNOWN_COMMAND", "DESTRUCTIVE_OPERATION", "FILESYSTEM_DELETE"} <= codes(d)
    assert d.behavior == "deny" and d.argv is None


def test_severities_are_the_reference_validators() -> None:
    errors = {"DESTRUCTIVE_OPERATION", "NON_REVERSIBLE_OPERATION", "BILLABLE_OPERATION",
              "COST_EXCEEDS_LIMIT", "TRUST_BELOW_THRESHOLD", "UNKNOWN_COMMAND"}
    warnings = {"NETWORK_OPERATION", "FILESYSTEM_WRITE", "FILESYSTEM_DELETE"}
    assert {c for c in errors | warnings if VIOLATION_SEVERITY[c] == "error"} == errors


def test_every_violation_is_reported_not_just_the_first() -> None:
    meta = copy.deepcopy(TOOL)
    meta["commands"]["wreck"] = _cmd(_eff(destructive=True, reversible=False, network=True,
                                          **{"cost.billable": True, "cost.estimate": "high"}),
                                     arguments=[{"name": "target", "type": "integer"}])
    d = validate_call(meta, "tool_wreck", {"target": "not a number"},
                      policy=make_policy(requirements={"minTrustLevel": "VERIFIED"}),
                      report=report(TrustLevel.UNSIGNED), effects_verified=True)
    assert codes(d) == {"DESTRUCTIVE_OPERATION", "NON_REVERSIBLE_OPERATION", "NETWORK_OPERATION",
                        "BILLABLE_OPERATION", "COST_EXCEEDS_LIMIT", "TRUST_BELOW_THRESHOLD",
                        "ARGUMENT_INVALID"}
    assert d.behavior == "deny" and d.argv is None


@pytest.mark.parametrize("level", [TrustLevel.UNSIGNED, TrustLevel.UNVERIFIED, TrustLevel.PROVENANCE_FAIL])
@pytest.mark.parametrize("verified", [True, False])
def test_a_command_with_no_effects_is_never_valid_for_a_destructive_gate(level: TrustLevel,
                                                                          verified: bool) -> None:
    policy = make_policy(capabilities={"destructive": {"minTrustLevel": "VERIFIED", "below": "deny"}})
    d = validate_call(TOOL, "tool_bare", {}, policy=policy, report=report(level), effects_verified=verified)
    assert "DESTRUCTIVE_OPERATION" in codes(d) and not d.valid and d.behavior == "deny"
    # The reference validator returns valid for a command without effects; a verified declaration of
    # destructive: false is what makes it valid here.
    ok = validate_call(TOOL, "tool_status", {}, policy=policy, report=report(level), effects_verified=True)
    assert ok.valid and ok.behavior == "allow"


def test_a_tool_with_no_effects_anywhere_is_gated_on_every_command() -> None:
    meta = {"atip": {"version": "0.6"}, "name": "tool", "version": "1", "description": "d",
            "commands": {"a": _cmd(None), "b": {"description": "g", "commands": {"c": _cmd(None)}}}}
    policy = make_policy(capabilities={"destructive": {"minTrustLevel": "VERIFIED", "below": "deny"}})
    for name in ("tool_a", "tool_b_c"):
        d = validate_call(meta, name, {}, policy=policy, report=report(TrustLevel.UNVERIFIED),
                          effects_verified=True)
        assert "DESTRUCTIVE_OPERATION" in codes(d) and d.behavior == "deny"


def test_tool_level_destructive_applies_to_every_command_even_one_saying_otherwise() -> None:
    meta = copy.deepcopy(TOOL)
    meta["effects"] = {"destructive": True}
    policy = make_policy()
    names = [f"tool_{c}" for c in meta["commands"]]
    for name in names:
        args = {}
        d = validate_call(meta, name, args, policy=policy, report=report(TrustLevel.UNVERIFIED),
                          effects_verified=True)
        # tool_status declares destructive: false, verified; the tool's true still wins.
        assert "DESTRUCTIVE_OPERATION" in codes(d), name
    without = validate_call(TOOL, "tool_status", {}, policy=policy, report=report(TrustLevel.UNVERIFIED),
                            effects_verified=True)
    assert "DESTRUCTIVE_OPERATION" not in codes(without)


def test_unverified_safe_claims_do_not_relax_any_gate() -> None:
    d = validate_call(TOOL, "tool_status", {}, policy=make_policy(), report=report(TrustLevel.UNVERIFIED),
                      effects_verified=False)
    assert codes(d) == {"DESTRUCTIVE_OPERATION", "NON_REVERSIBLE_OPERATION", "NON_IDEMPOTENT_OPERATION",
                        "BILLABLE_OPERATION", "NETWORK_OPERATION", "FILESYSTEM_WRITE",
                        "FILESYSTEM_DELETE", "INTERACTIVE_OPERATION", "COST_EXCEEDS_LIMIT"}
    assert d.behavior == "ask"


def test_trust_threshold_is_the_verified_level_never_the_self_declared_source() -> None:
    policy = make_policy(requirements={"minTrustLevel": "VERIFIED"})
    native = copy.deepcopy(TOOL)
    native["trust"] = {"source": "native", "verified": True}
    d = validate_call(native, "tool_status", {}, policy=policy, report=report(TrustLevel.UNSIGNED),
                      effects_verified=True)
    assert codes(d) == {"TRUST_BELOW_THRESHOLD"} and d.behavior == "deny"
    inferred = copy.deepcopy(TOOL)
    inferred["trust"] = {"source": "inferred"}
    d = validate_call(inferred, "tool_status", {}, policy=policy, report=report(TrustLevel.VERIFIED),
                      effects_verified=True)
    assert d.valid and d.behavior == "allow"


def test_compromised_bytes_are_below_every_threshold() -> None:
    d = validate_call(TOOL, "tool_status", {}, policy=make_policy(), report=report(TrustLevel.COMPROMISED),
                      effects_verified=True)
    assert "TRUST_BELOW_THRESHOLD" in codes(d) and d.behavior == "deny"


def test_delegation_effect_restriction_forbids_the_effect_for_a_subagent() -> None:
    deleg = {"allowedTools": ["tool"], "effectRestrictions": {"destructive": False}}
    d = validate_call(TOOL, "tool_destroy", {}, policy=make_policy(), report=report(TrustLevel.VERIFIED),
                      effects_verified=True, delegation=deleg)
    assert codes(d) == {"DESTRUCTIVE_OPERATION"} and d.behavior == "deny"
    assert d.violations[0].rule == "delegation.effectRestrictions.destructive"
    # The lead agent itself (no delegation) may run it; the sub-agent may run the safe command.
    assert validate_call(TOOL, "tool_destroy", {}, policy=make_policy(), report=report(TrustLevel.VERIFIED),
                         effects_verified=True).valid
    assert validate_call(TOOL, "tool_status", {}, policy=make_policy(), report=report(TrustLevel.VERIFIED),
                         effects_verified=True, delegation=deleg).valid


def test_a_delegation_cannot_widen_what_the_policy_denies() -> None:
    policy = make_policy(tools={"deny": [{"name": "tool"}]})
    d = validate_call(TOOL, "tool_status", {}, policy=policy, report=report(TrustLevel.VERIFIED),
                      effects_verified=True, delegation={"allowedTools": ["tool"]})
    assert d.behavior == "deny"
    assert any(r.code == "TOOL_DENIED" for r in d.reasons)


def test_a_malformed_delegation_is_an_error_not_a_pass() -> None:
    with pytest.raises(PolicyError):
        validate_call(TOOL, "tool_status", {}, policy=make_policy(), report=report(TrustLevel.VERIFIED),
                      effects_verified=True, delegation={"effectRestrictions": {"destructive": True}})


def test_argv_words_name_the_same_command_as_the_flat_name() -> None:
    by_name = validate_call(TOOL, "tool_list", {"state": "open"}, policy=make_policy(),
                            report=report(TrustLevel.VERIFIED), effects_verified=True)
    by_words = validate_call(TOOL, ["tool", "list", "--state", "open"], None, policy=make_policy(),
                             report=report(TrustLevel.VERIFIED), effects_verified=True)
    assert by_name.command == by_words.command and by_name.argv == by_words.argv
    assert by_words.valid and by_words.behavior == "allow"
    bad = validate_call(TOOL, ["tool", "list", "--state", "merged", "--force"], None, policy=make_policy(),
                        report=report(TrustLevel.VERIFIED), effects_verified=True)
    assert codes(bad) == {"ARGUMENT_INVALID"} and len(bad.violations) == 2


@pytest.mark.parametrize("words", [["tool", "--yes", "destroy"], ["tool", "nuke"], ["other", "status"]])
def test_argv_words_that_name_no_one_command_are_unknown(words: list[str]) -> None:
    d = validate_call(TOOL, words, None, policy=make_policy(), report=report(TrustLevel.VERIFIED),
                      effects_verified=True)
    assert "UNKNOWN_COMMAND" in codes(d) and d.behavior == "deny"


@pytest.mark.parametrize("name", ["tool_destroy", "tool_fetch", "tool_bare", "tool_status", "tool_nuke"])
@pytest.mark.parametrize("level", list(TrustLevel))
def test_validator_and_admission_gating_are_one_decision(name: str, level: TrustLevel) -> None:
    """The call's capability verdicts are exactly those admission's decide() reaches for the same
    command line with the effects admission's walker finds (facts/effects.command_states)."""
    policy = make_policy()
    d = validate_call(TOOL, name, {}, policy=policy, report=report(level), effects_verified=True)
    words = name.split("_")[1:]
    states, why = command_states(TOOL, words)
    direct = decide(policy, report(level), tool_name="tool", command=words, effects=states,
                    effects_verified=True, interactive=True, effects_unknown=why)
    gated = {r.rule for r in direct.reasons if r.code in ("CAPABILITY_GATED", "TRUST_BELOW_MINIMUM",
                                                          "TRUST_COMPROMISED")}
    # UNKNOWN_COMMAND and COST_EXCEEDS_LIMIT are the call's own checks; every other violation is a gate.
    assert {v.rule for v in d.violations if v.code not in ("UNKNOWN_COMMAND", "COST_EXCEEDS_LIMIT")} == gated
    assert d.decision.behavior == direct.behavior


def test_a_policy_without_gates_allows_what_the_reference_would() -> None:
    policy = compose([layer_from_document({"version": 1, "permissions": {"allow": ["tool *"]}},
                                          source="local")])
    d = validate_call(TOOL, "tool_destroy", {}, policy=policy, report=report(TrustLevel.UNSIGNED))
    assert d.valid and d.behavior == "allow"


def test_ask_without_anyone_to_answer_is_deny() -> None:
    d = validate_call(TOOL, "tool_destroy", {}, policy=make_policy(), report=report(TrustLevel.UNVERIFIED),
                      effects_verified=True, interactive=False)
    assert d.behavior == "deny" and "DESTRUCTIVE_OPERATION" in codes(d)


# -- check_call with a real admission: effects count as verified only for the bytes admission verified --

ISSUER = "https://token.actions.githubusercontent.com"
ORG_ID = "https://github.com/example-org/tools/.github/workflows/release.yml@refs/tags/v1.0.0"
BINARY = b"#!/bin/sh\necho tool\n"


@pytest.fixture(scope="module")
def admitted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    ts = testsigstore.TestSigstore(seed=113)
    d = tmp_path_factory.mktemp("callgate")
    root = ts.write_trusted_root(d / "trusted_root.json")
    tool = d / "tool"
    tool.write_bytes(BINARY)
    tool.chmod(0o755)
    sig = d / "tool.sigstore.json"
    sig.write_text(json.dumps(ts.sign_artifact(BINARY, identity=ORG_ID, issuer=ISSUER)))
    meta = copy.deepcopy(TOOL)
    meta["trust"] = {"source": "vendor", "integrity": {"checksum": "sha256:" + hashlib.sha256(BINARY).hexdigest()}}
    meta_path = d / "meta.json"
    meta_path.write_text(json.dumps(meta))
    meta_bundle = d / "meta.sigstore.json"
    meta_bundle.write_text(json.dumps(ts.sign_artifact(meta_path.read_bytes(), identity=ORG_ID, issuer=ISSUER)))
    pol = d / "policy.json"
    pol.write_text(json.dumps({
        "version": 1,
        "trust": {"trustedRoots": [{"path": str(root)}], "signers": [{"identity": ORG_ID, "issuer": ISSUER}]},
        # No rule: only verified metadata declaring the command read-only lets it run.
        "defaults": {"noMatch": "deny", "allowVerifiedReadOnly": True},
    }))
    return {"dir": d, "tool": tool, "sig": sig, "meta": meta_path, "meta_bundle": meta_bundle, "policy": pol,
            "meta_doc": meta}


def test_check_call_counts_effects_verified_only_for_the_admitted_bytes(admitted, monkeypatch,
                                                                         tmp_path: Path) -> None:
    monkeypatch.delenv("ATIP_TRUST_ORG_POLICY", raising=False)
    monkeypatch.setenv("ATIP_CACHE_DIR", str(tmp_path / "cache"))
    policy = atip_trust.load_admission_policy(admitted["policy"])
    adm = atip_trust.admit(admitted["tool"], policy=policy, bundles=[admitted["sig"]], command="status",
                           metadata=admitted["meta"], metadata_bundle=admitted["meta_bundle"],
                           audit_log=tmp_path / "audit.jsonl")
    assert adm.report.trust_level is TrustLevel.VERIFIED and adm.effects_verified
    raw = admitted["meta"].read_bytes()
    for same in (parse_metadata(raw), raw):
        d = check_call(adm, same, "tool_status", {}, policy)
        assert d.effects_verified and d.behavior == "allow", d.reasons
    # A parsed mapping cannot prove it is the admitted bytes; other bytes are other metadata (here a
    # forged copy declaring the destructive command read-only); a bare report vouches for no metadata.
    forged = json.loads(raw)
    forged["commands"]["destroy"]["effects"] = SAFE
    for other, name in ((admitted["meta_doc"], "tool_status"), (json.dumps(forged).encode(), "tool_destroy")):
        d = check_call(adm, other, name, {}, policy)
        assert not d.effects_verified and d.behavior == "deny", name
    d = check_call(adm.report, raw, "tool_status", {}, policy)
    assert not d.effects_verified and d.behavior == "deny"


# RFC §3.6 interactive: (declared interactive effects, what the caller gives stdin, the policy's
# interactive gate, someone to answer, INTERACTIVE_REQUIRED?, behavior). The tool is VERIFIED and its
# metadata verified, so no other gate speaks: the behavior is the interactive check's alone.
INTERACTIVE_TABLE = [
    ({"stdin": "password"}, "none", None, True, True, "ask"),
    ({"stdin": "password"}, "none", None, False, True, "deny"),  # ask without a person is deny
    ({"stdin": "required"}, "none", {"minTrustLevel": "VERIFIED", "below": "deny"}, True, True, "deny"),
    ({"tty": True}, "none", {"minTrustLevel": "VERIFIED", "below": "ask", "always": "deny"}, True, True,
     "deny"),
    ({"tty": True}, "pipe", None, True, True, "ask"),  # a pipe is no terminal
    ({"stdin": "password"}, "pipe", None, True, False, "allow"),  # input is provided
    ({"stdin": "required"}, "tty", None, True, False, "allow"),
    ({"tty": True}, "tty", None, True, False, "allow"),
    ({"stdin": "optional", "prompts": True}, "none", None, True, False, "allow"),  # EOF is the tool's "no"
]


@pytest.mark.parametrize(("inter", "stdin", "gate", "person", "flagged", "behavior"), INTERACTIVE_TABLE)
def test_rfc_3_6_call_validator_interactive_required_asks_or_denies_by_policy_never_silently_allows(
        inter: dict[str, Any], stdin: str, gate: dict[str, Any] | None, person: bool, flagged: bool,
        behavior: str) -> None:
    meta = copy.deepcopy(TOOL)
    meta["commands"]["login"] = _cmd({**SAFE, "interactive": {"stdin": "none", "prompts": False, **inter}})
    policy = make_policy() if gate is None else make_policy(
        capabilities={"interactive": gate})
    d = validate_call(meta, "tool_login", {}, policy=policy, report=report(TrustLevel.VERIFIED),
                      effects_verified=True, stdin=stdin, interactive=person)  # type: ignore[arg-type]
    assert ("INTERACTIVE_REQUIRED" in codes(d)) is flagged, [v.message for v in d.violations]
    assert d.behavior == behavior, [r.message for r in d.reasons]
    if flagged:
        (r,) = [r for r in d.reasons if r.code == "INTERACTIVE_REQUIRED"]
        assert r.expected and r.actual and "terminal" in str(r.actual)


def test_rfc_3_6_check_call_defaults_to_no_stdin_as_a_tool_call_runs() -> None:
    meta = copy.deepcopy(TOOL)
    meta["commands"]["login"] = _cmd({**SAFE, "interactive": {"stdin": "password"}})
    d = check_call(report(TrustLevel.VERIFIED), meta, "tool_login", {}, make_policy(), interactive=False)
    assert "INTERACTIVE_REQUIRED" in codes(d) and d.behavior == "deny"
    with pytest.raises(atip_trust.errors.UsageError):
        check_call(report(TrustLevel.VERIFIED), meta, "tool_login", {}, make_policy(),
                   stdin="keyboard")  # type: ignore[arg-type]
