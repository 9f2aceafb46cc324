"""Discovery with remote shim registries: ``scan --fetch`` asks the registries policy names (a real HTTP
server on loopback) for a tool's shim, verified against the registry signers in policy; without
``--fetch`` no request is made, and offline only a cached verified shim counts. The tool itself is
never run for its metadata (a sentinel proves it)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest
from pytest_httpserver import HTTPServer

from discovery_world import ISSUER, REGISTRY_ID, SAFE_EFFECTS, World, sentinel_script
from verify_helpers import cli

EVIL_ID = "https://github.com/evil/shims/.github/workflows/sign.yml@refs/heads/main"


def shim_for(data: bytes, name: str) -> bytes:
    return json.dumps({
        "atip": {"version": "0.6"},
        "binary": {"hash": f"sha256:{hashlib.sha256(data).hexdigest()}", "name": name, "version": "1.0.0"},
        "trust": {"source": "org", "verified": True}, "description": f"The {name} tool",
        "commands": {"status": {"description": "Show status", "effects": SAFE_EFFECTS}},
    }).encode()


@pytest.fixture
def setup(tmp_path: Path, httpserver: HTTPServer) -> dict[str, Any]:
    w = World(tmp_path)
    bindir = tmp_path / "bin"
    data = sentinel_script(w.sentinel("remote"))
    w.tool(bindir, "remote", data)  # unsigned: only a signed shim may speak for it
    base = httpserver.url_for("/").rstrip("/")
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps({
        "version": 1,
        "trust": {"trustedRoots": [{"path": str(w.root)}], "signers": [],
                  "registries": [{"url": base, "signers": [{"identity": REGISTRY_ID, "issuer": ISSUER}]}]},
        "defaults": {"noMatch": "ask"},
    }))
    env = {k: v for k, v in os.environ.items() if k not in ("ATIP_OFFLINE", "ATIP_REFRESH", "ATIP_REGISTRIES",
                                                             "ATIP_TRUST_ORG_POLICY")}
    env.update(ATIP_CACHE_DIR=str(tmp_path / "cache"), XDG_CACHE_HOME=str(tmp_path / "xdg-cache"),
               XDG_STATE_HOME=str(tmp_path / "xdg-state"))
    return {"w": w, "bin": bindir, "data": data, "policy": policy, "env": env, "base": base}


def serve_shim(server: HTTPServer, setup: dict[str, Any], identity: str = REGISTRY_ID) -> None:
    shim = shim_for(setup["data"], "remote")
    hexd = hashlib.sha256(setup["data"]).hexdigest()
    bundle = json.dumps(setup["w"].ts.sign_artifact(shim, identity=identity, issuer=ISSUER)).encode()
    server.no_handler_status_code = 404
    server.expect_request("/.well-known/atip-registry.json").respond_with_json(
        {"atip": {"version": "0.6"}, "registry": {"name": "test", "url": setup["base"]}})
    server.expect_request(f"/shims/sha256/{hexd}.json").respond_with_data(shim, content_type="application/json")
    server.expect_request(f"/shims/sha256/{hexd}.json.bundle").respond_with_data(bundle)


def scan(setup: dict[str, Any], *flags: str, **env: str) -> dict[str, Any]:
    r = cli("scan", "--bundle-dir", str(setup["w"].bundles), str(setup["bin"]), "--policy", str(setup["policy"]), "--format", "json", "--surface",
                       *flags, env={**setup["env"], **env})
    assert r.code == 0, r.err
    [row] = json.loads(r.out)["surface"]["tools"]
    return dict(row)


def test_scan_fetch_uses_a_registry_signed_shim_and_never_runs_the_tool(
    setup: dict[str, Any], httpserver: HTTPServer
) -> None:
    serve_shim(httpserver, setup)
    row = scan(setup, "--fetch")
    assert row["metadata"]["from"] == "shim" and row["metadata"]["effects_verified"] is True, row
    assert row["surface"] == {"placement": "loaded", "reason": "metadata_from_shim"}
    assert row["probe"]["reason"] == "signed_shim"
    assert not setup["w"].sentinel("remote").exists()
    # Offline afterwards: the cached verified shim still speaks for the tool, with no request.
    requests = len(httpserver.log)
    row = scan(setup, "--fetch", ATIP_OFFLINE="1")
    assert row["metadata"]["from"] == "shim" and len(httpserver.log) == requests


def test_scan_without_fetch_asks_no_registry(setup: dict[str, Any], httpserver: HTTPServer) -> None:
    serve_shim(httpserver, setup)
    row = scan(setup)
    assert row["metadata"]["from"] is None and row["surface"]["placement"] == "not_probed"
    assert httpserver.log == []
    assert not setup["w"].sentinel("remote").exists()


def test_scan_fetch_rejects_a_shim_signed_by_an_identity_policy_does_not_name(
    setup: dict[str, Any], httpserver: HTTPServer
) -> None:
    serve_shim(httpserver, setup, identity=EVIL_ID)
    row = scan(setup, "--fetch")
    assert row["metadata"]["from"] is None and row["surface"]["placement"] == "not_probed"
    assert httpserver.log, "the registry was asked"
    assert not setup["w"].sentinel("remote").exists()
