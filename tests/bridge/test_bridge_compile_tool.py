"""``atip-trust compile --tool NAME``: the tool's own ``--agent`` answer is compiled, and the tool is run
for it only when policy vouches for its bytes (verify before probe), through the CLI as a user runs it."""

from __future__ import annotations

import json
from pathlib import Path

from gate_world import World, make_world

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
RFC_GH = FIXTURES / "metadata" / "valid" / "gh-rfc-v0.6.json"


def agent_tool(sentinel: Path) -> bytes:
    """A ``gh`` that answers ``--agent`` with the RFC §14.1 metadata and records that it ran."""
    meta = json.loads(RFC_GH.read_text())
    meta.pop("trust")
    return (f"#!/bin/sh\necho probed >> {sentinel}\nif [ \"$1\" = \"--agent\" ]; then\ncat <<'JSON'\n"
            f"{json.dumps(meta)}\nJSON\nexit 0\nfi\necho \"gh $*\"\n").encode()


def compile_tool(world: World, *, signed: bool, policy: Path | None = None) -> tuple[int, dict[str, object], str]:
    env = world.env(signed=signed, ATIP_CACHE_DIR=str(world.dir / "cache"),
                    XDG_STATE_HOME=str(world.dir / "state"))
    # The probed tool leaves a sentinel to prove it ran, a side effect a probe's read-only boundary refuses
    # (issue 37, RFC §3.1): these probes run unconfined; tests/execution/test_sandbox_exec.py tests it.
    policy = policy or world.write_policy("compile", exec={"sandbox": "off"})
    run = world.run("compile", "--provider", "anthropic", "--tool", "gh", "--policy", str(policy),
                    "--bundle-dir", str(world.bundles), "--no-audit", env=env)
    try:
        out = json.loads(run.stdout)
    except ValueError:
        out = {}
    return run.returncode, out, run.stderr


def test_a_verified_tool_is_probed_and_its_agent_metadata_compiled(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    sentinel = tmp_path / "probed"
    world.tool("gh", agent_tool(sentinel))
    code, out, err = compile_tool(world, signed=True)
    assert code == 0, err
    assert [t["name"] for t in out["tools"]] == ["gh_pr_list", "gh_pr_create", "gh_pr_merge"]  # type: ignore[index, union-attr]
    assert [b["name"] for b in out["blocked"]] == ["gh_repo_delete"]  # type: ignore[index, union-attr]
    [trust] = out["trust"]  # type: ignore[misc]
    assert trust["trust_level"] == "VERIFIED" and trust["metadata"] == "gh --agent"
    assert sentinel.read_text() == "probed\n"


def test_an_unverified_tool_is_never_run_to_compile_it(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    sentinel = tmp_path / "probed"
    world.tool("gh", agent_tool(sentinel), signed=False, folder=world.unsigned_bin)
    code, out, err = compile_tool(world, signed=False)
    assert code == 1 and out == {}
    assert "not probed (not_verified)" in err and "UNSIGNED" in err
    assert not sentinel.exists()


def test_a_policy_that_forbids_probing_never_runs_even_a_verified_tool(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    sentinel = tmp_path / "probed"
    world.tool("gh", agent_tool(sentinel))
    code, _, err = compile_tool(world, signed=True, policy=world.write_policy("never", discovery={"probe": "never"}))
    assert code == 1 and "probe_disabled" in err
    assert not sentinel.exists()


def test_a_probe_without_metadata_cannot_be_evaluated(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    world.tool("gh", b"#!/bin/sh\necho 'not json'\n")
    code, out, err = compile_tool(world, signed=True)
    assert code == 2 and out == {} and "invalid_metadata" in err
