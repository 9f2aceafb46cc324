"""The call loop as the seeds describe it (issue 36 items 4 and 5), through ``run_tool_call`` with a
signed ``gh`` that really runs: RFC §7.2 Gemini ``function_call`` parts (snake case) are read, a
refusal carries Anthropic's ``is_error``, every result is the AIP-14 envelope (``ok``; on failure
``error: {code, message, retryable}`` with a standard code) beside today's fields, and RFC §7.3 parallel
calls run concurrently when their declared effects do not conflict, results and audit lines in call
order."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

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




# -- RFC §7.3: parallel calls ------------------------------------------------------------------------------

READ_ONLY = {"destructive": False, "reversible": True, "idempotent": True, "network": False,
             "filesystem": {"read": True, "write": False, "delete": False}, "creates": [], "modifies": [],
             "deletes": [], "subprocess": False}


def _writer(*modifies: str) -> dict[str, Any]:
    return {**READ_ONLY, "modifies": list(modifies)}


def barrier_tool(folder: Path) -> bytes:
    """A slow tool that proves by behaviour whether another call ran beside it: it marks itself running,
    waits (bounded, 3 s) to see a second running call, and prints ``together`` or ``alone``. Having seen
    one, it waits for the other to have seen it too before it leaves, so neither misses the other."""
    ls, grep, sleep, touch, rm = (shutil.which(c) for c in ("ls", "grep", "sleep", "touch", "rm"))
    d = folder
    return f"""#!/bin/sh
{touch} "{d}/run.$$"
out=alone; i=0
while [ $i -lt 30 ]; do
  if [ "$({ls} "{d}" | {grep} -c '^run\\.')" -ge 2 ]; then out=together; {touch} "{d}/saw.$$"; break; fi
  {sleep} 0.1; i=$((i+1))
done
j=0
while [ $out = together ] && [ $j -lt 30 ] && [ "$({ls} "{d}" | {grep} -c '^saw\\.')" -lt 2 ]; do {sleep} 0.1; j=$((j+1)); done
{rm} -f "{d}/run.$$"
echo "$out $1 $2"
""".encode()


def _parallel_loop(loop: Loop, tmp: Path) -> Any:
    marks = tmp / "marks"
    marks.mkdir()
    loop.world.tool("gh", barrier_tool(marks))
    doc = {"atip": {"version": "0.6"}, "name": "gh", "version": "1.0.0", "description": "gh",
           "commands": {"pr": {"description": "PRs", "commands": {
               "list": {"description": "List", "effects": READ_ONLY},
               "view": {"description": "View", "effects": READ_ONLY},
               "edit": {"description": "Edit labels", "effects": _writer("label")},
               "label": {"description": "Label", "effects": _writer("label")},
               "close": {"description": "Close", "effects": _writer("state")},
               "write": {"description": "Writes somewhere", "effects": {**READ_ONLY, "filesystem": {
                   "write": True}}}}}}}
    loop.meta.write_text(json.dumps(doc))
    policy = loop.policy()
    return policy, loop.surface("openai", policy)


def _calls(*names: str) -> dict[str, Any]:
    return {"choices": [{"message": {"role": "assistant", "tool_calls": [
        {"id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": "{}"}}
        for i, n in enumerate(names)]}}]}


@pytest.mark.parametrize(("names", "together"), [
    (("gh_pr_list", "gh_pr_view"), True),  # two reads
    (("gh_pr_edit", "gh_pr_close"), True),  # writes of different declared resources
    (("gh_pr_list", "gh_pr_edit"), True),  # a read beside a write
    (("gh_pr_edit", "gh_pr_label"), False),  # both write the label
    (("gh_pr_write", "gh_pr_close"), False),  # one writes without saying what
])
def test_rfc_7_3_parallel_calls_run_concurrently_unless_they_write_the_same_resource(
        loop: Loop, tmp_path: Path, names: tuple[str, str], together: bool) -> None:
    policy, surface = _parallel_loop(loop, tmp_path)
    outs = loop.call("openai", _calls(*names), surface, policy)
    assert [o.id for o in outs] == ["call_0", "call_1"] and [o.name for o in outs] == list(names)
    words = [o.result["stdout"].split()[0] for o in outs]
    assert all(o.status == "ok" for o in outs), [o.result for o in outs]
    assert words == (["together"] * 2 if together else ["alone"] * 2), [o.result for o in outs]
    # Results carry their own call's output, in call order; the audit lines are in call order too.
    assert [o.result["stdout"].split()[2] for o in outs] == [n.split("_")[2] for n in names]
    lines = [json.loads(x) for x in loop.audit.read_text().splitlines()]
    assert [(x["call"], x["decision"]) for x in lines] == [(n, "allow") for n in names]


def test_rfc_7_3_a_refused_call_among_parallel_ones_keeps_its_place(loop: Loop, tmp_path: Path) -> None:
    policy, surface = _parallel_loop(loop, tmp_path)
    outs = loop.call("openai", _calls("gh_pr_list", "gh_made_up", "gh_pr_view"), surface, policy)
    assert [(o.id, o.status) for o in outs] == [("call_0", "ok"), ("call_1", "denied"), ("call_2", "ok")]
    assert [o.result["stdout"].split()[0] for o in (outs[0], outs[2])] == ["together", "together"]
