"""RFC §8 as the seeds state it, through the library a runtime calls (``compile_tools``,
``tool_call_to_argv``, ``generate_safety_prompt``): every compiled schema is one a model can call (the
value it builds from the schema, checked with jsonschema, goes back through the argv builder for every
argument type, variadic or not, option or argument, every provider, strict or not), every array has
``items``, ``filesystem.delete`` (a HIGH translation priority field, RFC §3.6) reaches the description,
and examples (description) and patterns (safety prompt) are offered within limits (RFC §8.3)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from atip_trust.bridge import generate_safety_prompt
from atip_trust.bridge.argv import tool_call_to_argv
from atip_trust.bridge.compile import OPENAI_DESCRIPTION_MAX_LENGTH, SAFETY_FLAGS, compile_tools, utf16_len
from atip_trust.facts.arguments import KNOWN_TYPES


def _param(typ: str, variadic: bool, kind: str) -> dict[str, Any]:
    p: dict[str, Any] = {"name": f"p_{typ}", "type": typ, "description": typ, "variadic": variadic}
    if typ == "enum" or typ == "array" and variadic:
        p["enum"] = ["fast", 2]
    elif typ == "integer" and variadic:
        p["enum"] = [1, 7]
    if kind == "options":
        p["flags"] = [f"--{typ}"]
    return p


def _tool(typ: str, variadic: bool, kind: str) -> dict[str, Any]:
    return {"atip": {"version": "0.6"}, "name": "t", "version": "1.0.0", "description": "T",
            "commands": {"run": {"description": "Run", kind: [_param(typ, variadic, kind)]}}}


def _value(schema: dict[str, Any]) -> Any:
    """The value a model following ``schema`` would send (never null: the parameter is given)."""
    if "enum" in schema:
        return schema["enum"][-1]
    typ = schema["type"]
    typ = next(t for t in typ if t != "null") if isinstance(typ, list) else typ
    if typ == "array":
        assert "items" in schema, schema
        return [_value(schema["items"]), _value(schema["items"])]
    return {"string": "s-1", "integer": 7, "number": 1.5, "boolean": True}[typ]


def _schema_of(definition: dict[str, Any]) -> dict[str, Any]:
    fn = definition.get("function", definition)
    return dict(fn.get("parameters") or fn["input_schema"])


CASES = [(t, v, k, p, s) for t in sorted(KNOWN_TYPES) for v in (False, True) for k in ("arguments", "options")
         for p in ("openai", "gemini", "anthropic") for s in (False, True) if not (s and p != "openai")]


@pytest.mark.parametrize(("typ", "variadic", "kind", "provider", "strict"), CASES)
def test_rfc_8_2_every_compiled_schema_is_callable_through_the_argv_builder(
        typ: str, variadic: bool, kind: str, provider: str, strict: bool) -> None:
    tool = _tool(typ, variadic, kind)
    [definition] = compile_tools([tool], provider, strict)["tools"]
    schema = _schema_of(definition)
    call = {name: _value(prop) for name, prop in schema["properties"].items()}
    jsonschema.validate(call, schema)  # what the model sends follows the schema it was given
    argv = tool_call_to_argv(tool, "t_run", call)
    assert argv[:2] == ["t", "run"] and len(argv) > 2, argv
    takes_list = typ == "array" or (variadic and typ != "boolean")
    assert (schema["properties"][f"p_{typ}"]["type"] in ("array", ["array", "null"])) == takes_list


def _arrays(node: Any) -> list[dict[str, Any]]:
    if isinstance(node, dict):
        here = [node] if node.get("type") == "array" or (isinstance(node.get("type"), list)
                                                        and "array" in node["type"]) else []
        return here + [a for v in node.values() for a in _arrays(v)]
    if isinstance(node, list):
        return [a for v in node for a in _arrays(v)]
    return []


@pytest.mark.parametrize(("provider", "strict"), [("openai", False), ("openai", True), ("gemini", False),
                                                  ("anthropic", False)])
def test_rfc_3_7_every_array_has_items_openai_strict_too(provider: str, strict: bool) -> None:
    tool = {"atip": {"version": "0.6"}, "name": "curl", "version": "1.0.0", "description": "curl",
            "commands": {"get": {"description": "Get", "arguments": [
                {"name": "url", "type": "url", "required": True, "variadic": True, "description": "URLs"}],
                "options": [{"name": "header", "flags": ["-H", "--header"], "type": "string", "variadic": True},
                            {"name": "tags", "flags": ["--tag"], "type": "array"}]}}}
    arrays = _arrays(compile_tools([tool], provider, strict)["tools"])
    assert len(arrays) == 3 and all("items" in a for a in arrays), arrays
    assert {json.dumps(a["items"]) for a in arrays} == {'{"type": "string"}'}


def test_rfc_3_6_filesystem_delete_reaches_the_description_and_is_not_read_only() -> None:
    effects = {"network": False, "filesystem": {"write": False, "delete": True}}
    tool = {"atip": {"version": "0.6"}, "name": "rm", "version": "1.0.0", "description": "rm",
            "commands": {"go": {"description": "Remove files", "effects": effects}}}
    for provider in ("openai", "gemini", "anthropic"):
        [d] = compile_tools([tool], provider)["tools"]
        text = d.get("function", d)["description"]
        assert SAFETY_FLAGS["DELETES_FILES"] in text and SAFETY_FLAGS["READ_ONLY"] not in text, text


def test_rfc_3_6_high_priority_flags_survive_the_openai_limit_with_long_examples() -> None:
    effects = {"destructive": True, "reversible": False, "idempotent": False, "cost": {"billable": True},
               "filesystem": {"delete": True}}
    tool = {"atip": {"version": "0.6"}, "name": "rm", "version": "1.0.0", "description": "rm",
            "commands": {"go": {"description": "x" * 1500, "effects": effects,
                                "examples": ["rm -rf build " + "y" * 400, "rm a", "rm b", "rm c"]}}}
    [d] = compile_tools([tool], "openai")["tools"]
    text = d["function"]["description"]
    assert utf16_len(text) <= OPENAI_DESCRIPTION_MAX_LENGTH
    for flag in ("DESTRUCTIVE", "NOT_REVERSIBLE", "NOT_IDEMPOTENT", "DELETES_FILES", "BILLABLE"):
        assert SAFETY_FLAGS[flag] in text, (flag, text[-200:])


def test_rfc_8_3_examples_reach_the_description_within_limits() -> None:
    tool = {"atip": {"version": "0.6"}, "name": "gh", "version": "1.0.0", "description": "gh",
            "commands": {"list": {"description": "List", "examples": ["gh list", "gh list --state open",
                                                                     "z" * 500, "gh list -L 5"]}}}
    [d] = compile_tools([tool], "anthropic")["tools"]
    text = d["description"]
    assert text.startswith("List Examples: `gh list`; `gh list --state open`; `zzz")
    assert "gh list -L 5" not in text and len(text) < 500  # three at most, each cut to 200


def test_rfc_8_3_patterns_reach_the_safety_prompt_within_limits() -> None:
    steps = [{"command": f"git step{i}"} for i in range(10)]
    tool = {"atip": {"version": "0.6"}, "name": "git", "version": "1.0.0", "description": "git",
            "commands": {"status": {"description": "Status"}},
            "patterns": [{"name": f"flow{i}", "description": "A flow", "steps": steps} for i in range(8)]}
    text = generate_safety_prompt([tool])
    assert "### Usage Patterns" in text and "- flow0 (git): A flow Steps: `git step0` -> `git step1`" in text
    assert "flow5" not in text and "git step6" not in text  # five patterns, six steps each at most


def test_rfc_8_2_a_variadic_boolean_is_a_flag() -> None:
    tool = _tool("boolean", True, "options")
    [d] = compile_tools([tool], "openai", True)["tools"]
    assert d["function"]["parameters"]["properties"]["p_boolean"]["type"] == ["boolean", "null"]
    assert tool_call_to_argv(tool, "t_run", {"p_boolean": True}) == ["t", "run", "--boolean"]


def test_rfc_8_2_a_numeric_enum_value_sent_as_the_string_rule_4_compiles_it_to_runs() -> None:
    tool = _tool("enum", False, "options")
    assert tool_call_to_argv(tool, "t_run", {"p_enum": "2"}) == ["t", "run", "--enum", "2"]
    with pytest.raises(Exception, match="not one of"):
        tool_call_to_argv(tool, "t_run", {"p_enum": "3"})


# -- against the reference's own answers (fixtures/bridge/seed-oracle.json) ------------------------------

ORACLE = json.loads((Path(__file__).resolve().parents[2] / "fixtures" / "bridge" / "seed-oracle.json")
                    .read_text(encoding="utf-8"))


@pytest.mark.parametrize("variant", ["openai", "openai.strict", "gemini", "anthropic"])
def test_rfc_8_2_the_reference_schema_cannot_be_called_and_ours_can(variant: str) -> None:
    """The reference compiles the variadic ``url`` to one string and ``tags`` to an array without items:
    the value a model builds from its schema is refused by the argv builder (which needs lists). Ours
    differs exactly there, and the model's value from ours runs."""
    tool = ORACLE["input"]
    provider, strict = variant.split(".")[0], variant.endswith(".strict")
    [ref] = ORACLE[variant]["tools"]
    [ours] = compile_tools([tool], provider, strict)["tools"]
    ref_schema, our_schema = _schema_of(ref), _schema_of(ours)
    assert ref_schema["properties"]["url"]["type"] in ("string", ["string", "null"])
    assert "items" not in ref_schema["properties"]["tags"]
    with pytest.raises(Exception, match="expected an array"):
        tool_call_to_argv(tool, "curl_get", {"url": _value(ref_schema["properties"]["url"])})
    call = {name: _value(prop) for name, prop in our_schema["properties"].items()}
    jsonschema.validate(call, our_schema)
    assert tool_call_to_argv(tool, "curl_get", call)[:2] == ["curl", "get"]
    # Everything else is the reference's: the same property names, required list and descriptions.
    assert list(our_schema["properties"]) == list(ref_schema["properties"])
    assert our_schema["required"] == ref_schema["required"]
    for name in ("url", "header", "tags", "mode"):
        assert our_schema["properties"][name]["description"] == ref_schema["properties"][name]["description"]


def test_rfc_3_6_the_reference_calls_a_deleting_command_read_only_and_drops_examples() -> None:
    [ref] = ORACLE["anthropic"]["tools"]
    [ours] = compile_tools([ORACLE["input"]], "anthropic")["tools"]
    assert ref["description"] == "Fetch URLs [\U0001f512 READ-ONLY]"
    assert ours["description"] == f"Fetch URLs Examples: `curl get https://example.com` [{SAFETY_FLAGS['DELETES_FILES']}]"


def test_rfc_7_2_the_reference_drops_a_snake_case_part_and_gives_no_is_error() -> None:
    from atip_trust.bridge.lifecycle import handle_tool_result, parse_tool_call
    snake = {"candidates": [{"content": {"parts": [{"function_call": {"name": "curl_get", "args": {"url": ["a"]}}}]}}]}
    assert ORACLE["gemini_parse"]["snake_case"] == []
    assert [c.to_json() for c in parse_tool_call("gemini", snake)] == ORACLE["gemini_parse"]["camel_case"]
    assert "is_error" not in ORACLE["anthropic_result"]["content"][0]
    assert handle_tool_result("anthropic", "toolu_1", {"status": "denied"}, is_error=True)["content"][0]["is_error"]


@pytest.mark.parametrize(("interactive", "flagged"), [({"tty": True}, True), ({"stdin": "password"}, True),
                                                     ({"stdin": "required"}, True), ({"prompts": True}, False),
                                                     ({"stdin": "optional"}, False)])
def test_rfc_3_6_interactive_needs_reach_the_description(interactive: dict[str, Any], flagged: bool) -> None:
    tool = {"atip": {"version": "0.6"}, "name": "ssh", "version": "1.0.0", "description": "ssh",
            "commands": {"login": {"description": "Log in", "effects": {"interactive": interactive}}}}
    [d] = compile_tools([tool], "openai", True)["tools"]
    assert (SAFETY_FLAGS["INTERACTIVE"] in d["function"]["description"]) == flagged
