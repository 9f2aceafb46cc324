"""RFC §4.3: ``scan --update-registry`` writes the local ``registry.json`` (name -> path, digest and
metadata source) under RFC §4.2's ``$XDG_DATA_HOME/agent-tools``, for tools that verified and have
metadata only; an index, never evidence (issue 27)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from discovery_world import ORG_ID, World, agent_json, agent_script, sentinel_script
from verify_helpers import cli

from atip_trust.registry import LocalRegistry


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
