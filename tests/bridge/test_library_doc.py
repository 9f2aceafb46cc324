"""docs/library.md's walk from policy to compiled surface to one model call (issue 34, item 7), run as the
doc writes it: its first block of the bridge section is executed in a folder holding what it names (the
shared gate world: a signed ``bin/gh`` on a signed ``/bin/sh``, bundles by digest, a policy allowing
``gh pr *``), with a model that answers each provider in that provider's format; its ``call_model`` block
is compiled (it needs the providers' clients and keys). Attacks: the model calls a command the policy
blocks, or a name never offered; the tool file changes after the surface was compiled."""

from __future__ import annotations

import ast
import contextlib
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest

from gate_world import GH, World, make_world

ROOT = Path(__file__).resolve().parents[2]
RFC_GH = ROOT / "fixtures" / "metadata" / "valid" / "gh-rfc-v0.6.json"


def blocks() -> list[str]:
    text = (ROOT / "docs" / "library.md").read_text(encoding="utf-8")
    section = text.split("## From policy to one model call", 1)
    assert len(section) == 2, "docs/library.md lost its bridge walk-through"
    return re.findall(r"```python\n(.*?)```", section[1], re.S)


def response(provider: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    """A model's answer asking for ``name(args)``, as each provider's API returns it."""
    if provider == "openai":
        return {"choices": [{"message": {"role": "assistant", "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]}}]}
    if provider == "gemini":
        return {"candidates": [{"content": {"role": "model", "parts": [{"functionCall": {"name": name,
                                                                                         "args": args}}]}}]}
    return {"role": "assistant", "content": [{"type": "text", "text": "Listing."},
                                             {"type": "tool_use", "id": "toolu_1", "name": name, "input": args}]}


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> World:
    w = make_world(tmp_path)
    w.bundle("gh.sigstore.json", GH)
    meta = json.loads(RFC_GH.read_text())
    meta.pop("trust", None)
    w.file("gh.json", meta)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", f"{w.signed_bin}:/usr/bin:/bin")
    return w


def run_walk(calls: dict[str, tuple[str, dict[str, Any]]]) -> tuple[str, dict[str, list[dict[str, Any]]]]:
    """Execute the doc's walk; ``calls``: what the model asks for, per provider. Returns what it printed
    and the tools each provider was offered."""
    offered: dict[str, list[dict[str, Any]]] = {}

    def call_model(provider: str, tools: list[dict[str, Any]], prompt: str) -> dict[str, Any]:
        assert prompt
        offered[provider] = tools
        return response(provider, *calls[provider])

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(blocks()[0], "docs/library.md", "exec"), {"call_model": call_model})  # noqa: S102
    return out.getvalue(), offered


def test_the_docs_walk_runs_one_call_per_provider_through_the_call_loop(world: World) -> None:
    printed, offered = run_walk({p: ("gh_pr_list", {"state": "open"}) for p in ("openai", "gemini", "anthropic")})
    assert printed.splitlines() == [f"{p} gh_pr_list ok 0" for p in ("openai", "gemini", "anthropic")]
    # Each provider got its own tool shape, and only what the policy allows.
    assert offered["openai"][0]["type"] == "function" and "parameters" in offered["openai"][0]["function"]
    assert all("parameters" in t for t in offered["gemini"])
    assert all("input_schema" in t for t in offered["anthropic"])
    names = {t["name"] for t in offered["anthropic"]}
    assert "gh_pr_list" in names and "gh_repo_delete" not in names


@pytest.mark.parametrize("name", ["gh_repo_delete", "rm_rf"])
def test_a_call_the_policy_blocks_or_never_offered_is_a_denied_result(world: World, name: str) -> None:
    printed, _ = run_walk({p: (name, {"repo": "org/prod"}) for p in ("openai", "gemini", "anthropic")})
    assert printed.splitlines() == [f"{p} {name} denied None" for p in ("openai", "gemini", "anthropic")]


def test_the_call_model_block_is_python_that_returns_each_providers_response() -> None:
    tree = ast.parse(blocks()[1])
    (fn,) = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    assert fn.name == "call_model" and [a.arg for a in fn.args.args] == ["provider", "tools", "prompt"]
    source = blocks()[1]
    assert "tools=tools" in source and "functionDeclarations" in source


def test_a_tool_changed_after_its_surface_was_compiled_does_not_run(world: World) -> None:
    """The file is rewritten between the model call and the run: the call loop admits it again and refuses."""
    sentinel = world.dir / "ran"

    def call_model(provider: str, tools: list[dict[str, Any]], prompt: str) -> dict[str, Any]:
        (world.signed_bin / "gh").write_bytes(GH + f"echo x >> {sentinel}\n".encode())
        return response(provider, "gh_pr_list", {"state": "open"})

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(blocks()[0], "docs/library.md", "exec"), {"call_model": call_model})  # noqa: S102
    assert [line.split()[2] for line in out.getvalue().splitlines()] == ["denied"] * 3
    assert not sentinel.exists()
