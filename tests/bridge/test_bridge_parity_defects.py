"""Three differences from the reference atip-bridge that were defects (issue 27), each as the
reference's own idiom or input: redaction patterns extended from the defaults, a tool document with no
tool-level description, and the response a parse error carries."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from atip_trust.bridge import (
    DEFAULT_REDACT_PATTERNS,
    ToolCallParseError,
    create_result_filter,
    parse_tool_call,
    to_openai,
)
from atip_trust.errors import MetadataError

from verify_helpers import cli


def test_result_filter_takes_the_defaults_plus_a_pattern_as_the_reference_idiom_writes_it() -> None:
    filt = create_result_filter([], redact_patterns=[*DEFAULT_REDACT_PATTERNS, re.compile(r"internal-\d+")])
    out = filt.filter("token ghp_abcdef123 and id internal-4711, password: hunter2")
    assert "ghp_abcdef123" not in out and "internal-4711" not in out and "hunter2" not in out
    assert out.count("[REDACTED]") == 3


def test_result_filter_names_what_a_bad_pattern_is() -> None:
    with pytest.raises(ValueError, match="redact pattern"):
        create_result_filter([], redact_patterns=[42])  # type: ignore[list-item]


NO_DESCRIPTION = {"atip": {"version": "0.6"}, "name": "t", "version": "1",
                  "commands": {"a": {"description": "A"}}}


def test_rfc_3_2_a_tool_without_a_description_is_refused_by_compile_not_compiled_empty(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text(json.dumps(NO_DESCRIPTION))
    r = cli("compile", "--provider", "openai", "--all", str(path))
    assert r.code == 2 and "$.description" in r.err and "required to compile" in r.err, r.out + r.err
    with pytest.raises(MetadataError, match="tool-level description"):
        to_openai(NO_DESCRIPTION)
    # metadata check still accepts it, with its warning (a description carries no trust meaning).
    r = cli("metadata", "check", str(path))
    assert r.code == 0 and "'description' is a required property" in r.out, r.out + r.err


@pytest.mark.parametrize(("provider", "response"), [
    ("openai", {"choices": "nope"}),
    ("gemini", "not an object"),
    ("anthropic", {"content": [{"type": "tool_use", "id": "", "name": "x", "input": {}}]}),
])
def test_a_parse_error_carries_the_response_as_the_references_does(provider: str, response: object) -> None:
    with pytest.raises(ToolCallParseError) as info:
        parse_tool_call(provider, response)
    assert info.value.response is response and info.value.provider == provider
