"""Attacks on the bridge's call loop (``run_tool_call``): secrets in the forms machines print, a secret cut
by the byte cap or the deadline, a tool call whose argument no argv can carry.

Real subprocesses: the signed fake ``gh`` of test_bridge_loop.py (a ``#!/bin/sh`` script on the verified
``/bin/sh``), which records its argv and a sentinel line each time it runs.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from atip_trust.bridge.safety import create_result_filter

import test_bridge_loop
from test_bridge_loop import SECRET, Loop, response, shown

#: The signed fake gh of test_bridge_loop.py, by name.
loop = test_bridge_loop.loop

#: What machines print: JSON (AWS STS ``get-session-token``), an AWS credentials file, a shell export,
#: a dotenv line, a Python dict. Each secret value below must never reach the model.
MACHINE_SECRETS = {
    "json-password": '{"user": "ci", "password": "hunter2 with spaces"}',
    "json-token": '{"token": "tok-0123456789abcdef"}',
    "json-api-key": '{"api_key": "key-0123456789abcdef"}',
    "aws-sts-json": ('{"Credentials": {"AccessKeyId": "ASIAIOSFODNN7EXAMPLE", "SecretAccessKey": '
                     '"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "SessionToken": "FwoGZXIvYXdzEXAMPLE", '
                     '"Expiration": "2026-11-25T13:00:00Z"}}'),
    "aws-credentials-file": "[default]\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\n"
                            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "shell-export": "export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "dotenv-quoted": 'DB_PASSWORD="correct horse battery staple"',
    "python-dict": "{'client_secret': 'cs-0123456789abcdef'}",
}
SECRET_VALUES = ("hunter2", "with spaces", "tok-0123456789abcdef", "key-0123456789abcdef",
                 "ASIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI", "FwoGZXIvYXdzEXAMPLE", "AKIAIOSFODNN7EXAMPLE",
                 "horse", "battery", "cs-0123456789abcdef")


@pytest.mark.parametrize("form", sorted(MACHINE_SECRETS))
def test_secrets_in_the_forms_machines_print_are_redacted_before_the_model_sees_them(form: str) -> None:
    text = MACHINE_SECRETS[form]
    shown_text = create_result_filter().filter(f"before\n{text}\nafter")
    assert not [v for v in SECRET_VALUES if v in shown_text], shown_text
    assert "[REDACTED]" in shown_text and shown_text.startswith("before\n") and shown_text.endswith("after")


def test_aws_sts_credentials_printed_by_a_tool_never_reach_the_model(loop: Loop) -> None:
    script = "".join(f"cat <<'EOF'\n{text}\nEOF\n" for text in MACHINE_SECRETS.values())
    loop.world.tool("gh", loop.body(script))
    policy = loop.policy()
    surface = loop.surface("openai", policy)
    [out] = loop.call("openai", response("openai", "gh_pr_list", {}), surface, policy)
    assert out.status == "ok", out.result
    message = json.dumps(out.message)
    assert not [v for v in SECRET_VALUES if v in message], message
    assert '"Expiration": "2026-11-25T13:00:00Z"' in shown("openai", out.message)["stdout"]


def test_redaction_of_the_new_forms_stays_linear_on_near_misses() -> None:
    # Behaviour, not timing: a pattern that backtracked would not finish this in the test's lifetime
    # (2 MB of key-like words next to separators, quotes and escapes, none completing a secret).
    text = ('x_password_y.secret-token "secret" token\\" api_key:' + " " * 40) * 20_000
    shown_text = create_result_filter(max_length=10_000_000).filter(text)
    assert len(shown_text) >= len(text) // 2


def test_a_secret_cut_by_the_deadline_does_not_leak_its_first_characters(loop: Loop) -> None:
    # The tool prints the start of an AWS key ID and is killed at the deadline: 'AKIAIOSF' is too short
    # for the AKIA pattern, so only whole lines of cut output are shown.
    loop.world.tool("gh", loop.body("printf 'partial AKIAIOSF'\nsleep 30\n"))
    policy = loop.policy(bridge={"callTimeoutMs": 500})
    surface = loop.surface("openai", policy)
    [out] = loop.call("openai", response("openai", "gh_pr_list", {}), surface, policy)
    assert out.status == "timeout", out.result
    assert "AKIAIOSF" not in json.dumps(out.message)
    assert "gh pr list" in shown("openai", out.message)["stdout"]  # the whole lines before it stay


def test_a_secret_cut_by_the_output_cap_does_not_leak_its_first_characters(loop: Loop) -> None:
    # The cap (1024 bytes) falls inside the key ID: the old loop showed its first characters.
    before = len("gh pr list\n") + len(f"token: {SECRET}\n")  # what loop.body prints first
    filler = "x" * (1024 - before - 1 - len("id AKIAIOSF"))  # the cap leaves "id AKIAIOSF"
    loop.world.tool("gh", loop.body(f"printf '%s\\n' '{filler}'\nprintf 'id AKIAIOSFODNN7EXAMPLE\\n'\n"
                                    "sleep 5\n"))
    policy = loop.policy(bridge={"maxOutputBytes": 1024})
    surface = loop.surface("openai", policy)
    [out] = loop.call("openai", response("openai", "gh_pr_list", {}), surface, policy)
    assert out.result["error"]["class"] == "output_too_large", out.result
    assert "AKIA" not in json.dumps(out.message), out.result


def _two_calls(second_args: str) -> dict[str, Any]:
    return {"choices": [{"message": {"role": "assistant", "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "gh_pr_list", "arguments": json.dumps({"state": "open"})}},
        {"id": "call_2", "type": "function", "function": {"name": "gh_pr_view", "arguments": second_args}},
    ]}}]}


def test_a_lone_surrogate_argument_is_argument_invalid_and_the_other_calls_keep_their_outcomes(
        loop: Loop) -> None:
    # JSON "\ud800" decodes to a lone surrogate, which no argv can carry: the old loop raised
    # UnicodeEncodeError from the process start, losing call_1's outcome and logging call_2 as allowed.
    policy = loop.policy()
    surface = loop.surface("openai", policy)
    first, second = loop.call("openai", _two_calls('{"ref": "12\\ud800"}'), surface, policy)
    assert first.status == "ok" and first.id == "call_1", first.result
    assert (second.id, second.status, second.result["error"]["class"]) == ("call_2", "invalid", "invalid_arguments")
    assert {v["code"] for v in second.result["violations"]} == {"ARGUMENT_INVALID"}
    assert loop.runs() == 1
    lines = [json.loads(x) for x in loop.audit.read_text().splitlines()]
    assert [(x.get("call"), x["decision"]) for x in lines] == [("gh_pr_list", "allow"), ("gh_pr_view", "deny")]
    json.dumps(second.message, ensure_ascii=True)  # the result the model reads is encodable


def test_an_environment_value_no_process_can_be_given_is_refused_before_the_allow_line(loop: Loop) -> None:
    policy = loop.policy()  # exec.env mode "pass" (default): the caller's LANG goes through
    surface = loop.surface("openai", policy)
    from atip_trust.bridge import run_tool_call

    [out] = run_tool_call("openai", response("openai", "gh_pr_list", {}), surface, policy,
                          environ={"PATH": "/usr/bin:/bin", "LANG": "C\ud800"}, audit_log=str(loop.audit))
    assert (out.status, out.result["error"]["class"]) == ("invalid", "invalid_arguments"), out.result
    assert loop.runs() == 0
    assert [json.loads(x)["decision"] for x in loop.audit.read_text().splitlines()] == ["deny"]
