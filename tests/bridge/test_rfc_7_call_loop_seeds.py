"""The call loop as the seeds describe it (issue 36 items 4 and 5), through ``run_tool_call`` with a
signed ``gh`` that really runs: RFC §7.2 Gemini ``function_call`` parts (snake case) are read, a
refusal carries Anthropic's ``is_error``, every result is the AIP-14 envelope (``ok``; on failure
``error: {code, message, retryable}`` with a standard code) beside today's fields, and RFC §7.3 parallel
calls run concurrently when their declared effects do not conflict, results and audit lines in call
order."""

from __future__ import annotations

import json

import pytest
from test_bridge_loop import Loop, loop, response, shown  # noqa: F401 - loop: the fixture

AIP14_STANDARD_CODES = {"input_invalid", "input_unsupported", "unauthorised", "auth_required", "not_found",
                        "rate_limited", "timeout", "upstream_error", "no_route", "pinned_provider_unavailable",
                        "internal"}


def test_rfc_7_2_gemini_snake_case_function_call_parts_are_read(loop: Loop) -> None:
    policy = loop.policy()
    surface = loop.surface("gemini", policy)
    snake = {"candidates": [{"content": {"parts": [
        {"text": "let me look"}, {"function_call": {"name": "gh_pr_list", "args": {"state": "open"}}}]}}]}
    [out] = loop.call("gemini", snake, surface, policy)
    assert out.status == "ok" and out.argv == ("gh", "pr", "list", "--state", "open"), out.result
    assert loop.runs() == 1


def test_rfc_7_2_a_snake_case_part_that_is_not_a_call_object_is_a_parse_error(loop: Loop) -> None:
    policy = loop.policy()
    surface = loop.surface("gemini", policy)
    bad = {"candidates": [{"content": {"parts": [{"function_call": "gh_pr_list"}]}}]}
    [out] = loop.call("gemini", bad, surface, policy)
    assert out.status == "invalid" and out.result["error"]["class"] == "parse_error"
    assert "function_call" in out.result["path"] and loop.runs() == 0


@pytest.mark.parametrize("provider", ["openai", "gemini", "anthropic"])
def test_aip14_errors_a_refusal_is_the_envelope_with_a_standard_code(loop: Loop, provider: str) -> None:
    policy = loop.policy()
    surface = loop.surface(provider, policy)
    [out] = loop.call(provider, response(provider, "gh_repo_delete", {}), surface, policy)
    result = shown(provider, out.message)
    assert result["ok"] is False and result["status"] == "denied"  # today's field kept
    error = result["error"]
    assert set(error) >= {"code", "message", "retryable"} and error["retryable"] is False
    assert error["code"] == "unauthorised" and error["class"] == "permission_denied"
    assert error["code"] in AIP14_STANDARD_CODES and result["reasons"]


def test_aip14_errors_unknown_tools_and_bad_arguments_map_to_standard_codes(loop: Loop) -> None:
    policy = loop.policy()
    surface = loop.surface("openai", policy)
    [unknown] = loop.call("openai", response("openai", "gh_made_up", {}), surface, policy)
    [bad] = loop.call("openai", response("openai", "gh_pr_list", {"state": 3}), surface, policy)
    assert unknown.result["error"]["code"] == "not_found"
    assert bad.result["error"]["code"] == "input_invalid" and bad.result["status"] == "invalid"
    assert loop.runs() == 0


def test_aip14_errors_a_tool_that_fails_is_upstream_error_and_success_is_ok_true(loop: Loop) -> None:
    policy = loop.policy()
    surface = loop.surface("openai", policy)
    [ok] = loop.call("openai", response("openai", "gh_pr_list", {}), surface, policy)
    assert ok.result["ok"] is True and "error" not in ok.result
    loop.world.tool("gh", loop.body("exit 4\n"))
    surface = loop.surface("openai", policy)
    [failed] = loop.call("openai", response("openai", "gh_pr_list", {}), surface, policy)
    assert failed.status == "failed" and failed.result["exit_code"] == 4
    assert failed.result["error"]["code"] == "upstream_error" and failed.result["ok"] is False


def test_bridge_is_error_on_an_anthropic_refusal_and_not_on_success(loop: Loop) -> None:
    policy = loop.policy()
    surface = loop.surface("anthropic", policy)
    [denied] = loop.call("anthropic", response("anthropic", "gh_repo_delete", {}), surface, policy)
    [ok] = loop.call("anthropic", response("anthropic", "gh_pr_list", {}), surface, policy)
    assert denied.message["content"][0]["is_error"] is True
    assert "is_error" not in ok.message["content"][0]
    assert json.loads(ok.message["content"][0]["content"])["ok"] is True


