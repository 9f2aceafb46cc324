"""RFC §4.3: ``scan --update-registry`` writes the local ``registry.json`` (name -> path, digest and
metadata source) under RFC §4.2's ``$XDG_DATA_HOME/agent-tools``, for tools that verified and have
metadata only; an index, never evidence (issue 27)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from atip_trust.registry import LocalRegistry

from discovery_world import ORG_ID, World, agent_json, agent_script, sentinel_script
from verify_helpers import cli, cli_subprocess


def test_rfc_4_3_scan_update_registry_indexes_verified_tools_with_metadata(tmp_path: Path) -> None:
    (tmp_path / "w").mkdir()
    w = World(tmp_path / "w")
    b = tmp_path / "w" / "bin"
    good = w.tool(b, "good", agent_script(agent_json("good")), identity=ORG_ID)
    w.tool(b, "unsigned", sentinel_script(w.sentinel("unsigned")))
    env = {**os.environ, "ATIP_CACHE_DIR": str(tmp_path / "cache"), "XDG_CACHE_HOME": str(tmp_path / "c"),
           "XDG_STATE_HOME": str(tmp_path / "s"), "XDG_DATA_HOME": str(tmp_path / "data")}
    env.pop("ATIP_TRUST_ORG_POLICY", None)
    r = cli("scan", "--bundle-dir", str(w.bundles), str(b), "--policy", str(w.policy()),
                       "--format", "json", "--update-registry", env=env)
    assert r.code == 0, r.out + r.err
    assert "indexed 1 tool" in r.err
    index = tmp_path / "data" / "agent-tools" / "registry.json"
    doc = json.loads(index.read_text())
    assert set(doc["tools"]) == {"good"}  # the unsigned tool was never probed: no metadata, no entry
    entry = LocalRegistry(index).get("good")
    assert entry is not None and entry.source == "native" and entry.path == os.path.realpath(good)
    row = next(x for x in json.loads(r.out) if x["tool"] == "good")
    assert str(entry.digest).removeprefix("sha256:") == row["artifact"]["digest"]["sha256"].removeprefix("sha256:")
    assert oct(index.stat().st_mode & 0o777) == "0o600"


def test_scan_update_registry_on_a_full_data_folder_is_a_clear_error_and_keeps_the_index(tmp_path: Path) -> None:
    """Issue 33 item 5: the registry cannot be written (a file-size limit: a full disk) -> exit 2 naming
    the registry, no internal error, and the previous index byte for byte."""
    (tmp_path / "w").mkdir()
    w = World(tmp_path / "w")
    b = tmp_path / "w" / "bin"
    w.tool(b, "good", agent_script(agent_json("good")), identity=ORG_ID)
    index = tmp_path / "data" / "agent-tools" / "registry.json"
    index.parent.mkdir(parents=True)
    # Padded so that the limit (its size) leaves room for what scan itself writes, not for a longer index.
    pad = {f"old-{i}": {"path": f"/opt/old/{i}", "hash": "sha256:" + "0" * 64, "source": "native"} for i in range(200)}
    index.write_text(json.dumps({"version": "2", "tools": pad}, indent=2))
    index.chmod(0o600)
    before = index.read_bytes()
    env = {**os.environ, "ATIP_CACHE_DIR": str(tmp_path / "cache"), "XDG_CACHE_HOME": str(tmp_path / "c"),
           "XDG_STATE_HOME": str(tmp_path / "s"), "XDG_DATA_HOME": str(tmp_path / "data"),
           "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("ATIP_TRUST_ORG_POLICY", None)
    r = cli_subprocess("scan", "--bundle-dir", str(w.bundles), str(b), "--policy", str(w.policy()),
                       "--format", "json", "--update-registry", "--no-cache", env=env, max_file_bytes=len(before))
    assert r.code == 2, r.out + r.err
    assert "cannot write the local registry" in r.err and "internal error" not in r.err, r.err
    assert index.read_bytes() == before
    assert not [p for p in index.parent.iterdir() if p.name.startswith(".registry-")]


def test_scan_update_registry_where_the_data_folder_is_a_file_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "w").mkdir()
    w = World(tmp_path / "w")
    b = tmp_path / "w" / "bin"
    w.tool(b, "good", agent_script(agent_json("good")), identity=ORG_ID)
    blocked = tmp_path / "blocked"
    blocked.write_text("not a folder")
    env = {**os.environ, "ATIP_CACHE_DIR": str(tmp_path / "cache"), "XDG_STATE_HOME": str(tmp_path / "s"),
           "XDG_DATA_HOME": str(tmp_path / "data")}
    env.pop("ATIP_TRUST_ORG_POLICY", None)
    r = cli("scan", "--bundle-dir", str(w.bundles), str(b), "--policy", str(w.policy()), "--format",
            "json", "--update-registry", str(blocked / "registry.json"), env=env)
    assert r.code == 2 and "cannot write the local registry" in r.err and "internal error" not in r.err, r.err
