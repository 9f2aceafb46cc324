"""Everything a tool declares is read (issue 27): one table test per RFC statement, through
``atip-trust admit`` as a user calls it (the CLI's parser and catch point, verify_helpers.cli), under the *shipped* default policy with a signer added
(``--certificate-identity``), with the tool and its metadata signed by that signer so the metadata is
verified and the read-only default can allow.

The attack these tables close: a verified command that declares ``deletes: ["issue"]`` (or a
creation, modification or subprocess) while its booleans all say "safe" was allowed as
``READ_ONLY_VERIFIED``, even in CI, because the classifier read only the boolean fields.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from atip_trust.facts.aip14 import parse_tool_md
from atip_trust.facts.effects import EFFECT_CLASSES, classify, command_lookup, read_only

import testsigstore
from verify_helpers import cli

ROOT = Path(__file__).resolve().parents[2]
ISSUER = "https://token.actions.githubusercontent.com"
ORG_ID = "https://github.com/example-org/tools/.github/workflows/release.yml@refs/tags/v1.0.0"

#: Every RFC §3.6 boolean declared safe: the read-only profile the default policy allows when verified.
READ_ONLY: dict[str, Any] = {
    "destructive": False, "reversible": True, "idempotent": True, "network": True,
    "filesystem": {"read": True, "write": False, "delete": False}, "cost": {"billable": False},
    "interactive": {"stdin": "none", "prompts": False, "tty": False},
}


class Signed:
    """A ``gh`` and its metadata, both signed by ORG_ID with a test Sigstore."""

    def __init__(self, d: Path) -> None:
        self.ts = testsigstore.TestSigstore(seed=27)
        self.d = d
        self.ts.write_trusted_root(d / "trusted_root.json")
        self.body = b"#!/bin/sh\necho gh\n"
        self.tool = d / "gh"
        self.tool.write_bytes(self.body)
        self.tool.chmod(0o755)
        self.bundle = d / "gh.sigstore.json"
        self.bundle.write_text(json.dumps(self.ts.sign_artifact(self.body, identity=ORG_ID, issuer=ISSUER)))
        self.n = 0

    def metadata(self, commands: dict[str, Any], *, sign: bool = True, **root: Any) -> list[str]:
        """Write a metadata document (bound to the tool's digest) and, when ``sign``, its bundle; the
        admit flags that pass them."""
        self.n += 1
        doc = {"atip": {"version": "0.6"}, "name": "gh", "version": "2.0.0", "description": "GitHub CLI",
               "binary": {"hash": "sha256:" + hashlib.sha256(self.body).hexdigest(), "name": "gh"},
               "trust": {"source": "vendor", "verified": True}, "commands": commands, **root}
        path = self.d / f"meta{self.n}.json"
        path.write_text(json.dumps(doc))
        flags = ["--metadata", str(path)]
        if sign:
            mb = self.d / f"meta{self.n}.sigstore.json"
            mb.write_text(json.dumps(self.ts.sign_artifact(path.read_bytes(), identity=ORG_ID, issuer=ISSUER)))
            flags += ["--metadata-bundle", str(mb)]
        return flags

    def admit(self, command: str, meta_flags: list[str], *, policy: Path | None = None) -> dict[str, Any]:
        """``admit`` as CI runs it: no one to answer, so an ask is a denial."""
        pol = ["--policy", str(policy)] if policy is not None else []  # none: the embedded default
        r = cli("admit", str(self.tool), f"--command={command}", *pol, *meta_flags,
                "--trusted-root", str(self.d / "trusted_root.json"), "--bundle", str(self.bundle),
                "--certificate-identity", ORG_ID, "--certificate-oidc-issuer", ISSUER,
                "--non-interactive", "--no-audit", "--no-cache", "--format", "json")
        assert r.code in (0, 1, 2, 3), r.out + r.err
        out: dict[str, Any] = r.json
        out["exit"] = r.code
        return out


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> Signed:
    return Signed(tmp_path_factory.mktemp("effects"))


def _codes(out: dict[str, Any]) -> list[str]:
    return [r["code"] for r in out["decision"]["reasons"]]


# -- RFC §3.6: every effects field ---------------------------------------------------------------------

#: (effects declared by the verified command, whether the default policy may allow it as read-only).
RFC_3_6_TABLE: list[tuple[str, dict[str, Any], bool]] = [
    ("every boolean safe", READ_ONLY, True),
    ("deletes an issue", {**READ_ONLY, "deletes": ["issue"]}, False),
    ("creates a pull request", {**READ_ONLY, "creates": ["pull_request"]}, False),
    ("modifies a label", {**READ_ONLY, "modifies": ["label"]}, False),
    ("starts a subprocess", {**READ_ONLY, "subprocess": True}, False),
    ("declares no change at all", {**READ_ONLY, "creates": [], "modifies": [], "deletes": [],
                                   "subprocess": False}, True),
    ("cost estimate free, billable unsaid", {**READ_ONLY, "cost": {"estimate": "free"}}, True),
    ("cost estimate high, billable unsaid", {**READ_ONLY, "cost": {"estimate": "high"}}, False),
    ("writes files", {**READ_ONLY, "filesystem": {"write": True, "delete": False}}, False),
]


@pytest.mark.parametrize(("case", "effects", "read_only_ok"), RFC_3_6_TABLE, ids=[c[0] for c in RFC_3_6_TABLE])
def test_rfc_3_6_a_declared_change_is_never_read_only_under_the_shipped_default(
        signed: Signed, case: str, effects: dict[str, Any], read_only_ok: bool) -> None:
    flags = signed.metadata({"issue": {"description": "Issues", "commands": {
        "delete": {"description": "Delete an issue", "effects": effects}}}})
    out = signed.admit("issue delete 1", flags)
    assert out["trust_level"] == "VERIFIED" and out["effects_verified"] is True, out
    if read_only_ok:
        assert out["exit"] == 0 and _codes(out)[0] == "READ_ONLY_VERIFIED", out
    else:
        # CI: nobody can answer, so the no-match ask is a denial; never READ_ONLY_VERIFIED.
        assert out["exit"] == 1 and "READ_ONLY_VERIFIED" not in _codes(out), out
        assert out["decision"]["behavior"] == "deny"


def test_rfc_3_6_a_change_declared_at_tool_level_is_not_undone_by_the_command(signed: Signed) -> None:
    # The tool says it deletes; the command's empty list cannot cancel that (risk wins across levels).
    flags = signed.metadata({"issue": {"description": "Issues", "commands": {
        "view": {"description": "View", "effects": {**READ_ONLY, "deletes": []}}}}},
        effects={"deletes": ["cache"]})
    out = signed.admit("issue view 1", flags)
    assert out["exit"] == 1 and "READ_ONLY_VERIFIED" not in _codes(out), out


@pytest.mark.parametrize(("field", "value", "cls", "state"), [
    ("creates", ["x"], "creates", "risky"), ("creates", [], "creates", "safe"),
    ("modifies", ["x"], "modifies", "risky"), ("deletes", ["x"], "deletes", "risky"),
    ("deletes", "issue", "deletes", "unknown"),  # not a list: not a declaration
    ("subprocess", True, "subprocess", "risky"), ("subprocess", False, "subprocess", "safe"),
    ("subprocess", "yes", "subprocess", "unknown"),
    ("cost", {"estimate": "free"}, "billable", "safe"), ("cost", {"estimate": "low"}, "billable", "unknown"),
    ("cost", {"estimate": "free", "billable": True}, "billable", "risky"),
    ("interactive", {"stdin": "password"}, "interactive", "risky"),
    ("interactive", {"tty": True}, "interactive", "risky"),
])
def test_rfc_3_6_classification_table(field: str, value: Any, cls: str, state: str) -> None:
    assert classify({field: value})[cls] == state
    assert set(classify({field: value})) == set(EFFECT_CLASSES)


def test_rfc_3_6_read_only_needs_the_booleans_and_no_declared_change() -> None:
    assert read_only(READ_ONLY) and not read_only(None) and not read_only({})
    for extra in ({"deletes": ["issue"]}, {"creates": ["x"]}, {"modifies": ["x"]}, {"subprocess": True}):
        assert not read_only({**READ_ONLY, **extra}), extra


# -- AIP-14: mutates classes, requires, risk_level ----------------------------------------------------

def _tool_md(front: str) -> bytes:
    return (f"---\nname: t\nid: t.tool\ndescription: d\nversion: 1.0.0\ninputs: {{}}\noutputs: {{}}\n"
            f"{front}---\n# T\n").encode()


#: (frontmatter, class, state the contract gives it).
AIP14_TABLE: list[tuple[str, str, str]] = [
    ('mutates: ["database:orders"]\n', "modifies", "risky"),
    ('mutates: ["secret:token"]\n', "modifies", "risky"),
    ('mutates: ["external:payments"]\n', "modifies", "risky"),
    ('mutates: ["external:payments"]\n', "network", "risky"),
    ('mutates: ["some-future-class:x"]\n', "modifies", "risky"),  # unknown classes count as risky
    ('mutates: ["workspace:/out"]\n', "filesystemWrite", "risky"),
    ("mutates: []\n", "modifies", "safe"),
    ("mutates: []\n", "deletes", "safe"),
    ("requires: {tools: [git]}\n", "subprocess", "risky"),
    ("requires: {network: [api.example.com]}\n", "network", "risky"),
    ("risk_level: 3\n", "destructive", "risky"),
]


@pytest.mark.parametrize(("front", "cls", "state"), AIP14_TABLE)
def test_aip14_every_mutates_class_and_requirement_maps_to_a_gated_class(front: str, cls: str, state: str) -> None:
    assert classify(parse_tool_md(_tool_md(front)).effects)[cls] == state


def test_aip14_a_contract_that_mutates_anything_is_never_read_only() -> None:
    for front in ('risk_level: 0\nidempotent: true\ncost_class: trivial\nmutates: ["external:x"]\n',
                  'risk_level: 0\nidempotent: true\ncost_class: trivial\nmutates: ["database:x"]\n'):
        assert not read_only(parse_tool_md(_tool_md(front)).effects), front
    pure = parse_tool_md(_tool_md("risk_level: 0\nidempotent: true\ncost_class: trivial\nmutates: []\n"))
    assert read_only(pure.effects)


# -- RFC §3.1.1: partial discovery ---------------------------------------------------------------------

PARTIAL_INCLUDED = {"issue": {"description": "Issues", "commands": {
    "view": {"description": "View", "effects": READ_ONLY}}}}


@pytest.fixture(scope="module")
def allow_gh(signed: Signed) -> Path:
    """The shipped default plus an allow rule ``gh *`` (written for the commands the tool declares)."""
    doc = json.loads((ROOT / "policies" / "default.json").read_text())
    doc["permissions"] = {"allow": ["gh *"]}
    path = signed.d / "allow-gh.json"
    path.write_text(json.dumps(doc))
    return path


#: (omitted.safetyAssumption, or None for none, metadata signed, expected exit in CI, reason code).
RFC_3_1_1_TABLE: list[tuple[str | None, bool, int, str]] = [
    ("unknown", True, 1, "COMMAND_OMITTED"),
    ("known-unsafe", True, 1, "COMMAND_OMITTED"),
    (None, True, 1, "COMMAND_OMITTED"),  # RFC: absent reads as unknown
    ("made-up-value", True, 2, "MALFORMED_INPUT"),  # the schema refuses it: a denial, exit 2
    ("known-safe", True, 0, "COMMAND_ALLOWED"),
    ("same-as-included", True, 0, "COMMAND_ALLOWED"),
    ("known-safe", False, 1, "COMMAND_OMITTED"),  # a safety claim of unverified metadata
    ("same-as-included", False, 1, "COMMAND_OMITTED"),
]


@pytest.mark.parametrize(("assumption", "sign", "exit_code", "code"), RFC_3_1_1_TABLE)
def test_rfc_3_1_1_an_omitted_command_takes_the_partial_documents_safety_assumption(
        signed: Signed, allow_gh: Path, assumption: str | None, sign: bool, exit_code: int, code: str) -> None:
    omitted = {"reason": "filtered"} if assumption is None else {"reason": "filtered",
                                                                 "safetyAssumption": assumption}
    flags = signed.metadata(PARTIAL_INCLUDED, sign=sign, partial=True, omitted=omitted,
                            filter={"commands": ["issue"], "depth": None})
    out = signed.admit("repo delete example-org/tools", flags, policy=allow_gh)
    assert out["exit"] == exit_code, out
    assert code in _codes(out), out
    if exit_code == 0:
        omitted_reason = next(r for r in out["decision"]["reasons"] if r["code"] == "COMMAND_OMITTED")
        assert omitted_reason["actual"] == assumption


def test_rfc_3_1_1_a_full_document_is_not_read_as_partial(signed: Signed, allow_gh: Path) -> None:
    # Without partial: true the omitted block means nothing; the allow rule decides as before.
    flags = signed.metadata(PARTIAL_INCLUDED, omitted={"safetyAssumption": "known-unsafe"})
    out = signed.admit("repo delete x", flags, policy=allow_gh)
    assert out["exit"] == 0 and "COMMAND_OMITTED" not in _codes(out), out


def test_rfc_3_1_1_known_safe_does_not_relax_an_ambiguous_command() -> None:
    # An option before the words: not an omitted command but unreadable words; no assumption applies.
    doc = {"partial": True, "omitted": {"safetyAssumption": "known-safe"}, "commands": PARTIAL_INCLUDED}
    states, why, omitted = command_lookup(doc, ["--yes", "issue", "delete"])
    assert why is not None and omitted is None and set(states.values()) == {"unknown"}
    states, why, omitted = command_lookup(doc, ["repo", "delete"])
    assert why is None and omitted == "known-safe" and states["destructive"] == "safe"
    assert states["filesystemWrite"] == "unknown"  # "no destructive effects" says nothing else


# -- RFC §8.2 rule 1: the compiled description never calls a declared change read-only ------------------

@pytest.mark.parametrize("extra", [{"deletes": ["issue"]}, {"creates": ["pr"]}, {"modifies": ["label"]},
                                   {"subprocess": True}])
def test_rfc_8_2_compile_never_flags_a_declared_change_read_only(tmp_path: Path, extra: dict[str, Any]) -> None:
    effects = {"network": False, "filesystem": {"write": False}, **extra}
    doc = {"atip": {"version": "0.6"}, "name": "gh", "version": "1", "description": "GitHub CLI",
           "commands": {"view": {"description": "View", "effects": {"network": False,
                                                                      "filesystem": {"write": False}}},
                        "zap": {"description": "Zap", "effects": effects}}}
    path = tmp_path / "gh.json"
    path.write_text(json.dumps(doc))
    r = cli("compile", "--provider", "openai", "--all", str(path))
    assert r.code == 0, r.out + r.err
    described = {t["function"]["name"]: t["function"]["description"] for t in json.loads(r.out)["tools"]}
    assert "READ-ONLY" in described["gh_view"] and "READ-ONLY" not in described["gh_zap"], described


# -- ATIP 0.4 trust fields and RFC §4.10.4 "_" fields ----------------------------------------------------

def _write_doc(signed: Signed, doc: dict[str, Any], *, sign: bool) -> list[str]:
    signed.n += 1
    path = signed.d / f"legacy{signed.n}.json"
    path.write_text(json.dumps(doc))
    flags = ["--metadata", str(path)]
    if sign:
        mb = signed.d / f"legacy{signed.n}.sigstore.json"
        mb.write_text(json.dumps(signed.ts.sign_artifact(path.read_bytes(), identity=ORG_ID, issuer=ISSUER)))
        flags += ["--metadata-bundle", str(mb)]
    return flags


def test_rfc_4_10_4_and_atip_0_4_trust_fields_are_accepted_and_reported_as_claims(tmp_path: Path) -> None:
    doc = {"atip": "0.4", "name": "gh", "version": "2.0.0", "description": "GitHub CLI",
           "trust": {"source": "vendor", "verified": True, "checksum": "sha256:" + "a" * 64,
                     "signedBy": ORG_ID, "attestation": "https://example.com/gh.intoto.jsonl"},
           "_generation": {"method": "help-parsing", "confidence": "low"},
           "commands": {"pr": {"description": "Pull requests"}}}
    path = tmp_path / "gh-0.4.json"
    path.write_text(json.dumps(doc))
    r = cli("metadata", "check", str(path), "--format", "json")
    assert r.code == 0, r.out + r.err  # was exit 2 for each of the four fields
    out = json.loads(r.out)
    assert out["claims"]["legacy_0_4"] == {k: doc["trust"][k] for k in ("checksum", "signedBy", "attestation")}
    assert out["claims"]["checksum"] is None  # not read as the 0.5+ integrity checksum


def test_atip_0_4_signed_by_and_checksum_are_never_anchors(signed: Signed) -> None:
    tool_digest = "sha256:" + hashlib.sha256(signed.body).hexdigest()
    base = {"atip": "0.4", "name": "gh", "version": "2.0.0", "description": "GitHub CLI",
            "commands": {"status": {"description": "Status", "effects": READ_ONLY}}}
    # signedBy names the very signer policy trusts, but nothing signs the document: not verified.
    flags = _write_doc(signed, {**base, "trust": {"source": "vendor", "signedBy": ORG_ID}}, sign=False)
    out = signed.admit("status", flags)
    assert out["effects_verified"] is False and "READ_ONLY_VERIFIED" not in _codes(out), out
    # A signed document whose only digest is the 0.4 checksum is not bound to the tool by it.
    flags = _write_doc(signed, {**base, "trust": {"source": "vendor", "checksum": tool_digest}}, sign=True)
    out = signed.admit("status", flags)
    assert out["effects_verified"] is False and "READ_ONLY_VERIFIED" not in _codes(out), out
