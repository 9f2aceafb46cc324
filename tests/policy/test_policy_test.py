"""``atip-trust policy test CASES`` (issue 25 item 5): a policy's expected decisions, run through the one
admission, and the shipped cases for every shipped policy kept true in this suite."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from verify_helpers import cli

REPO = Path(__file__).resolve().parents[2]
CASES = sorted((REPO / "policies" / "cases").glob("*.cases.json"))
TOOL = "#!/bin/sh\necho tool\n"


@pytest.fixture(autouse=True)
def no_org(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ATIP_TRUST_ORG_POLICY", raising=False)


def test_every_shipped_policy_has_cases() -> None:
    policies = {p.stem for p in (REPO / "policies").glob("*.json")} - {"trusted-builders"}  # a builder map
    assert {p.name.removesuffix(".cases.json") for p in CASES} == policies


@pytest.mark.parametrize("cases", CASES, ids=lambda p: p.name)
def test_shipped_cases_hold(cases: Path) -> None:
    r = cli("policy", "test", str(cases), "--format", "json")
    assert r.code == 0, r.out
    assert r.json["failed"] == 0 and r.json["passed"] >= 2


def test_a_case_whose_expected_decision_changed_is_caught(tmp_path: Path) -> None:
    doc = json.loads((REPO / "policies" / "cases" / "ci.cases.json").read_text())
    doc["policy"] = str(REPO / "policies" / "ci.json")
    doc["cases"][0]["expect"] = {"behavior": "allow", "reasons": []}
    changed = tmp_path / "changed.cases.json"
    changed.write_text(json.dumps(doc))
    r = cli("policy", "test", str(changed))
    assert r.code == 1
    assert "MISMATCH" in r.out and "1 failed" in r.out
    j = cli("policy", "test", str(changed), "--format", "json").json
    first = j["files"][0]["cases"][0]
    assert first["ok"] is False and first["expected"]["behavior"] == "allow"
    assert first["actual"]["behavior"] == "deny" and "TRUST_BELOW_MINIMUM" in first["actual"]["reasons"]


def test_a_missing_reason_code_is_a_mismatch(tmp_path: Path) -> None:
    cases = tmp_path / "c.json"
    cases.write_text(json.dumps({"policy": str(REPO / "policies" / "ci.json"), "cases": [
        {"name": "x", "toolContent": TOOL, "toolName": "gh", "command": "pr view 1",
         "expect": {"behavior": "deny", "reasons": ["COMPROMISED"]}}]}))
    j = cli("policy", "test", str(cases), "--format", "json")
    assert j.code == 1 and j.json["files"][0]["cases"][0]["missing_reasons"] == ["COMPROMISED"]


def test_a_policy_edit_that_changes_a_decision_fails_its_cases(tmp_path: Path) -> None:
    """The point of the command: loosen the policy, and the pinned denial no longer holds."""
    pol = json.loads((REPO / "policies" / "ci.json").read_text())
    pol["delegation"]["deniedCommands"] = []
    pol["permissions"]["deny"] = []
    (tmp_path / "ci.json").write_text(json.dumps(pol))
    doc = json.loads((REPO / "policies" / "cases" / "ci.cases.json").read_text())
    doc["policy"] = "ci.json"  # relative to the case file
    cases = tmp_path / "ci.cases.json"
    cases.write_text(json.dumps(doc))
    r = cli("policy", "test", str(cases), "--format", "json")
    assert r.code == 1
    assert any(not c["ok"] and "COMMAND_DENIED" in c["missing_reasons"] for c in r.json["files"][0]["cases"])


def test_tool_file_and_digest_pin(tmp_path: Path) -> None:
    tool = tmp_path / "gh"
    tool.write_text(TOOL)
    tool.chmod(0o755)
    good = "sha256:" + hashlib.sha256(TOOL.encode()).hexdigest()
    cases = tmp_path / "c.json"
    cases.write_text(json.dumps({"policy": str(REPO / "policies" / "ci.json"), "cases": [
        {"name": "pinned", "tool": "gh", "digest": good, "command": "pr view 1",
         "expect": {"behavior": "deny", "reasons": ["TRUST_BELOW_MINIMUM"]}},
        {"name": "other bytes", "tool": "gh", "digest": "sha256:" + "0" * 64, "command": "pr view 1",
         "expect": {"behavior": "deny", "reasons": ["TRUST_BELOW_MINIMUM"]}}]}))
    j = cli("policy", "test", str(cases), "--format", "json").json
    assert [c["ok"] for c in j["files"][0]["cases"]] == [True, False]
    assert "DIGEST_MISMATCH" in j["files"][0]["cases"][1]["actual"]["reasons"]


@pytest.mark.parametrize("doc, where", [
    ({"cases": []}, "policy"),
    ({"policy": "ci.json", "cases": []}, "$.cases"),
    ({"policy": "ci.json", "cases": [{"name": "x", "command": "a", "expect": {"behavior": "deny"}}]},
     "exactly one of tool"),
    ({"policy": "ci.json", "cases": [{"name": "x", "toolContent": "a", "expect": {"behavior": "maybe"}}]},
     "behavior"),
    ({"policy": "ci.json", "cases": [{"name": "x", "toolContent": "a", "surprise": 1,
                                       "expect": {"behavior": "deny"}}]}, "surprise"),
])
def test_malformed_case_file_cannot_be_evaluated(tmp_path: Path, doc, where) -> None:
    cases = tmp_path / "bad.json"
    cases.write_text(json.dumps(doc))
    r = cli("policy", "test", str(cases))
    assert r.code == 2 and where in r.err, r.err


def test_yaml_case_file(tmp_path: Path) -> None:
    cases = tmp_path / "c.yaml"
    cases.write_text(f"policy: {REPO / 'policies' / 'ci.json'}\ncases:\n"
                     "  - name: unsigned\n    toolContent: \"#!/bin/sh\\n\"\n    toolName: gh\n"
                     "    command: pr view 1\n    expect: {behavior: deny, reasons: [TRUST_BELOW_MINIMUM]}\n")
    assert cli("policy", "test", str(cases)).code == 0


def test_a_case_that_cannot_be_evaluated_is_a_mismatch_unless_expected(tmp_path: Path) -> None:
    cases = tmp_path / "c.json"
    case = {"name": "missing bundle", "toolContent": TOOL, "toolName": "gh", "command": "pr view 1",
            "evidence": {"bundles": ["nope.sigstore.json"]}, "expect": {"behavior": "deny"}}
    cases.write_text(json.dumps({"policy": str(REPO / "policies" / "ci.json"), "cases": [case]}))
    assert cli("policy", "test", str(cases)).code == 1
    case["expect"] = {"behavior": "deny", "reasons": ["ERROR"]}
    cases.write_text(json.dumps({"policy": str(REPO / "policies" / "ci.json"), "cases": [case]}))
    assert cli("policy", "test", str(cases)).code == 0


def test_junit_and_sarif_reports_name_the_mismatch(tmp_path: Path) -> None:
    import xml.etree.ElementTree as ET

    doc = json.loads((REPO / "policies" / "cases" / "ci.cases.json").read_text())
    doc["policy"] = str(REPO / "policies" / "ci.json")
    doc["cases"][0]["expect"] = {"behavior": "allow"}
    cases = tmp_path / "c.json"
    cases.write_text(json.dumps(doc))
    junit = tmp_path / "junit.xml"
    r = cli("policy", "test", str(cases), "--junit", str(junit), "--format", "sarif")
    assert r.code == 1
    (res,) = r.json["runs"][0]["results"]
    assert res["ruleId"] == "atip-trust/policy-test/mismatch" and "expected allow" in res["message"]["text"]
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None and suite.get("tests") == str(len(doc["cases"])) and suite.get("failures") == "1"
    assert len(suite.findall("testcase/failure")) == 1
