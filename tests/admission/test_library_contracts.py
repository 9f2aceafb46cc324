"""The library's contracts as an agent runtime's developer reads them in docs/library.md (issue 26, item 3):
every refusal and error is an ``AtipTrustError`` (a documented ``except AtipTrustError`` lets no
traceback out), one path given where several may be is one path, a policy may be given as its file's
path, errors name the library's parameters (not only the CLI's flags) and the files involved, and
``HeldTool.open`` takes ``admit``'s arguments, so its first audit line goes where the caller said.
Real signed tools from the local test Sigstore, real audit logs, real subprocesses for exec."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import atip_trust
import atip_trust.errors
from atip_trust import AtipTrustError, UsageError

from world import World

SIGNED = b"#!/bin/sh\necho signed\n"
LIBRARY_DOC = Path(__file__).resolve().parents[2] / "docs" / "library.md"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    w = World(tmp_path_factory.mktemp("contracts"), seed=26)
    return {"dir": w.dir, "root": w.root, "tool": w.tool("signed", SIGNED),
            "unsigned": w.tool("unsigned", b"#!/bin/sh\necho unsigned\n"),
            "bundle": w.bundle("signed.sigstore.json", SIGNED),
            "policy": w.policy_file(permissions={"ask": ["Bash(signed deploy *)"],
                                                 "allow": [{"rule": "signed *", "minTrustLevel": "VERIFIED"}]},
                                    defaults={"noMatch": "deny"})}


@pytest.fixture(autouse=True)
def _no_org(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ATIP_TRUST_ORG_POLICY", raising=False)
    monkeypatch.delenv("ATIP_TRUST_POLICY", raising=False)


def lines(log: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in log.read_text().splitlines()]


def test_an_exec_refusal_is_caught_by_the_documented_except_atip_trust_error(world, tmp_path: Path) -> None:
    # In a subprocess: were the refusal not raised, exec would replace the process running it.
    script = (
        "import sys, atip_trust\n"
        "policy = atip_trust.load_admission_policy(sys.argv[1])\n"
        "try:\n"
        "    atip_trust.exec_verified(sys.argv[2], ['status'], policy=policy, audit_log=sys.argv[3])\n"
        "except atip_trust.AtipTrustError as err:\n"
        "    print(type(err).__name__, err.exit_code, err.behavior)\n"
    )
    run = subprocess.run([sys.executable, "-c", script, str(world["policy"]), str(world["unsigned"]),
                          str(tmp_path / "a.jsonl")], capture_output=True, text=True, timeout=120,
                         stdin=subprocess.DEVNULL)
    assert run.returncode == 0 and run.stderr == "", run.stderr
    assert run.stdout.split() == ["ExecRefused", "1", "deny"]
    assert issubclass(atip_trust.ExecRefused, AtipTrustError)


@pytest.mark.parametrize("as_given", [str, Path], ids=["str", "Path"])
def test_one_bundle_path_given_alone_is_one_path_not_a_sequence_of_characters(
        world, tmp_path: Path, as_given: Any) -> None:
    policy = atip_trust.load_admission_policy(world["policy"])
    adm = atip_trust.admit(world["tool"], policy=policy, command="status", bundles=as_given(world["bundle"]),
                           audit_log=tmp_path / "a.jsonl")
    assert adm.behavior == "allow", [r.message for r in adm.decision.reasons]
    assert adm.report.trust_level.name == "VERIFIED"
    checked = atip_trust.verify(world["tool"], bundles=as_given(world["bundle"]), policy=world["policy"])
    assert checked.exit_code == 0 and checked.report.trust_level.name == "VERIFIED"


def test_a_non_path_where_paths_are_expected_is_a_usage_error_naming_the_parameter(world, tmp_path) -> None:
    policy = atip_trust.load_admission_policy(world["policy"])
    log = tmp_path / "a.jsonl"
    with pytest.raises(UsageError, match=r"^bundles: expected a path .*actual int"):
        atip_trust.admit(world["tool"], policy=policy, bundles=[7], audit_log=log)  # type: ignore[list-item]
    assert lines(log)[0]["decision"] == "deny"  # audited as every failed admission is
    with pytest.raises(UsageError, match=r"^keys: expected a path or a sequence of paths, actual bytes"):
        atip_trust.admit(world["tool"], policy=policy, keys=b"k.pem", audit=False)  # type: ignore[arg-type]


def test_a_policy_given_as_a_path_is_loaded_as_load_admission_policy_loads_it(world, tmp_path: Path) -> None:
    for given in (world["policy"], str(world["policy"])):
        adm = atip_trust.admit(world["tool"], policy=given, command="status", bundles=[world["bundle"]],
                               audit_log=tmp_path / "a.jsonl")
        assert adm.behavior == "allow"


def test_a_policy_path_that_cannot_be_loaded_raises_the_projects_error_naming_it_and_is_audited(
        world, tmp_path: Path) -> None:
    log = tmp_path / "a.jsonl"
    missing = tmp_path / "no-such-policy.json"
    with pytest.raises(AtipTrustError) as caught:
        atip_trust.admit(world["tool"], policy=str(missing), command="status", audit_log=log)
    assert str(missing) in caught.value.diagnostics()
    (line,) = lines(log)
    assert line["decision"] == "deny" and line["tool"] == "signed" and line["command"] == ["status"]
    with pytest.raises(UsageError, match=r"^policy: expected a Policy .* actual dict"):
        atip_trust.admit(world["tool"], policy={"version": 1}, audit=False)  # type: ignore[arg-type]


def test_library_usage_errors_name_the_parameter_and_the_file(world, tmp_path: Path) -> None:
    policy = atip_trust.load_admission_policy(world["policy"])
    with pytest.raises(UsageError) as caught:
        atip_trust.admit(world["tool"], policy=policy, metadata_bundle=world["bundle"], audit=False)
    assert "metadata_bundle" in caught.value.message and "metadata" in caught.value.message
    assert caught.value.path == str(world["bundle"])
    with pytest.raises(UsageError, match=r"staging .*trusted_root .*not both"):
        atip_trust.admit(world["tool"], policy=policy, staging=True, trusted_root=world["root"], audit=False)
    with pytest.raises(UsageError, match=r"Constraints\(signers=\.\.\.\)"):
        atip_trust.verify(world["tool"], bundles=world["bundle"], trusted_root=world["root"])


def test_held_tool_open_takes_admits_audit_log_and_interactive_for_its_first_line_and_its_calls(
        world, tmp_path: Path) -> None:
    log = tmp_path / "held.jsonl"
    bad = tmp_path / "bad.sigstore.json"
    bad.write_text("{not json")
    with pytest.raises(AtipTrustError):
        atip_trust.HeldTool.open(world["tool"], policy=world["policy"], bundles=str(bad), audit_log=log)
    (first,) = lines(log)  # the failed open's deny line is in the caller's log, not the default one
    assert first["decision"] == "deny" and first["error"]["type"] == "BundleError"
    with atip_trust.HeldTool.open(world["tool"], policy=str(world["policy"]), bundles=str(world["bundle"]),
                                  audit_log=log, interactive=True) as held:
        assert held.admit("deploy prod").behavior == "ask"                    # open's interactive=True
        assert held.admit("deploy prod", interactive=False).behavior == "deny"  # a call's own word wins
        assert held.admit("status", audit=False).behavior == "allow"
    assert [x["decision"] for x in lines(log)] == ["deny", "ask", "deny"]


def test_the_library_doc_names_every_error_the_library_raises() -> None:
    section = LIBRARY_DOC.read_text(encoding="utf-8")
    raised = [n for n in atip_trust.errors.__all__ if n[0].isupper()] + ["ExecRefused"]
    missing = [n for n in raised if not re.search(rf"`{n}`", section)]
    assert not missing, f"docs/library.md does not name: {missing}"
