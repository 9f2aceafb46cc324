"""Tool call -> argv (bridge/argv.py over facts/arguments.py): the RFC §14.1 gh round trip, option
values and positionals that look like options, and everything that must be an error rather than a word
passed through. The injection tests run the argv through a real program that reports how getopt-style
parsing (Python's argparse) read it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from atip_trust.bridge.argv import tool_call_to_argv
from atip_trust.errors import MetadataError, UsageError
from atip_trust.facts.arguments import parse_argv
from atip_trust.facts.flatten import find_command

RFC = Path(__file__).resolve().parents[3] / "shared" / "reference" / "atip-rfc-v0.6.md"


#: RFC §14.1's gh commands as printed there (used when the RFC itself is not beside the checkout).
RFC_GH_COMMANDS: dict[str, Any] = {
    "pr": {"description": "Manage pull requests", "commands": {
        "list": {"description": "List pull requests", "options": [
            {"name": "state", "flags": ["-s", "--state"], "type": "enum",
             "enum": ["open", "closed", "merged", "all"], "default": "open"}],
                 "effects": {"network": True, "idempotent": True}},
        "create": {"description": "Create a pull request", "options": [
            {"name": "title", "flags": ["-t", "--title"], "type": "string"},
            {"name": "draft", "flags": ["-d", "--draft"], "type": "boolean"}],
                   "effects": {"network": True, "idempotent": False, "creates": ["pull_request"]}},
        "merge": {"description": "Merge a pull request",
                  "arguments": [{"name": "number", "type": "integer", "required": False}],
                  "effects": {"network": True, "idempotent": False, "reversible": False}}}},
    "repo": {"description": "Manage repositories", "commands": {
        "delete": {"description": "Delete a repository",
                   "arguments": [{"name": "repo", "type": "string", "required": True}],
                   "effects": {"network": True, "destructive": True, "reversible": False}}}},
}


def _gh_from_rfc() -> dict[str, Any]:
    """The §14.1 gh example, read from the RFC itself when it is at hand."""
    if RFC.is_file():
        text = RFC.read_text(encoding="utf-8")
        start = text.index("```json", text.index("### 14.1 GitHub CLI (gh)")) + len("```json")
        doc: dict[str, Any] = json.loads(text[start:text.index("```", start)])
        assert doc["commands"] == RFC_GH_COMMANDS  # the copy below is the RFC's
        return doc
    return {"atip": {"version": "0.6"}, "name": "gh", "version": "2.45.0", "description": "GitHub CLI",
            "commands": RFC_GH_COMMANDS}


GH = {
    "atip": {"version": "0.6"}, "name": "gh", "version": "2.45.0", "description": "GitHub CLI",
    "commands": {
        "pr": {"description": "Manage pull requests", "commands": {
            "create": {"description": "Create", "options": [
                {"name": "title", "flags": ["-t", "--title"], "type": "string"},
                {"name": "draft", "flags": ["-d", "--draft"], "type": "boolean"},
                {"name": "label", "flags": ["-l", "--label"], "type": "array"},
                {"name": "limit", "flags": ["-L"], "type": "integer"}]},
            "merge": {"description": "Merge", "arguments": [{"name": "number", "type": "integer",
                                                             "required": False}]},
        }},
        "repo": {"description": "Repos", "commands": {
            "delete": {"description": "Delete", "arguments": [{"name": "repo", "type": "string"}]},
            "clone": {"description": "Clone", "arguments": [
                {"name": "repo", "type": "string"},
                {"name": "dir", "type": "directory", "required": False},
                {"name": "args", "type": "string", "variadic": True, "required": False}]},
        }},
    },
}


def test_rfc_gh_example_round_trips() -> None:
    gh = _gh_from_rfc()
    argv = tool_call_to_argv(gh, "gh_pr_create", {"title": "x", "draft": True})
    assert argv == ["gh", "pr", "create", "--title", "x", "--draft"]
    cmd = find_command(gh, "gh_pr_create")
    assert cmd is not None
    assert parse_argv(cmd, argv[3:]) == ({"title": "x", "draft": True}, [])
    assert tool_call_to_argv(gh, "gh_pr_list", {"state": "merged"}) == ["gh", "pr", "list", "--state", "merged"]
    assert tool_call_to_argv(gh, "gh_pr_merge", {"number": 12}) == ["gh", "pr", "merge", "12"]
    assert tool_call_to_argv(gh, "gh_repo_delete", {"repo": "o/r"}) == ["gh", "repo", "delete", "o/r"]


def test_false_and_null_omit_an_optional_value() -> None:
    assert tool_call_to_argv(GH, "gh_pr_create", {"title": None, "draft": False}) == ["gh", "pr", "create"]
    assert tool_call_to_argv(GH, "gh_pr_merge", {"number": None}) == ["gh", "pr", "merge"]


def test_arrays_repeat_the_option_and_variadic_arguments_expand_in_order() -> None:
    argv = tool_call_to_argv(GH, "gh_pr_create", {"label": ["a", "b"], "limit": 3})
    assert argv == ["gh", "pr", "create", "--label", "a", "--label", "b", "-L", "3"]
    argv = tool_call_to_argv(GH, "gh_repo_clone", {"repo": "o/r", "dir": "d", "args": ["x", "y"]})
    assert argv == ["gh", "repo", "clone", "o/r", "d", "x", "y"]


# A stand-in tool that parses like most CLIs (argparse: options anywhere, `--` ends them) and prints
# what it read: whether a value became an option is observed, not assumed.
PROBE = """
import argparse, json, sys
p = argparse.ArgumentParser()
p.add_argument("--exec")
p.add_argument("--title")
p.add_argument("repo")
p.add_argument("rest", nargs="*")
print(json.dumps(vars(p.parse_args(sys.argv[1:]))))
"""


def _probe(argv: list[str]) -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    parsed: dict[str, Any] = json.loads(out.stdout)
    return parsed


@pytest.mark.parametrize("value", ["--exec=evil", "-e", "--", "-"])
def test_a_positional_value_that_looks_like_an_option_never_becomes_one(value: str) -> None:
    argv = tool_call_to_argv(GH, "gh_repo_delete", {"repo": value})
    if value.startswith("-"):
        assert argv == ["gh", "repo", "delete", "--", value]
    got = _probe(argv[3:])
    assert got["repo"] == value and got["exec"] is None


def test_only_one_separator_and_options_stay_before_it() -> None:
    argv = tool_call_to_argv(GH, "gh_repo_clone", {"repo": "o/r", "dir": "-d", "args": ["--exec=evil", "-x"]})
    assert argv == ["gh", "repo", "clone", "o/r", "--", "-d", "--exec=evil", "-x"]
    assert argv.count("--") == 1


def test_an_option_value_that_looks_like_an_option_stays_that_options_value() -> None:
    argv = tool_call_to_argv(GH, "gh_pr_create", {"title": "--exec=evil"})
    assert argv == ["gh", "pr", "create", "--title=--exec=evil"]
    got = _probe([*argv[3:], "o/r"])
    assert got["title"] == "--exec=evil" and got["exec"] is None


def test_a_dash_value_for_an_option_with_only_short_flags_is_refused() -> None:
    with pytest.raises(UsageError, match="only short flags"):
        tool_call_to_argv(GH, "gh_pr_create", {"limit": -1})


@pytest.mark.parametrize(("name", "args", "message"), [
    ("gh_pr_nuke", {}, "unknown tool 'gh_pr_nuke'"),
    ("gh_pr", {}, "unknown tool 'gh_pr'"),
    ("gh_pr_create", {"body": "x"}, "'body' is not an option or argument"),
    ("gh_pr_create", {"draft": "true"}, "expected boolean"),
    ("gh_pr_create", {"limit": True}, "expected integer"),
    ("gh_pr_create", {"limit": "3"}, "expected integer"),
    ("gh_pr_create", {"limit": 2.5}, "expected integer"),
    ("gh_pr_create", {"title": ["a"]}, "expected string"),
    ("gh_pr_create", {"label": "a"}, "expected an array"),
    ("gh_pr_create", {"label": [["a"]]}, "expected string or number"),
    ("gh_pr_create", {"title": "a\x00b"}, "NUL"),
    ("gh_repo_delete", {}, "argument 'repo' is required"),
    ("gh_repo_delete", {"repo": None}, "argument 'repo' is required"),
    ("gh_repo_clone", {"repo": "o/r", "args": ["x"]}, "without the earlier argument 'dir'"),
    ("gh_repo_clone", {"repo": "o/r", "dir": "d", "args": "x"}, "expected an array"),
])
def test_unknown_names_and_bad_arguments_are_errors(name: str, args: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        tool_call_to_argv(GH, name, args)


def test_enum_values_match_by_type_too() -> None:
    meta = {"name": "t", "commands": {"x": {"description": "x", "options": [
        {"name": "level", "flags": ["--level"], "type": "enum", "enum": [1, 2]}]}}}
    assert tool_call_to_argv(meta, "t_x", {"level": 2}) == ["t", "x", "--level", "2"]
    with pytest.raises(UsageError, match="not one of"):
        tool_call_to_argv(meta, "t_x", {"level": True})  # True == 1 in Python, but not in the enum


@pytest.mark.parametrize("option", [
    {"name": "o", "flags": ["output"], "type": "string"},
    {"name": "o", "flags": ["--out put"], "type": "string"},
    {"name": "o", "flags": ["--out=x"], "type": "string"},
    {"name": "o", "flags": [], "type": "string"},
    {"name": "o", "flags": ["--o"], "type": "shell"},
])
def test_declarations_no_argv_can_be_built_from_are_metadata_errors(option: dict[str, Any]) -> None:
    meta = {"name": "t", "commands": {"x": {"description": "x", "options": [option]}}}
    with pytest.raises(MetadataError):
        tool_call_to_argv(meta, "t_x", {})


def test_root_command_has_no_command_words() -> None:
    meta = {"name": "t", "commands": {"": {"description": "root", "arguments": [{"name": "f", "type": "file"}]}}}
    assert tool_call_to_argv(meta, "t", {"f": "-rf"}) == ["t", "--", "-rf"]


def test_parse_argv_refuses_what_it_cannot_read_exactly() -> None:
    cmd = find_command(GH, "gh_pr_create")
    assert cmd is not None
    args, problems = parse_argv(cmd, ["-dt", "x"])
    assert problems and "not a declared option" in problems[0]
    args, problems = parse_argv(cmd, ["--title", "a", "--title", "b"])
    assert problems == ["option 'title': given twice"]
    args, problems = parse_argv(cmd, ["--draft=false"])
    assert problems and "takes no value" in problems[0]
