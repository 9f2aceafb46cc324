"""One way for admission inputs to travel (issue 23 item 4): ``Evidence`` plus ``AdmitOptions`` records.

Keywords are routed to the two records at the public doors only (``admit``, ``verify``, ``HeldTool.open``,
``exec_verified``), so a misspelt option is a ``TypeError`` there; below them (``admit_file``, a script's
interpreter, probes, hooks, the bridge) the records travel, never a dict of options.
"""

from __future__ import annotations

import ast
import inspect
import json
import sys
from pathlib import Path

import pytest

from atip_trust.admission.admit import load_admission_policy
from atip_trust.admission.options import AdmitOptions
from atip_trust.discovery.probe import probe
from atip_trust.evaluation.inputs import Evidence
from atip_trust.execution import exec as exec_module
from atip_trust.execution.exec import (
    ExecPlan,
    admit_file,
    admit_interpreter,
    exec_verified,
    interpreter_options,
    script_interpreter,
)

from gate_world import GH, World, make_world

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="execve of a descriptor is POSIX")

PACKAGE = Path(exec_module.__file__).resolve().parents[1]
#: The public doors that take the older keyword form, as (module under atip_trust/, function).
DOORS = {("admission/admit.py", "admit"), ("admission/verify.py", "verify"), ("admission/held.py", "open"),
         ("execution/exec.py", "exec_verified")}


class Stop(Exception):
    """Raised from ``before_exec``: the plan is seen and nothing is executed."""


@pytest.fixture()
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> World:
    monkeypatch.delenv("ATIP_TRUST_ORG_POLICY", raising=False)
    return make_world(tmp_path)


def _plan(world: World, tool: str = "gh", **call: object) -> ExecPlan:
    seen: list[ExecPlan] = []

    def stop(plan: ExecPlan) -> None:
        seen.append(plan)
        raise Stop

    with pytest.raises(Stop):
        exec_verified(tool, ["pr", "list"], policy=load_admission_policy(world.policy), environ=world.env(),
                      before_exec=stop, **call)  # type: ignore[arg-type]  # the keyword form under test
    return seen[0]


def test_a_misspelt_exec_option_is_a_type_error_before_anything_is_admitted_or_logged(world: World) -> None:
    with pytest.raises(TypeError, match="exec_verified\\(\\) got an unexpected keyword argument 'bundel'"):
        exec_verified("gh", ["pr", "list"], policy=load_admission_policy(world.policy), environ=world.env(),
                      bundel=[str(world.bundles)], audit_log=str(world.audit))
    assert not world.audit.exists()


def test_exec_takes_the_records_and_their_keyword_form_alike(world: World) -> None:
    given = _plan(world, evidence=Evidence(), options=AdmitOptions(audit_log=str(world.audit)),
                  bundle_dir=str(world.bundles))
    words = _plan(world, audit_log=str(world.audit), bundle_dir=str(world.bundles))
    for plan in (given, words):
        adm = plan.tool.admission
        assert (adm.tool, adm.behavior, adm.report.trust_level.name) == ("gh", "allow", "VERIFIED")
        assert plan.interpreter is not None and plan.interpreter.admission.tool == "sh"
        assert plan.interpreter.admission.behavior == "allow"
    lines = [json.loads(line) for line in world.audit.read_text().splitlines()]
    # Each exec wrote its line, with what was about to run, to the log its options named.
    ran = [(line["tool"], line["decision"], line["interpreter"]["decision"]) for line in lines if "exec" in line]
    assert ran == [("gh", "allow", "allow")] * 2


def test_an_exec_named_in_the_options_is_decided_under_that_name(world: World) -> None:
    world.tool("gh-renamed", GH)
    plan = _plan(world, "gh-renamed", options=AdmitOptions(name="gh", audit=False), bundle_dir=str(world.bundles))
    assert plan.tool.found.endswith("/gh-renamed")
    assert (plan.tool.admission.tool, plan.tool.admission.behavior) == ("gh", "allow")


def test_a_scripts_interpreter_keeps_the_trust_root_and_how_it_runs_but_not_the_scripts_evidence() -> None:
    script = AdmitOptions(name="tool", keys=("tool.pem",), shim_dir="shims", trusted_root="root.json",
                          staging=True, fetch=True, interactive=True, audit=False, audit_log="a.jsonl",
                          cache=False, agent_tools=False, registry_pin=False)
    assert interpreter_options(script, "/usr/bin/python3") == AdmitOptions(
        name="python3", shim_dir="shims", trusted_root="root.json", staging=True, interactive=True,
        audit=False, audit_log="a.jsonl", cache=False)


def test_below_the_public_doors_no_admission_step_takes_a_keyword_bag(world: World) -> None:
    for step in (admit_file, admit_interpreter, script_interpreter, probe):
        kinds = [p.kind for p in inspect.signature(step).parameters.values()]
        assert inspect.Parameter.VAR_KEYWORD not in kinds, step.__name__
    # An option given as a keyword is Python's own TypeError, not routed anywhere.
    with pytest.raises(TypeError, match="audit"):
        admit_file(world.signed_bin / "gh", policy=load_admission_policy(world.policy), command=[],
                   audit=False)  # type: ignore[call-arg]  # the misuse under test


def test_keywords_are_routed_to_the_records_only_at_the_public_doors() -> None:
    routed: set[tuple[str, str]] = set()
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for func in ast.walk(tree):
            if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            calls = [n for n in ast.walk(func) if isinstance(n, ast.Call)
                     and getattr(n.func, "id", getattr(n.func, "attr", None)) == "split_keywords"]
            if calls:
                routed.add((rel, func.name))
    assert routed == DOORS
