"""The trusted surface: a model is offered only the commands policy admits, through ``atip-trust
compile`` as a user runs it (the real CLI, a real tool on PATH, real verification)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from atip_trust.admission.admit import load_admission_policy
from atip_trust.bridge import compile_surface, compile_tools
from atip_trust.bridge.compile import command_effects
from atip_trust.bridge.surface import CONFIRM_NOTE, SurfaceTool
from atip_trust.evaluation.evaluate import Constraints, Evidence, evaluate
from atip_trust.facts.artifact import Artifact
from atip_trust.facts.flatten import flatten_commands
from atip_trust.signature.trustroot import default_trust_root

from reference_examples import reference_example
from verify_helpers import Run, cli
from world import World

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
RFC_GH = FIXTURES / "metadata" / "valid" / "gh-rfc-v0.6.json"


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Any]:
    """A stand-in ``gh`` on PATH and the RFC §14.1 metadata for it, with no trust claims (unsigned)."""
    w = World(tmp_path, root=None)
    gh = w.file("bin/gh", "#!/bin/sh\necho 'gh stand-in'\n")
    gh.chmod(gh.stat().st_mode | stat.S_IXUSR)
    meta = json.loads(RFC_GH.read_text())
    meta.pop("trust")
    env = {**os.environ, "PATH": f"{w.dir / 'bin'}{os.pathsep}{os.environ['PATH']}",
           "XDG_STATE_HOME": str(tmp_path / "state")}
    return {"dir": tmp_path, "gh": gh, "meta": w.file("gh.json", meta), "env": env}


def upstream_unsigned(world: dict[str, Any]) -> Path:
    """The ATIP repository's examples/gh.json (read where it lives; skipped when absent) without its
    trust claims."""
    upstream = json.loads(reference_example("gh.json").read_text())
    upstream.pop("trust")
    path = world["dir"] / "gh-upstream.json"
    path.write_text(json.dumps(upstream))
    return path


def compile_cli(world: dict[str, Any], *argv: str) -> tuple[Run, dict[str, Any]]:
    run = cli("compile", *argv, env=world["env"])
    try:
        out = json.loads(run.out)
    except ValueError:
        out = {}
    return run, out


def policy_file(world: dict[str, Any], doc: dict[str, Any]) -> str:
    path = world["dir"] / "policy.json"
    path.write_text(json.dumps({"version": 1, **doc}))
    return str(path)


def tool_names(out: dict[str, Any]) -> list[str]:
    return [t["name"] for t in out["tools"]]


def test_a_blocked_gh_repo_delete_is_absent_from_tools_and_listed_with_its_reason(world: dict[str, Any]) -> None:
    pol = policy_file(world, {"permissions": {"deny": ["gh repo delete"], "allow": ["gh pr *"]}})
    run, out = compile_cli(world, "--provider", "anthropic", "--policy", pol, "--no-audit", str(world["meta"]))
    assert run.code == 0, run.err
    assert tool_names(out) == ["gh_pr_list", "gh_pr_create", "gh_pr_merge"]
    assert [b["name"] for b in out["blocked"]] == ["gh_repo_delete"]
    blocked = out["blocked"][0]
    assert blocked["tool"] == "gh" and blocked["command"] == ["repo", "delete"]
    assert blocked["reason"] == "policy_blocked" and blocked["behavior"] == "deny"
    assert any(r["code"] == "COMMAND_DENIED" and r["rule"] == "gh repo delete" for r in blocked["reasons"]), blocked
    assert out["trust"][0]["trust_level"] == "UNSIGNED" and out["trust"][0]["sha256"]


def test_an_unsigned_tools_destructive_commands_never_reach_the_model_under_the_default_policy(
    world: dict[str, Any]
) -> None:
    upstream = upstream_unsigned(world)
    run, out = compile_cli(world, "--provider", "openai", "--strict", "--no-audit", str(upstream))
    doc = json.loads(upstream.read_text())
    destructive = {fc.name for fc in flatten_commands(doc) if command_effects(fc).get("destructive") is True}
    assert len(destructive) > 20
    compiled = {t["function"]["name"] for t in out["tools"]}
    assert not destructive & compiled
    assert destructive <= {b["name"] for b in out["blocked"]}
    # Unverified effects cannot relax anything: "destructive: false" from unsigned metadata counts as
    # risky, so nothing of an unsigned tool is offered, and exit 1 says the whole surface was blocked.
    assert compiled == set() and run.code == 1
    gated = next(b for b in out["blocked"] if b["name"] == "gh_repo_delete")
    assert any(r["rule"] == "capabilities.destructive" for r in gated["reasons"])


def test_ask_is_compiled_with_a_confirmation_note_or_blocked_as_policy_says(world: dict[str, Any]) -> None:
    rules = {"permissions": {"ask": ["gh pr merge"], "allow": ["gh pr *"], "deny": ["gh repo *"]}}
    run, out = compile_cli(world, "--provider", "openai", "--no-audit", "--policy", policy_file(world, rules),
                           str(world["meta"]))
    assert run.code == 0, run.err
    merge = next(t["function"] for t in out["tools"] if t["function"]["name"] == "gh_pr_merge")
    assert merge["description"] == f"Merge a pull request [⚠️ NOT REVERSIBLE | ⚠️ NOT IDEMPOTENT] {CONFIRM_NOTE}"
    listed = next(t["function"] for t in out["tools"] if t["function"]["name"] == "gh_pr_list")
    assert listed["description"] == "List pull requests"

    rules["bridge"] = {"askAs": "block", "stateTrustLevel": True}
    run, out = compile_cli(world, "--provider", "openai", "--no-audit", "--policy", policy_file(world, rules),
                           str(world["meta"]))
    assert [t["function"]["name"] for t in out["tools"]] == ["gh_pr_list", "gh_pr_create"]
    assert out["tools"][0]["function"]["description"] == "List pull requests [trust: UNSIGNED]"
    asked = next(b for b in out["blocked"] if b["name"] == "gh_pr_merge")
    assert asked["behavior"] == "ask" and asked["reason"] == "policy_blocked"


def test_all_compiles_every_command_without_a_trust_decision_and_says_so(world: dict[str, Any]) -> None:
    env = {**world["env"], "PATH": "/nonexistent"}  # no tool needed: nothing is verified
    upstream_gh = reference_example("gh.json")
    run = cli("compile", "--provider", "gemini", "--all", str(upstream_gh), env=env)
    assert run.code == 0, run.err
    out = json.loads(run.out)
    assert out["trust"] == "not evaluated (--all)" and out["blocked"] == []
    assert out["tools"] == compile_tools([json.loads(upstream_gh.read_text())], "gemini")["tools"]
    run = cli("compile", "--provider", "gemini", "--all", "--policy", "x.json", str(upstream_gh))
    assert run.code == 2 and "not allowed with argument" in run.err


def test_a_tool_that_cannot_be_found_or_invalid_metadata_is_exit_2_not_a_surface(world: dict[str, Any]) -> None:
    env = {**world["env"], "PATH": str(world["dir"] / "empty")}
    run = cli("compile", "--provider", "openai", "--no-audit", str(world["meta"]), env=env)
    assert run.code == 2 and run.out == "" and "gh" in run.err
    bad = world["dir"] / "bad.json"
    doc = json.loads(world["meta"].read_text())
    doc["commands"]["pr"]["commands"]["list"]["effects"]["network"] = "yes"
    bad.write_text(json.dumps(doc))
    run, _ = compile_cli(world, "--provider", "openai", "--all", str(bad))
    assert run.code == 2 and "$.commands.pr.commands.list.effects.network" in run.err
    run, _ = compile_cli(world, "--provider", "openai", "--format", "sarif", "--all", str(world["meta"]))
    assert run.code == 2


def test_the_surface_decides_each_command_once_per_tool_digest_as_admit_does(world: dict[str, Any]) -> None:
    # The library call: a report from the real verifier over the stand-in's bytes.
    policy = load_admission_policy(policy_file(world, {"permissions": {"allow": ["gh pr list"]}}))
    with Artifact.open(world["gh"]) as art:
        report = evaluate(art, Evidence(), Constraints(), default_trust_root(), require_anchor=False)
    meta = json.loads(world["meta"].read_text())
    surface = compile_surface([SurfaceTool(meta, report)], policy, "anthropic")
    # No rule for the others: the no-match default asks, so they are offered marked for confirmation.
    described = {t["name"]: t["description"] for t in surface["tools"]}
    assert described["gh_pr_list"] == "List pull requests"
    assert all(d.endswith(CONFIRM_NOTE) for n, d in described.items() if n != "gh_pr_list")
    assert len(described) == 4 and surface["blocked"] == []
    strict = load_admission_policy(policy_file(world, {"permissions": {"allow": ["gh pr list"]},
                                                       "defaults": {"noMatch": "deny"}}))
    surface = compile_surface([SurfaceTool(meta, report)], strict, "anthropic")
    assert [t["name"] for t in surface["tools"]] == ["gh_pr_list"]
    assert {b["name"] for b in surface["blocked"]} == {"gh_pr_create", "gh_pr_merge", "gh_repo_delete"}
    assert all(b["reasons"][0]["code"] == "NO_MATCHING_RULE" for b in surface["blocked"]), surface["blocked"]
