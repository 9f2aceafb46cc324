"""A value of the wrong type at a public door is refused there (issue 35, item 3): a plain ``dict`` where
``Evidence`` belongs, an ``AdmitOptions`` where ``VerifyOptions`` belongs, a dict where the ``Policy``,
the report or ``DecisionInput`` belongs. Each is ``ArgumentTypeError`` — a ``TypeError``, as Python's own
for a bad argument, and a ``UsageError``, so the CLI's one catch point and a runtime's ``except
AtipTrustError`` see it — whose message names the door, the parameter, the expected type and the
actual one. Before, a dict of evidence was accepted and failed later, deep in the call, as an
``AttributeError`` (which no ``except AtipTrustError`` catches). Real signed tools from the local test
Sigstore; the doors are called in-process, exec_verified in a child (it would replace this process)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest

import atip_trust
from atip_trust.errors import ArgumentTypeError, AtipTrustError, UsageError

from world import World

SIGNED = b"#!/bin/sh\necho signed\n"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    w = World(tmp_path_factory.mktemp("doors"), seed=35)
    tool = w.tool("signed", SIGNED)
    bundle = w.bundle("signed.sigstore.json", SIGNED)
    policy_file = w.policy_file(permissions={"allow": ["signed *"]}, defaults={"noMatch": "deny"})
    policy = atip_trust.load_policy(policy_file, managed=False)
    adm = atip_trust.admit(tool, policy=policy, command="status", bundles=[bundle], audit=False, cache=False)
    return {"tool": tool, "bundle": bundle, "policy": policy, "policy_file": policy_file, "adm": adm}


def refused(call: Callable[[], object], *names: str) -> ArgumentTypeError:
    """``call`` raises ArgumentTypeError whose message names each of ``names``; returned for more checks."""
    with pytest.raises(ArgumentTypeError) as caught:
        call()
    err = caught.value
    assert isinstance(err, TypeError) and isinstance(err, UsageError) and isinstance(err, AtipTrustError)
    for name in names:
        assert name in str(err), (name, str(err))
    assert "expected" in str(err) and "actual" in str(err)
    return err


def test_admit_refuses_a_dict_where_evidence_or_options_belong(world) -> None:
    tool, policy = world["tool"], world["policy"]
    refused(lambda: atip_trust.admit(tool, policy=policy, evidence={"bundles": [world["bundle"]]}),
            "admit() evidence", "Evidence", "dict")
    refused(lambda: atip_trust.admit(tool, policy=policy, options={"audit": False}),
            "admit() options", "AdmitOptions", "dict")
    refused(lambda: atip_trust.admit(tool, policy=policy, options=atip_trust.VerifyOptions()),
            "admit() options", "AdmitOptions", "VerifyOptions")
    refused(lambda: atip_trust.admit(7, policy=policy), "admit() tool", "int")  # type: ignore[arg-type]
    refused(lambda: atip_trust.admit(tool, policy={"version": 1}, audit=False),  # type: ignore[arg-type]
            "policy", "Policy", "dict")


def test_verify_refuses_the_wrong_options_record_and_a_dict_policy(world) -> None:
    tool = world["tool"]
    refused(lambda: atip_trust.verify(tool, evidence={"bundles": [world["bundle"]]}),  # type: ignore[arg-type]
            "verify() evidence", "Evidence", "dict")
    refused(lambda: atip_trust.verify(tool, options=atip_trust.AdmitOptions()),  # type: ignore[arg-type]
            "verify() options", "VerifyOptions", "AdmitOptions")
    refused(lambda: atip_trust.verify(tool, policy={"version": 1}),  # type: ignore[arg-type]
            "verify() policy", "Policy", "dict")
    refused(lambda: atip_trust.verify(None), "verify() artifact", "NoneType")  # type: ignore[arg-type]


def test_verify_options_refuses_a_dict_of_constraints_when_it_is_made() -> None:
    """Type-checked at construction: the dict never reaches verification."""
    refused(lambda: atip_trust.VerifyOptions(constraints={"signers": []}),  # type: ignore[arg-type]
            "VerifyOptions constraints", "Constraints", "dict")


def test_held_tool_open_refuses_a_dict_of_evidence(world) -> None:
    tool, policy = world["tool"], world["policy"]
    refused(lambda: atip_trust.HeldTool.open(tool, policy=policy, evidence={"bundles": []}),  # type: ignore[arg-type]
            "HeldTool.open() evidence", "Evidence", "dict")
    refused(lambda: atip_trust.HeldTool.open(tool, policy=policy, options={}),  # type: ignore[arg-type]
            "HeldTool.open() options", "AdmitOptions", "dict")


def test_check_call_refuses_a_dict_where_the_admission_or_the_policy_belongs(world) -> None:
    adm, policy = world["adm"], world["policy"]
    refused(lambda: atip_trust.check_call(adm.report.to_json(), None, "status", None, policy),  # type: ignore[arg-type]
            "check_call() admission_or_report", "Admission", "TrustReport", "dict")
    refused(lambda: atip_trust.check_call(adm, None, "status", None, {"version": 1}),  # type: ignore[arg-type]
            "check_call() policy", "Policy", "dict")


def test_validate_call_refuses_a_dict_report_or_policy(world) -> None:
    from atip_trust.agents.calls import validate_call

    policy, report = world["policy"], world["adm"].report
    refused(lambda: validate_call(None, "status", policy=policy, report={}),  # type: ignore[arg-type]
            "validate_call() report", "TrustReport", "dict")
    refused(lambda: validate_call(None, "status", policy={}, report=report),  # type: ignore[arg-type]
            "validate_call() policy", "Policy", "dict")


def test_decide_refuses_dicts_and_takes_its_input_record_or_keywords(world) -> None:
    policy, report = world["policy"], world["adm"].report
    refused(lambda: atip_trust.decide(policy, report.to_json(), tool_name="signed"),  # type: ignore[arg-type]
            "decide() report", "TrustReport", "dict")
    refused(lambda: atip_trust.decide({"version": 1}, report, tool_name="signed"),  # type: ignore[arg-type]
            "decide() policy", "Policy", "dict")
    refused(lambda: atip_trust.decide(policy, report, {"tool_name": "signed"}),  # type: ignore[arg-type]
            "decide() given", "DecisionInput", "dict")
    with pytest.raises(TypeError, match="unexpected keyword argument 'tool'"):
        atip_trust.decide(policy, report, tool="signed")
    with pytest.raises(TypeError, match="DecisionInput"):
        atip_trust.decide(policy, report)
    question = atip_trust.DecisionInput(tool_name="signed", command="status")
    by_record = atip_trust.decide(policy, report, question)
    by_keywords = atip_trust.decide(policy, report, tool_name="signed", command="status")
    assert by_record.behavior == by_keywords.behavior == "allow"
    assert by_record.to_json() == by_keywords.to_json()
    # Keywords with the record replace its fields: a command no rule allows is denied (noMatch: deny).
    assert atip_trust.decide(policy, report, question, tool_name="other").behavior == "deny"


def test_the_bridge_loop_refuses_a_dict_surface_and_a_dict_policy(world) -> None:
    from atip_trust.bridge.loop import run_tool_call
    from atip_trust.bridge.surface import Surface

    refused(lambda: run_tool_call("openai", {}, {"tools": []}, world["policy"]),  # type: ignore[arg-type]
            "run_tool_call() surface", "Surface", "dict")
    surface = Surface("openai", [], [])
    refused(lambda: run_tool_call("openai", {}, surface, {"version": 1}),  # type: ignore[arg-type]
            "run_tool_call() policy", "Policy", "dict")


def test_exec_verified_refuses_a_dict_of_evidence_before_anything_runs(world) -> None:
    # In a child: had the door let it through, exec would replace the process running it.
    script = ("import sys, atip_trust\n"
              "policy = atip_trust.load_policy(sys.argv[1], managed=False)\n"
              "try:\n"
              "    atip_trust.exec_verified(sys.argv[2], ['status'], policy=policy, evidence={'bundles': []})\n"
              "except TypeError as err:\n"
              "    print(type(err).__name__, err)\n")
    run = subprocess.run([sys.executable, "-c", script, str(world["policy_file"]), str(world["tool"])],
                         capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("ArgumentTypeError exec_verified() evidence: expected Evidence or None, actual dict")
