"""The call loop: a model's tool call runs only as an offered command of verified bytes, and comes back as
the provider's tool-result message, filtered; a refusal is a result the model reads, not an exception.

Real subprocesses: a fake ``gh`` (a ``#!/bin/sh`` script on the verified ``/bin/sh``) signed with the
test Sigstore records its argv and writes a sentinel each time it runs."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from atip_trust.admission.admit import load_admission_policy
from atip_trust.admission.options import AdmitOptions
from atip_trust.bridge import Surface, SurfaceTool, build_surface, run_tool_call
from atip_trust.bridge.lifecycle import ToolCall
from atip_trust.evaluation.inputs import Evidence
from atip_trust.execution.exec import admit_file
from atip_trust.policy.model import Policy

from gate_world import World, make_world

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
RFC_GH = FIXTURES / "metadata" / "valid" / "gh-rfc-v0.6.json"
SECRET = "ghp_SECRETabcdef1234567890"


@dataclass
class Loop:
    world: World
    gh: Path
    argv_log: Path
    sentinel: Path
    meta: Path
    audit: Path

    def body(self, marker: str = "") -> bytes:
        return (f'#!/bin/sh\nprintf "%s\\n" "$@" > {self.argv_log}\necho ran >> {self.sentinel}\n'
                f'echo "gh $*"\necho "token: {SECRET}"\n{marker}').encode()

    def policy(self, **extra: Any) -> Policy:
        return load_admission_policy(self.world.write_policy("loop-policy", **extra))

    def surface(self, provider: str, policy: Policy) -> Surface:
        evidence = Evidence(metadata=str(self.meta))
        opened = admit_file(self.gh, policy=policy, command=[], evidence=evidence,
                            options=AdmitOptions(name="gh", audit=False), bundle_dir=self.world.bundles)
        opened.art.close()
        adm = opened.admission
        assert adm.metadata is not None and adm.report.trust_level.name == "VERIFIED", adm.report
        tool = SurfaceTool.from_admission(adm, adm.metadata, evidence, bundle_dir=str(self.world.bundles))
        return build_surface([tool], policy, provider)

    def call(self, provider: str, response: Any, surface: Surface, policy: Policy,
             confirm: Callable[[Any, Any], bool] | None = None) -> Any:
        return run_tool_call(provider, response, surface, policy, confirm=confirm, audit_log=str(self.audit))

    def runs(self) -> int:
        return len(self.sentinel.read_text().splitlines()) if self.sentinel.exists() else 0


@pytest.fixture
def loop(tmp_path: Path) -> Loop:
    world = make_world(tmp_path)
    meta = json.loads(RFC_GH.read_text())
    meta.pop("trust")
    meta["commands"]["pr"]["commands"]["view"] = {
        "description": "View a pull request",
        "arguments": [{"name": "ref", "type": "string", "description": "Number, URL or branch"}],
        "effects": {"network": True, "idempotent": True},
    }
    meta_file = tmp_path / "gh.json"
    meta_file.write_text(json.dumps(meta))
    lp = Loop(world, world.signed_bin / "gh", tmp_path / "argv.log", tmp_path / "ran", meta_file,
              tmp_path / "audit.jsonl")
    world.tool("gh", lp.body())
    return lp


def response(provider: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    if provider == "openai":
        return {"choices": [{"message": {"role": "assistant", "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]}}]}
    if provider == "gemini":
        return {"candidates": [{"content": {"parts": [{"functionCall": {"name": name, "args": args}}]}}]}
    return {"content": [{"type": "text", "text": "ok"}, {"type": "tool_use", "id": "toolu_1", "name": name,
                                                         "input": args}]}


def shown(provider: str, message: dict[str, Any]) -> dict[str, Any]:
    """The result the model reads, out of the provider's message (asserting its envelope)."""
    if provider == "openai":
        assert message["role"] == "tool" and message["tool_call_id"] == "call_1"
        return dict(json.loads(message["content"]))
    if provider == "gemini":
        part = message["parts"][0]["function_response"]
        assert message["role"] == "user"
        return dict(part["response"])
    block = message["content"][0]
    assert message["role"] == "user" and block["type"] == "tool_result" and block["tool_use_id"] == "toolu_1"
    return dict(json.loads(block["content"]))


@pytest.mark.parametrize("provider", ["openai", "gemini", "anthropic"])
def test_an_allowed_call_runs_the_verified_tool_and_its_output_comes_back_redacted_in_the_providers_format(
    loop: Loop, provider: str
) -> None:
    policy = loop.policy()
    surface = loop.surface(provider, policy)
    [out] = loop.call(provider, response(provider, "gh_pr_list", {"state": "open"}), surface, policy)
    result = shown(provider, out.message)
    assert out.status == "ok" and result["status"] == "ok" and result["exit_code"] == 0, result
    assert result["stdout"].startswith("gh pr list --state open\n")
    assert SECRET not in json.dumps(out.message) and "[REDACTED]" in result["stdout"]
    assert loop.argv_log.read_text().splitlines() == ["pr", "list", "--state", "open"]
    assert loop.runs() == 1
    line = json.loads(loop.audit.read_text().splitlines()[-1])
    assert line["decision"] == "allow" and line["via"] == "bridge"
    assert line["argv"] == ["gh", "pr", "list", "--state", "open"] and line["digest"].startswith("sha256:")


def test_a_blocked_gh_repo_delete_call_is_a_denied_result_and_never_runs(loop: Loop) -> None:
    policy = loop.policy()
    surface = loop.surface("anthropic", policy)
    assert "gh_repo_delete" not in surface.commands
    assert "gh_repo_delete" in [b["name"] for b in surface.blocked]
    [out] = loop.call("anthropic", response("anthropic", "gh_repo_delete", {"repo": "org/prod"}), surface,
                      policy)
    result = shown("anthropic", out.message)
    assert result["status"] == "denied" and result["error"]["class"] == "permission_denied", result
    assert result["reasons"] and "never offered" in result["message"]
    assert loop.runs() == 0


def test_a_name_not_on_the_surface_is_denied_and_nothing_runs(loop: Loop) -> None:
    policy = loop.policy()
    surface = loop.surface("openai", policy)
    [out] = loop.call("openai", response("openai", "rm_rf", {}), surface, policy)
    result = shown("openai", out.message)
    assert (result["status"], result["error"]["class"]) == ("denied", "unknown_tool")
    assert result["reasons"][0]["code"] == "NOT_ON_SURFACE"
    assert loop.runs() == 0


def test_an_option_looking_value_for_a_positional_stays_a_positional(loop: Loop) -> None:
    policy = loop.policy()
    surface = loop.surface("gemini", policy)
    [out] = loop.call("gemini", response("gemini", "gh_pr_view", {"ref": "--exec=evil"}), surface, policy)
    assert out.status == "ok", out.result
    assert loop.argv_log.read_text().splitlines() == ["pr", "view", "--", "--exec=evil"]


def test_invalid_arguments_are_an_invalid_result_and_never_run(loop: Loop) -> None:
    policy = loop.policy()
    surface = loop.surface("openai", policy)
    [out] = loop.call("openai", response("openai", "gh_pr_list", {"state": "bogus", "extra": 1}), surface,
                      policy)
    result = shown("openai", out.message)
    assert (result["status"], result["error"]["class"]) == ("invalid", "invalid_arguments")
    assert {v["code"] for v in result["violations"]} == {"ARGUMENT_INVALID"}
    assert loop.runs() == 0
    line = json.loads(loop.audit.read_text().splitlines()[-1])
    assert line["decision"] == "deny" and line["call"] == "gh_pr_list"
    assert "ARGUMENT_INVALID" in {r["code"] for r in line["reasons"]}


@pytest.mark.parametrize("signed", [False, True], ids=["unsigned", "signed-other-build"])
def test_a_binary_replaced_after_compile_is_refused_at_call_time(loop: Loop, signed: bool) -> None:
    policy = loop.policy()
    surface = loop.surface("anthropic", policy)
    evil = loop.world.dir / "evil-ran"
    replacement = loop.world.dir / "gh.new"
    body = f"#!/bin/sh\necho evil > {evil}\n".encode()
    replacement.write_bytes(body)
    replacement.chmod(0o755)
    if signed:  # even a build the policy's signer signed: the model was offered the old one
        loop.world.sign(body)
    os.replace(replacement, loop.gh)
    [out] = loop.call("anthropic", response("anthropic", "gh_pr_list", {}), surface, policy)
    result = shown("anthropic", out.message)
    assert (result["status"], result["error"]["class"]) == ("denied", "tool_changed"), result
    assert result["reasons"][0]["code"] == "CHANGED_SINCE_COMPILED"
    assert not evil.exists() and loop.runs() == 0
    assert json.loads(loop.audit.read_text().splitlines()[-1])["decision"] == "deny"


@pytest.mark.parametrize("provider", ["openai", "gemini", "anthropic"])
def test_a_malformed_provider_response_is_a_parse_error_result_naming_the_provider(
    loop: Loop, provider: str
) -> None:
    policy = loop.policy()
    surface = loop.surface(provider, policy)
    bad: dict[str, Any] = {"openai": {"choices": [{"message": {"tool_calls": [
        {"id": "c", "function": {"name": "gh_pr_list", "arguments": "{not json"}}]}}]},
        "gemini": {"candidates": "nope"}, "anthropic": {"content": {"type": "tool_use"}}}[provider]
    [out] = run_tool_call(provider, bad, surface, policy, audit=False)
    assert out.status == "invalid" and out.result["error"]["class"] == "parse_error"
    assert out.result["provider"] == provider and out.result["message"].startswith(f"{provider} response")
    assert out.message == run_tool_call(provider, bad, surface, policy, audit=False)[0].message
    assert loop.runs() == 0


def test_ask_is_denied_without_a_person_and_runs_only_when_the_runtime_confirms(loop: Loop) -> None:
    policy = loop.policy(permissions={"ask": ["gh pr merge *"], "allow": ["gh pr *", "sh"]})
    surface = loop.surface("openai", policy)
    assert surface.commands["gh_pr_merge"].behavior == "ask"
    ask = response("openai", "gh_pr_merge", {"number": 7})
    [out] = loop.call("openai", ask, surface, policy)
    assert (out.result["status"], out.result["error"]["class"]) == ("denied", "confirmation_required")
    seen: list[str] = []

    def no(call: ToolCall, decision: Any) -> bool:
        seen.append(call.name)
        return False

    [out] = loop.call("openai", ask, surface, policy, confirm=no)
    assert out.result["error"]["class"] == "user_declined" and seen == ["gh_pr_merge"]
    assert loop.runs() == 0
    [out] = loop.call("openai", ask, surface, policy, confirm=lambda call, decision: True)
    assert out.status == "ok" and loop.argv_log.read_text().splitlines() == ["pr", "merge", "7"]


def test_the_call_runs_under_the_policys_timeout_and_its_process_group_is_killed(loop: Loop) -> None:
    policy = loop.policy(bridge={"callTimeoutMs": 300})
    loop.world.tool("gh", loop.body("sleep 30\n"))
    surface = loop.surface("openai", policy)
    [out] = loop.call("openai", response("openai", "gh_pr_list", {}), surface, policy)
    assert out.status == "timeout" and out.result["error"]["class"] == "timeout"
    assert out.run is not None and out.run.seconds < 10
