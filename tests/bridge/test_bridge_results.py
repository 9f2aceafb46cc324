"""What goes back to the model: secrets redacted, output truncated safely, calls parsed, results wrapped
(golden cases from the reference atip-bridge in fixtures/bridge/golden/)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from atip_trust.bridge import (
    ToolCallParseError,
    create_result_filter,
    handle_tool_result,
    parse_tool_call,
)
from atip_trust.bridge.safety import REDACTED, TRUNCATED

GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "bridge" / "golden"


def golden(name: str) -> Any:
    return json.loads((GOLDEN / name).read_text(encoding="utf-8"))


# The one case where the reference leaves a secret visible: "PASSWORD: s3cret!" (see docs/bridge.md).
WE_REDACT_MORE = {"PASSWORD: s3cret!": "PASSWORD: [REDACTED]"}


@pytest.mark.parametrize("case", golden("filter.json")["default"], ids=lambda c: c["input"][:24])
def test_every_default_secret_pattern_redacts_as_the_reference(case: dict[str, str]) -> None:
    expected = WE_REDACT_MORE.get(case["input"], case["output"])
    assert create_result_filter().filter(case["input"], "t") == expected


def test_password_colon_space_value_is_redacted_where_the_reference_shows_it() -> None:
    f = create_result_filter()
    assert f.filter("db:\n  password: hunter2\n  user: x") == "db:\n  password: [REDACTED]\n  user: x"
    assert f.filter("passwords are hashed") == "passwords are hashed"


def test_truncation_marker_is_newline_truncated_and_only_past_the_limit() -> None:
    f = create_result_filter(max_length=20)
    for case in golden("filter.json")["maxLength20"]:
        # The reference code appends "[TRUNCATED]"; the API specification (and we) "\n[TRUNCATED]".
        assert f.filter(case["input"]) == case["output"].replace("[TRUNCATED]", TRUNCATED)
    assert create_result_filter().max_length == 100_000


def test_a_secret_straddling_the_cut_is_redacted_whole_not_half_shown() -> None:
    key = "AKIA" + "ABCDEFGHIJKLMNOP"
    text = "x" * 10 + key + " tail"
    # Truncating first would leave "AKIAABCD" (no longer a full match) in the output.
    out = create_result_filter(max_length=18).filter(text)
    assert "AKIA" not in out and out == "x" * 10 + TRUNCATED
    # A cut that lands inside the marker moves to its start: no "[REDAC" fragment.
    out = create_result_filter(max_length=14).filter(text)
    assert out == "x" * 10 + TRUNCATED
    out = create_result_filter(max_length=20).filter(text)
    assert out == "x" * 10 + REDACTED + TRUNCATED


def test_truncation_never_cuts_a_multibyte_character() -> None:
    text = "é" * 30 + "💰" * 30
    out = create_result_filter(max_length=45).filter(text)
    assert out == "é" * 30 + "💰" * 15 + TRUNCATED
    out.encode("utf-8")
    raw = ("ü" * 40).encode() + b"\xff"
    assert create_result_filter(max_length=10).filter(raw) == "ü" * 10 + TRUNCATED


def test_custom_patterns_run_after_the_builtin_ones_and_redact_secrets_false_disables_builtins() -> None:
    f = create_result_filter(redact_patterns=[r"internal-\d+", r"\[REDACTED\]"])
    assert f.filter("id internal-42 token=abc") == "id [REDACTED] token=[REDACTED]"
    assert create_result_filter(redact_secrets=False).filter("token=abc") == "token=abc"


def test_hostile_near_miss_output_is_filtered_completely() -> None:
    # Correctness on the benchmark's input shape (bench/bridge.py measures the time).
    near = ["ghp_ ", "AKIA123 ", "Bearer ! ", "Basic ! ", "passwords ", "tokens ", "api_ke= ", "secrets "]
    text = "".join(near * 200) + "api_key=real"
    out = create_result_filter().filter(text)
    assert out == "".join(near * 200) + "api_key=[REDACTED]"


# -- lifecycle ----------------------------------------------------------------------------------------


def dump(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def test_results_are_wrapped_as_the_reference_wraps_them() -> None:
    for case in golden("lifecycle.json")["results"]:
        assert dump(handle_tool_result(case["provider"], case["id"], case["result"])) == dump(case["message"])


def test_tool_calls_are_parsed_as_the_reference_parses_them() -> None:
    data = golden("lifecycle.json")
    for provider, case in data["parsed"].items():
        calls = [c.to_json() for c in parse_tool_call(provider, case["response"])]
        assert dump(calls) == dump(case["calls"])
        assert calls
    for _provider, calls in data["empty"].items():
        assert calls == []
    assert parse_tool_call("openai", {"choices": [{"message": {"content": "hi"}}]}) == []
    assert parse_tool_call("gemini", {"candidates": [{"content": {"parts": [{"text": "hi"}]}}]}) == []
    assert parse_tool_call("anthropic", {"content": [{"type": "text", "text": "hi"}]}) == []


@pytest.mark.parametrize(("provider", "response", "path"), [
    ("openai", {"id": "x"}, "$.choices"),
    ("openai", "not an object", "$"),
    ("gemini", {"choices": []}, "$.candidates"),
    ("anthropic", {"content": "text"}, "$.content"),
    ("openai", {"choices": [{"message": {"tool_calls": [
        {"id": "c", "function": {"name": "gh_pr_list", "arguments": "{not json"}}]}}]},
     "$.choices[0].message.tool_calls[0].function.arguments"),
    ("openai", {"choices": [{"message": {"tool_calls": [
        {"id": "c", "function": {"name": "gh_pr_list", "arguments": '{"a":1,"a":2}'}}]}}]},
     "$.choices[0].message.tool_calls[0].function.arguments"),
    ("openai", {"choices": [{"message": {"tool_calls": [
        {"id": "c", "function": {"name": "gh_pr_list", "arguments": "[1]"}}]}}]},
     "$.choices[0].message.tool_calls[0].function.arguments"),
    ("openai", {"choices": [{"message": {"tool_calls": [{"id": "c"}]}}]},
     "$.choices[0].message.tool_calls[0].function"),
    ("gemini", {"candidates": [{"content": {"parts": [{"functionCall": {"name": 7}}]}}]},
     "$.candidates[0].content.parts[0].functionCall.name"),
    ("anthropic", {"content": [{"type": "tool_use", "id": "t", "name": "x", "input": "rm -rf /"}]},
     "$.content[0].input"),
])
def test_a_malformed_response_is_a_parse_error_naming_the_provider(provider: str, response: Any, path: str) -> None:
    with pytest.raises(ToolCallParseError) as err:
        parse_tool_call(provider, response)
    assert err.value.provider == provider
    assert err.value.diagnostics().startswith(f"{path}: {provider} response: ")
