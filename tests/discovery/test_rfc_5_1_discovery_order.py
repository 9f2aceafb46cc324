"""RFC §5.1's discovery order within verify-before-probe, through ``atip-trust scan`` and ``compile
--tool`` as users run them and ``probe`` as a runtime calls it: ``registry.json``'s entries are
candidates first (opened, re-hashed and verified like any other; a scan with an empty PATH still lists
them), verified metadata in the canonical directories answers before a probe, and a probe asks
``--agent --depth=1`` first (RFC §3.1.1), then ``--commands=`` for what the caller needs, falling back to
a full ``--agent`` for tools that refuse the flags. Each tool logs the words it was asked."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from atip_trust.admission.admit import load_admission_policy
from atip_trust.admission.options import AdmitOptions
from atip_trust.discovery.probe import probe
from atip_trust.execution.exec import admit_file
from atip_trust.registry import LocalRegistry

from gate_world import World, make_world

SAFE = {"destructive": False, "reversible": True, "idempotent": True, "network": False,
        "filesystem": {"read": True, "write": False, "delete": False}}


def full_doc(**more: Any) -> dict[str, Any]:
    return {"atip": {"version": "0.6"}, "name": "k", "version": "1.0.0", "description": "K",
            "commands": {"pods": {"description": "Pods", "commands": {
                "list": {"description": "List pods", "effects": SAFE}}},
                "nodes": {"description": "Nodes", "commands": {
                    "list": {"description": "List nodes", "effects": SAFE}}}}, **more}


def overview() -> dict[str, Any]:
    return {"atip": {"version": "0.6", "features": ["partial-discovery"]}, "name": "k", "version": "1.0.0",
            "description": "K", "partial": True, "filter": {"depth": 1},
            "omitted": {"reason": "depth-limited", "safetyAssumption": "unknown"},
            "commands": {"pods": {"description": "Pods"}, "nodes": {"description": "Nodes"}}}


def subset() -> dict[str, Any]:
    doc = full_doc()
    del doc["commands"]["nodes"]
    return {**doc, "atip": {"version": "0.6", "features": ["partial-discovery"]}, "partial": True,
            "filter": {"commands": ["pods"], "depth": None},
            "omitted": {"reason": "filtered", "safetyAssumption": "unknown"}}


def partial_tool(log: Path) -> bytes:
    """A tool with partial discovery: the overview for --depth=1, pods for --commands=pods, all else."""
    return (f"#!/bin/sh\necho \"$*\" >> '{log}'\n"
            f"case \"$*\" in\n"
            f"  '--agent --depth=1') cat <<'J'\n{json.dumps(overview())}\nJ\n;;\n"
            f"  '--agent --commands=pods') cat <<'J'\n{json.dumps(subset())}\nJ\n;;\n"
            f"  '--agent') cat <<'J'\n{json.dumps(full_doc())}\nJ\n;;\n"
            "  *) echo ran ;;\nesac\n").encode()


def strict_tool(log: Path) -> bytes:
    """A tool without partial discovery that refuses any flag it does not know (exit 2)."""
    return (f"#!/bin/sh\necho \"$*\" >> '{log}'\n"
            f"if [ \"$*\" = --agent ]; then cat <<'J'\n{json.dumps(full_doc())}\nJ\nexit 0; fi\n"
            "if [ \"$1\" = --agent ]; then echo \"unknown flag $2\" >&2; exit 2; fi\necho ran\n").encode()


def policy(world: World) -> Path:
    # The probed tool logs each question it is asked, a side effect a probe's read-only boundary refuses
    # (issue 37, RFC §3.1): these probes run unconfined; tests/execution/test_sandbox_exec.py tests it.
    return world.write_policy("order", permissions={"allow": [{"rule": r, "minTrustLevel": "VERIFIED"}
                                                               for r in ("k *", "sh")]}, exec={"sandbox": "off"})


def env(world: World, **more: str) -> dict[str, str]:
    out = world.env(ATIP_CACHE_DIR=str(world.dir / "cache"), XDG_STATE_HOME=str(world.dir / "state"),
                    XDG_DATA_HOME=str(world.dir / "data"), XDG_CONFIG_HOME=str(world.dir / "config"),
                    XDG_DATA_DIRS=str(world.dir / "no-system"))
    return {**out, **more}


def scan(world: World, *dirs: str, **more: str) -> dict[str, Any]:
    r = world.run("scan", *dirs, "--policy", str(policy(world)), "--bundle-dir", str(world.bundles),
                  "--format", "json", "--surface", env=env(world, **more))
    return dict(json.loads(r.stdout)["surface"])


def test_rfc_5_1_registry_json_entries_are_candidates_when_path_is_empty(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    log = tmp_path / "asked"
    tool = world.tool("k", partial_tool(log))
    LocalRegistry(tmp_path / "data" / "agent-tools" / "registry.json").put("k", tool)
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    rows = {t["name"]: t for t in scan(world, PATH=str(empty))["tools"]}
    assert set(rows) == {"k"}, rows
    row = rows["k"]
    assert row["trust"] == "verified" and row["path"] == str(tool), row  # re-hashed and verified
    assert row["digest"] == "sha256:" + hashlib.sha256(tool.read_bytes()).hexdigest()


def test_rfc_5_1_a_registry_entry_in_a_folder_others_can_write_is_skipped(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    shared = tmp_path / "shared-bin"
    shared.mkdir()
    tool = world.tool("k", partial_tool(tmp_path / "asked"), folder=shared)
    LocalRegistry(tmp_path / "data" / "agent-tools" / "registry.json").put("k", tool)
    os.chmod(shared, 0o777)
    out = scan(world, PATH=str(tmp_path / "nowhere"))
    assert out["tools"] == []
    assert any(s["path"] == str(tool) and s["reason"] == "directory_writable" for s in out["skipped"]), out


def test_rfc_3_1_1_discovery_asks_depth_1_first_and_keeps_the_overview(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    log = tmp_path / "asked"
    world.tool("k", partial_tool(log))
    row = next(t for t in scan(world, str(world.signed_bin))["tools"] if t["name"] == "k")
    assert row["probe"]["reason"] == "metadata" and row["metadata"]["from"] == "probe", row
    assert log.read_text().splitlines() == ["--agent --depth=1"]


def test_rfc_3_1_1_compile_completes_a_partial_answer_with_a_full_agent(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    log = tmp_path / "asked"
    world.tool("k", partial_tool(log))
    r = world.run("compile", "--provider", "anthropic", "--tool", "k", "--policy", str(policy(world)),
                  "--bundle-dir", str(world.bundles), "--no-audit", env=env(world))
    assert r.returncode == 0, r.stderr
    assert [t["name"] for t in json.loads(r.stdout)["tools"]] == ["k_pods_list", "k_nodes_list"]
    assert log.read_text().splitlines() == ["--agent --depth=1", "--agent"]


def test_rfc_3_1_1_a_caller_gets_the_commands_it_needs(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    log = tmp_path / "asked"
    tool = world.tool("k", partial_tool(log))
    pol = load_admission_policy(policy(world))
    opened = admit_file(str(tool), policy=pol, command=[], options=AdmitOptions(name="k", audit=False,
                        cache=False), bundle_dir=world.bundles)
    with opened.art as art:
        out = probe(art, opened.admission, pol, commands=["pods"], bundle_dir=world.bundles)
    assert out.metadata is not None and set(out.metadata.doc["commands"]) == {"pods"}
    assert log.read_text().splitlines() == ["--agent --depth=1", "--agent --commands=pods"]


def test_rfc_3_1_1_a_tool_that_refuses_the_flags_is_asked_plain_agent(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    log = tmp_path / "asked"
    world.tool("k", strict_tool(log))
    row = next(t for t in scan(world, str(world.signed_bin))["tools"] if t["name"] == "k")
    assert row["probe"]["reason"] == "metadata", row
    assert log.read_text().splitlines() == ["--agent --depth=1", "--agent"]


def test_rfc_5_1_verified_metadata_in_the_canonical_directories_answers_before_a_probe(tmp_path: Path) -> None:
    """A tools/ file signed by the policy's signer and bound to the bytes: the tool is not run."""
    world = make_world(tmp_path)
    log = tmp_path / "asked"
    tool = world.tool("k", partial_tool(log))
    hexd = hashlib.sha256(tool.read_bytes()).hexdigest()
    doc = json.dumps(full_doc(trust={"source": "native", "integrity": {"checksum": f"sha256:{hexd}"}})).encode()
    meta = tmp_path / "data" / "agent-tools" / "tools" / "k.json"
    meta.parent.mkdir(parents=True)
    meta.write_bytes(doc)
    world.bundle(Path(f"{meta}.bundle"), doc)
    row = next(t for t in scan(world, str(world.signed_bin))["tools"] if t["name"] == "k")
    assert (row["probe"]["reason"], row["metadata"]["from"]) == ("signed_metadata", "agent-tools"), row
    assert row["surface"]["placement"] == "loaded" and not log.exists()
