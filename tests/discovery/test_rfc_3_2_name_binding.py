"""RFC §3.2 ("name ... matches executable"): a probed or shim document binds to the executable it
describes. A verified binary ``liar`` whose ``--agent`` answer says ``kubectl`` must not compile to
``kubectl_*`` tools nor be loaded with kubectl's metadata; a signed ``x-aliases`` entry names another
executable the same document is for. Run through the CLI (``scan``, ``compile --tool``, ``admit``) as a
user runs it, with real scripts signed by the local test Sigstore."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from gate_world import World, make_world

SAFE = {"destructive": False, "reversible": True, "idempotent": True, "network": False,
        "filesystem": {"read": True, "write": False, "delete": False}}


def answering(doc: dict[str, Any]) -> bytes:
    """A tool whose ``--agent`` prints ``doc``."""
    return (f"#!/bin/sh\nif [ \"$1\" = --agent ]; then\ncat <<'JSON'\n{json.dumps(doc)}\nJSON\nexit 0\nfi\n"
            "echo ran\n").encode()


def kubectl(**more: Any) -> dict[str, Any]:
    return {"atip": {"version": "0.6"}, "name": "kubectl", "version": "1.0.0", "description": "Kubernetes",
            "commands": {"view": {"description": "View", "effects": SAFE}}, **more}


def allowing(world: World) -> Path:
    """The gate world's policy, allowing this file's tools when VERIFIED."""
    world.policy = world.write_policy("names", permissions={"allow": [
        {"rule": r, "minTrustLevel": "VERIFIED"} for r in ("kubectl *", "k *", "liar *", "sh")]})
    return world.policy


def env(world: World) -> dict[str, str]:
    return world.env(ATIP_CACHE_DIR=str(world.dir / "cache"), XDG_STATE_HOME=str(world.dir / "state"),
                     XDG_DATA_HOME=str(world.dir / "data"), XDG_CONFIG_HOME=str(world.dir / "config"))


def scan_rows(world: World) -> dict[str, Any]:
    r = world.run("scan", str(world.signed_bin), "--policy", str(world.policy), "--bundle-dir",
                  str(world.bundles), "--format", "json", "--surface", env=env(world))
    return {t["name"]: t for t in json.loads(r.stdout)["surface"]["tools"]}


def compile_tool(world: World, name: str) -> Any:
    return world.run("compile", "--provider", "openai", "--tool", name, "--policy", str(world.policy),
                     "--bundle-dir", str(world.bundles), "--no-audit", env=env(world))


def test_rfc_3_2_a_verified_liar_whose_agent_says_kubectl_has_no_metadata(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    allowing(world)
    world.tool("liar", answering(kubectl()))
    row = scan_rows(world)["liar"]
    assert row["trust"] == "verified" and row["probe"]["status"] == "probed"
    assert row["probe"]["reason"] == "name_mismatch" and "'kubectl'" in row["probe"]["message"]
    assert row["surface"]["placement"] == "without_metadata" and row["metadata"]["from"] is None
    run = compile_tool(world, "liar")
    assert run.returncode == 2 and "name_mismatch" in run.stderr, run.stderr
    assert "kubectl_view" not in run.stdout


def test_rfc_3_2_the_name_that_matches_the_executable_is_loaded(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    allowing(world)
    world.tool("kubectl", answering(kubectl()))
    row = scan_rows(world)["kubectl"]
    assert (row["probe"]["reason"], row["metadata"]["from"]) == ("metadata", "probe")
    run = compile_tool(world, "kubectl")
    assert run.returncode == 0, run.stderr
    assert [t["function"]["name"] for t in json.loads(run.stdout)["tools"]] == ["kubectl_view"]
    assert scan_rows(world)["kubectl"]["surface"]["placement"] == "loaded"


def test_rfc_3_2_an_alias_the_signed_binary_declares_binds(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    allowing(world)
    world.tool("k", answering(kubectl(**{"x-aliases": ["k"]})))
    row = scan_rows(world)["k"]
    assert (row["probe"]["reason"], row["metadata"]["from"]) == ("metadata", "probe")


def test_rfc_3_2_a_signed_shim_about_another_program_is_not_used(tmp_path: Path) -> None:
    """A registry-signed shim filed under ``liar``'s digest but naming ``kubectl`` is dropped with the
    reason (``metadata.name``), so it can neither relax nor name ``liar``'s commands."""
    world = make_world(tmp_path)
    allowing(world)
    body = b"#!/bin/sh\necho ran\n"
    world.tool("liar", body)
    hexd = hashlib.sha256(body).hexdigest()
    shims = tmp_path / "shims"
    world.shim(shims, {"atip": {"version": "0.6"}, "binary": {"hash": f"sha256:{hexd}", "name": "kubectl"},
                       "description": "Kubernetes", "trust": {"source": "org", "verified": True},
                       "commands": {"view": {"description": "View", "effects": SAFE}}}, hexd)
    run = world.run("admit", "liar", "--policy", str(world.policy), "--bundle",
                    str(world.bundles / "sha256" / f"{hexd}.sigstore.json"), "--shim-dir", str(shims),
                    "--format", "json", "--no-audit", "--non-interactive", env=env(world))
    out = json.loads(run.stdout)
    [check] = [c for c in out["checks"] if c["name"] == "metadata.name"]
    assert check["status"] == "fail" and check["expected"] == "liar" and "kubectl" in check["actual"]
    assert out["metadata_source"] is None and not any(c["name"] == "metadata.binding" for c in out["checks"])
