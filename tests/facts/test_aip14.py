"""AIP-14 TOOL.md contracts (facts/aip14.py, _base/yamlio.py): the frontmatter mapped onto effect
classes, a risk_level 3 contract gating like destructive: true, an unverified contract only tightening,
and hostile YAML (alias bombs, tags, duplicate keys, oversize input) refused before it is built."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from atip_trust._base.limits import LIMITS
from atip_trust.agents.calls import validate_call
from atip_trust.errors import InputTooLargeError, MalformedInputError, MetadataError
from atip_trust.facts.aip14 import contract_states, load_tool_md, parse_tool_md
from atip_trust.facts.effects import classify
from atip_trust.facts.report import TrustLevel, TrustReport
from atip_trust.policy.compose import compose
from atip_trust.policy.load import layer_from_document

HEAD = """---
name: Delete repository
id: github.repo.delete
description: Delete a repository.
version: 1.0.0
inputs: {type: object, properties: {repo: {type: string}}}
outputs: {type: object, properties: {}}
"""


def tool_md(extra: str = "", body: str = "\n## Description\n\nprose\n") -> bytes:
    return (HEAD + extra + "---\n" + body).encode()


SAFE = {"destructive": False, "reversible": True, "idempotent": True, "network": False,
        "filesystem": {"read": True, "write": False, "delete": False},
        "cost": {"billable": False, "estimate": "free"},
        "interactive": {"stdin": "none", "prompts": False, "tty": False}}
GH: dict[str, Any] = {"atip": {"version": "0.6"}, "name": "gh", "version": "2", "description": "gh",
                      "commands": {"repo": {"description": "r", "commands": {
                          "delete": {"description": "d", "arguments": [{"name": "repo", "type": "string"}],
                                     "effects": SAFE}}}}}


def policy() -> Any:
    return compose([layer_from_document({
        "version": 1, "permissions": {"allow": ["gh *"]},
        "capabilities": {"destructive": {"minTrustLevel": "VERIFIED", "below": "deny"},
                         "nonReversible": {"minTrustLevel": "VERIFIED", "below": "deny"}},
        "calls": {"maxCostEstimate": "low"}}, source="local")])


REPORT = TrustReport(path="/usr/bin/gh", digests={"sha256": "ab" * 32}, trust_level=TrustLevel.UNVERIFIED)


def codes(d: Any) -> set[str]:
    return {v.code for v in d.violations}


@pytest.mark.parametrize("verified", [True, False])
def test_risk_level_3_gates_like_destructive_true(verified: bool) -> None:
    contract = parse_tool_md(tool_md("risk_level: 3\n"))
    with_contract = validate_call(GH, "gh_repo_delete", {"repo": "o/r"}, policy=policy(), report=REPORT,
                                  effects_verified=True, contracts=[contract], contracts_verified=verified)
    destructive = copy.deepcopy(GH)
    destructive["commands"]["repo"]["commands"]["delete"]["effects"] = {**SAFE, "destructive": True,
                                                                         "reversible": False}
    declared = validate_call(destructive, "gh_repo_delete", {"repo": "o/r"}, policy=policy(), report=REPORT,
                             effects_verified=True)
    assert codes(with_contract) == codes(declared) == {"DESTRUCTIVE_OPERATION", "NON_REVERSIBLE_OPERATION"}
    assert with_contract.behavior == declared.behavior == "deny"
    # Without the contract the verified metadata says the command is safe.
    plain = validate_call(GH, "gh_repo_delete", {"repo": "o/r"}, policy=policy(), report=REPORT,
                          effects_verified=True)
    assert plain.valid and plain.behavior == "allow"


def test_an_unverified_contract_only_tightens() -> None:
    # risk_level 0 and trivial cost claim everything is safe; unverified, that relaxes nothing.
    contract = parse_tool_md(tool_md("risk_level: 0\nmutates: []\nidempotent: true\ncost_class: trivial\n"))
    meta = copy.deepcopy(GH)
    del meta["commands"]["repo"]["commands"]["delete"]["effects"]  # nothing declared: unknown
    for verified, expect in ((False, {"DESTRUCTIVE_OPERATION", "NON_REVERSIBLE_OPERATION", "COST_EXCEEDS_LIMIT"}),
                             (True, set())):
        d = validate_call(meta, "gh_repo_delete", {"repo": "o/r"}, policy=policy(), report=REPORT,
                          effects_verified=True, contracts=[contract], contracts_verified=verified)
        assert codes(d) == expect, verified
    states = contract_states(contract, verified=False)
    assert "safe" not in states.values() and contract_states(contract, verified=True)["destructive"] == "safe"


@pytest.mark.parametrize(("approval", "mutates", "asks"), [
    ("always", "[]", True), ("on-mutate", '["workspace:/tmp"]', True), ("on-mutate", "[]", False),
    ("policy:org/strict", "[]", True), ("auto", '["database:users"]', False),
])
def test_approval_class_maps_to_ask(approval: str, mutates: str, asks: bool) -> None:
    contract = parse_tool_md(tool_md(f"approval: {approval}\nmutates: {mutates}\nrisk_level: 0\n"))
    assert contract.approval == ("ask" if asks else "auto")
    d = validate_call(GH, "gh_repo_delete", {"repo": "o/r"}, policy=policy(),
                      report=TrustReport(path="/usr/bin/gh", digests={"sha256": "ab" * 32},
                                         trust_level=TrustLevel.VERIFIED),
                      effects_verified=True, contracts=[contract], contracts_verified=True)
    assert ("APPROVAL_REQUIRED" in codes(d)) is asks
    assert d.behavior == ("ask" if asks else "allow")


def test_mapping_table() -> None:
    c = parse_tool_md(tool_md('mutates: ["workspace:/out", "network:api.example.com", "secret:tok"]\n'
                              "requires: {network: [api.example.com]}\nidempotent: false\n"
                              "cost_class: expensive\ntimeout_ms: 20000\nrisk_level: 1\n"))
    assert c.effects == {"destructive": False, "filesystem": {"write": True}, "network": True,
                         "modifies": ["workspace:/out", "network:api.example.com", "secret:tok"],
                         "idempotent": False,
                         "cost": {"billable": True, "estimate": "high"}, "duration": {"timeout": "20s"}}
    st = classify(c.effects)
    assert (st["filesystemWrite"], st["network"], st["nonIdempotent"], st["billable"], st["destructive"]) == (
        "risky", "risky", "risky", "risky", "safe")
    assert c.timeout_ms == 20000 and c.risk_level == 1 and c.mutates[2] == "secret:tok"
    # Risk wins inside one contract too: risk_level 0 says no writes, mutates says workspace writes.
    both = parse_tool_md(tool_md('risk_level: 0\nmutates: ["workspace:/x"]\n'))
    assert classify(both.effects)["filesystemWrite"] == "risky"


def test_the_aip14_example_parses(tmp_path: Path) -> None:
    text = HEAD.replace("Delete repository", "Pricing Snapshot").replace("github.repo.delete",
                                                                          "pricing-snapshot")
    text += ('idempotent: true\nmutates: ["network:*"]\nrequires:\n  network: ["*"]\napproval: "auto"\n'
             'risk_level: 0\ncost_class: "metered"\ntimeout_ms: 20000\nretry:\n  max_attempts: 2\n'
             "driver_constraints:\n  require_kind: [\"http\", \"sdk\"]    # no shell\n"
             "tags: [finance, scraping, read-only]\n---\n\n## Description\n")
    path = tmp_path / "TOOL.md"
    path.write_text(text)
    c = load_tool_md(path)
    assert c.id == "pricing-snapshot" and c.approval == "auto"
    assert c.effects["network"] is True and c.effects["cost"] == {"billable": True, "estimate": "low"}
    assert c.sha256.startswith("sha256:")


BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n" \
       "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n"


@pytest.mark.parametrize(("extra", "error", "match"), [
    (BOMB, MalformedInputError, "anchors and aliases"),
    ("base: &x {risk_level: 0}\n", MalformedInputError, "anchors and aliases"),
    ("risk_level: !!int 3\n", MalformedInputError, "explicit YAML tag"),
    ("x: !!python/object/apply:os.system [true]\n", MalformedInputError, "explicit YAML tag"),
    ("risk_level: 0\nrisk_level: 3\n", MalformedInputError, "duplicate key 'risk_level'"),
    ("<<: {risk_level: 0}\n", MalformedInputError, "merge keys"),
    ("1: x\n", MalformedInputError, "keys must be strings"),
    ("released: 2026-01-01\n", MalformedInputError, "not a JSON value"),
    # Python's int() refuses 4,300+ digits with a bare ValueError: the project's error, naming the path.
    ("timeout_ms: " + "1" * 5000 + "\n", MalformedInputError, r"\$\.timeout_ms: an integer of 5000 digits"),
    ("x: [0x" + "f" * 5000 + "]\n", MalformedInputError, r"\$\.x\[0\]: an integer"),
    ("risk_level: 4\n", MetadataError, "risk_level"),
    ("risk_level: true\n", MetadataError, "risk_level"),
    ("approval: never\n", MetadataError, "approval"),
    ("cost_class: free\n", MetadataError, "cost_class"),
    ("timeout_ms: -1\n", MetadataError, "timeout_ms"),
    ("mutates: workspace\n", MetadataError, "mutates"),
    ("run: ./x.sh\n", MetadataError, "DRIVER"),
    ("nest: " + "[" * 100 + "]" * 100 + "\n", InputTooLargeError, "deeper"),
])
def test_hostile_or_malformed_frontmatter_is_refused(extra: str, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        parse_tool_md(tool_md(extra))


def test_size_and_node_caps_hold_before_building() -> None:
    with pytest.raises(MetadataError, match="over the cap"):
        parse_tool_md(tool_md(body="x" * (LIMITS.tool_md_bytes + 1)))
    many = "tags: [" + ", ".join("t" for _ in range(LIMITS.yaml_events)) + "]\n"
    with pytest.raises(InputTooLargeError, match="YAML nodes"):
        parse_tool_md(tool_md(many))


@pytest.mark.parametrize("data", [b"no frontmatter\n", b"---\nname: x\n", b"---\n- a list\n---\n",
                                  b"---\nname: [unclosed\n---\n", b"---\n\xff\xfe\n---\n"])
def test_a_file_without_a_well_formed_frontmatter_is_refused(data: bytes) -> None:
    with pytest.raises((MetadataError, MalformedInputError)):
        parse_tool_md(data)
