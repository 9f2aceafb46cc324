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


# --- issue 33 item 6: sandboxed and hermetic ------------------------------------------------------------

OPEN = {"version": 1, "name": "open", "requirements": {"minTrustLevel": "UNSIGNED"},
        "permissions": {"allow": ["gh *"]}}


def _suite(tmp_path: Path, case: dict[str, object], policy: dict[str, object] | None = None) -> Path:
    (tmp_path / "pol.json").write_text(json.dumps(policy or OPEN))
    full = {"name": "c", "command": "pr view 1", "expect": {"behavior": "allow"}, **case}
    if "tool" not in full and "toolContent" not in full:
        full["toolContent"] = TOOL
    cases = tmp_path / "c.json"
    cases.write_text(json.dumps({"policy": "pol.json", "cases": [full]}))
    return cases


@pytest.mark.parametrize("name", ["../../x/gh", "../gh", "sub/gh", "..", "."])
def test_attack_a_tool_name_that_climbs_out_of_the_scratch_folder_writes_nothing(tmp_path: Path, name: str) -> None:
    """``toolName: ../../x/gh`` would write ``toolContent`` as an executable file outside the scratch
    folder (``~/.ssh/...`` on a runner): refused, naming the case, before anything is written."""
    work = tmp_path / "w"
    work.mkdir()
    r = cli("policy", "test", str(_suite(work, {"toolName": name})))
    assert r.code == 2 and "$.cases[0].toolName" in r.err and "one file name" in r.err, r.err
    assert sorted(p.name for p in work.iterdir()) == ["c.json", "pol.json"]
    assert not (tmp_path / "x").exists()


def test_attack_an_absolute_tool_name_writes_nothing(tmp_path: Path) -> None:
    target = tmp_path / "planted" / "gh"
    r = cli("policy", "test", str(_suite(tmp_path, {"toolName": str(target)})))
    assert r.code == 2 and "toolName" in r.err and not target.parent.exists(), r.err


@pytest.mark.parametrize("case, where", [
    ({"toolName": 5}, "toolName"),
    ({"toolName": "g" * 256}, "toolName"),
    ({"toolName": "g\0h"}, "toolName"),
    ({"toolName": "\ud800"}, "toolName"),
    ({"toolContent": "\udc80"}, "toolContent"),
    ({"toolContent": 7}, "toolContent"),
    ({"command": 1.5}, "command"),
    ({"command": ["pr", 1]}, "command"),
    ({"command": "pr\0view"}, "command"),
    ({"interactive": "yes"}, "interactive"),
    ({"name": 3}, "name"),
    ({"tool": "."}, "tool"),
    ({"tool": "sub"}, "tool"),
    ({"tool": 12}, "tool"),
    ({"evidence": {"bundles": [1]}}, "bundles"),
], ids=["number name", "long name", "NUL name", "surrogate name", "surrogate content", "number content",
        "float command", "number word", "NUL command", "string interactive", "number case name",
        "folder tool", "existing folder", "number tool", "number bundle"])
def test_bad_case_values_are_clear_errors_naming_the_case(tmp_path: Path, case: dict[str, object],
                                                          where: str) -> None:
    (tmp_path / "sub").mkdir()
    cases = tmp_path / "c.json"
    full = {"name": "c", "command": "pr view 1", "expect": {"behavior": "allow"}, **case}
    if "tool" not in full and "toolContent" not in full:
        full["toolContent"] = TOOL
    (tmp_path / "pol.json").write_text(json.dumps(OPEN))
    cases.write_bytes(json.dumps({"policy": "pol.json", "cases": [full]}).encode())  # ASCII escapes
    r = cli("policy", "test", str(cases))
    assert r.code == 2 and "$.cases[0]" in r.err and where in r.err, r.err
    assert "internal error" not in r.err


@pytest.mark.parametrize("path", ["../outside.json", "/etc/passwd", "a/../../outside.json"])
def test_attack_case_evidence_and_tool_paths_outside_the_suite_are_refused(tmp_path: Path, path: str) -> None:
    suite = tmp_path / "suite"
    suite.mkdir()
    for case, key in (({"tool": path}, "tool"), ({"evidence": {"bundles": [path]}}, "bundles"),
                      ({"evidence": {"trustedRoot": path}}, "trustedRoot")):
        r = cli("policy", "test", str(_suite(suite, case)))
        assert r.code == 2 and key in r.err and "inside the case file's folder" in r.err, r.err


def test_attack_a_link_in_the_suite_that_leads_out_is_refused(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    suite.mkdir()
    outside = tmp_path / "gh"
    outside.write_text(TOOL)
    (suite / "gh").symlink_to(outside)
    r = cli("policy", "test", str(_suite(suite, {"tool": "gh"})))
    assert r.code == 2 and "through a link" in r.err, r.err


def test_an_audit_required_policy_is_tested_with_a_scratch_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An org policy's ``audit.required: true`` (issue 34 too): the case runs, its line goes to the
    run's scratch log, and the machine's audit log is not written."""
    state = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    r = cli("policy", "test", str(_suite(tmp_path, {"toolName": "gh"}, {**OPEN, "audit": {"required": True}})))
    assert r.code == 0, r.out + r.err
    assert not state.exists()


def test_the_machines_agent_tools_tree_does_not_change_a_case(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A developer's registry.json pins ``gh`` to other bytes (a deny in every mode on their machine):
    the suite decides as on a clean runner."""
    data = tmp_path / "data"
    (data / "agent-tools").mkdir(parents=True)
    (data / "agent-tools" / "registry.json").write_text(json.dumps(
        {"version": "2", "tools": {"gh": {"path": "/usr/bin/gh", "hash": "sha256:" + "0" * 64, "source": "native"}}}))
    (data / "agent-tools" / "registry.json").chmod(0o600)
    monkeypatch.setenv("XDG_DATA_HOME", str(data))
    suite = tmp_path / "suite"
    suite.mkdir()
    r = cli("policy", "test", str(_suite(suite, {"toolName": "gh"})))
    assert r.code == 0, r.out + r.err
    import os
    assert os.environ["XDG_DATA_HOME"] == str(data)  # the environment is given back


def test_the_machines_cached_trusted_root_does_not_change_a_case(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A developer's cache holds a TUF-refreshed public-good root (here: planted, naming a test Sigstore
    instance): a suite whose case verifies only under that root would pass on their machine and fail on a
    clean runner. Cases use the root the installed package embeds (or one they name)."""
    import hashlib as _h
    from datetime import UTC, datetime

    from atip_trust.state import tufroot

    import testsigstore

    ts = testsigstore.TestSigstore(seed=3307, name="atip-test-hermetic")
    ident, issuer = "https://github.com/o/r/.github/workflows/rel.yml@refs/tags/v1", "https://token.actions.githubusercontent.com"
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "gh").write_text(TOOL)
    (suite / "gh").chmod(0o755)
    (suite / "gh.sigstore.json").write_text(json.dumps(ts.sign_artifact(TOOL.encode(), identity=ident, issuer=issuer)))
    cache = tmp_path / "cache"
    monkeypatch.setenv("ATIP_CACHE_DIR", str(cache))
    store = Path(tufroot.store_dir(tufroot.PRODUCTION_URL))
    store.mkdir(parents=True)
    raw = json.dumps(ts.trusted_root()).encode()
    (store / "trusted_root.json").write_bytes(raw)
    (store / "verified.json").write_text(json.dumps({"url": tufroot.PRODUCTION_URL, "path": str(store / "trusted_root.json"),
                                                     "digest": "sha256:" + _h.sha256(raw).hexdigest(),
                                                     "verified_at": datetime.now(UTC).isoformat()}))
    pol = {"version": 1, "trust": {"signers": [{"identity": ident, "issuer": issuer}]},
           "requirements": {"minTrustLevel": "VERIFIED"}, "permissions": {"allow": ["gh *"]}}
    cases = _suite(suite, {"tool": "gh", "evidence": {"bundles": ["gh.sigstore.json"]},
                           "expect": {"behavior": "deny", "reasons": ["TRUST_BELOW_MINIMUM"]}}, pol)
    r = cli("policy", "test", str(cases), "--format", "json")
    assert r.code == 0, r.out + r.err
