"""The shim registry client (RFC §4.4-4.7) against a real HTTP server on loopback (pytest-httpserver),
with shims signed by the project's own test Sigstore and verified by the project's verifier.

The promises: a shim counts only when signed over its exact bytes by a signer *policy* names for that
registry and bound to the digest looked up; every failure of the registry (status, stall, flood,
redirect elsewhere) fails closed within the configured bounds; the bearer token never leaves the
registry's origin; the cache holds verified bytes only and is revalidated with a conditional request.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from atip_trust.admission.admit import load_admission_policy
from atip_trust.admission.shims import registry_client
from atip_trust.errors import UsageError
from atip_trust.facts.digest import Digest
from atip_trust.registry import RegistryClient, ShimResult

from verify_helpers import cli
from world import ISSUER, ORG_ID, REGISTRY_ID, World

EVIL_ID = "https://github.com/evil/shims/.github/workflows/sign.yml@refs/heads/main"
TOOL = b"#!/bin/sh\necho status\n"
OTHER_TOOL = b"#!/bin/sh\necho other\n"
TOKEN = "s3cret-registry-token"


def _shim(hexdigest: str, name: str = "oktool") -> bytes:
    return json.dumps({
        "atip": {"version": "0.6"},
        "binary": {"hash": f"sha256:{hexdigest}", "name": name, "version": "1.0.0"},
        "trust": {"source": "org", "verified": True},
        "description": "A read-only status tool",
        "commands": {"status": {"description": "Show status", "effects": {
            "destructive": False, "reversible": True, "idempotent": True, "network": False,
            "filesystem": {"read": True, "write": False, "delete": False}, "cost": {"billable": False},
            "interactive": {"stdin": "none", "prompts": False, "tty": False}}}},
    }).encode()


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    w = World(tmp_path_factory.mktemp("registry"), seed=15)
    hexd, other_hex = hashlib.sha256(TOOL).hexdigest(), hashlib.sha256(OTHER_TOOL).hexdigest()

    def sign(data: bytes, identity: str = REGISTRY_ID) -> bytes:
        return json.dumps(w.signed(data, identity=identity)).encode()

    good = _shim(hexd)
    wrong_hash = _shim(other_hex)  # validly signed, but about another binary
    other = _shim(other_hex, "othertool")
    return {
        "dir": w.dir, "tool": w.tool("oktool", TOOL), "hex": hexd, "digest": Digest.parse(f"sha256:{hexd}"),
        "other_hex": other_hex,
        "good": (good, sign(good)),
        "foreign": (good, sign(good, EVIL_ID)),
        "wrong_hash": (wrong_hash, sign(wrong_hash)),
        "other": (other, sign(other)),
        "tool_bundle": json.dumps(w.signed(TOOL, identity=ORG_ID)),
    }


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for var in ("ATIP_OFFLINE", "ATIP_REFRESH", "ATIP_REGISTRIES"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("ATIP_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache" / "registry"


def registry_policy(world: dict[str, Any], tmp_path: Path, *regs: dict[str, Any]) -> Path:
    doc = {
        "version": 1,
        "trust": {
            "trustedRoots": [{"path": str(world["dir"] / "trusted_root.json")}],
            "signers": [{"identity": ORG_ID, "issuer": ISSUER}],
            "registries": [{"signers": [{"identity": REGISTRY_ID, "issuer": ISSUER}], **r} for r in regs],
        },
        "defaults": {"noMatch": "ask", "allowVerifiedReadOnly": True},
    }
    path = tmp_path / f"policy-{len(list(tmp_path.glob('policy-*')))}.json"
    path.write_text(json.dumps(doc))
    return path


def client_for(world: dict[str, Any], tmp_path: Path, *regs: dict[str, Any], **kw: Any) -> RegistryClient:
    policy = load_admission_policy(registry_policy(world, tmp_path, *regs))
    return registry_client(policy, **kw)


def base(server: HTTPServer) -> str:
    return server.url_for("/").rstrip("/")


def serve(server: HTTPServer, shims: dict[str, tuple[bytes, bytes | None]],
          manifest: dict[str, Any] | None = None) -> None:
    server.no_handler_status_code = 404  # a static host: what it does not hold is a 404
    server.expect_request("/.well-known/atip-registry.json").respond_with_json(manifest or {
        "atip": {"version": "0.6"}, "registry": {"name": "test", "url": base(server)}})
    for hexd, (shim, bundle) in shims.items():
        server.expect_request(f"/shims/sha256/{hexd}.json").respond_with_data(
            shim, content_type="application/json", headers={"ETag": f'"{hexd[:8]}"'})
        if bundle is not None:
            server.expect_request(f"/shims/sha256/{hexd}.json.bundle").respond_with_data(bundle)


def reasons(result: ShimResult) -> str:
    return " | ".join(result.reasons)


# ------------------------------------------------------------------------------------------------
# A good shim is used, and kept byte-for-byte as signed


def test_good_signed_shim_is_used_and_cached_byte_for_byte_privately(
        world, tmp_path, cache_dir, httpserver: HTTPServer) -> None:
    serve(httpserver, {world["hex"]: world["good"]})
    result = client_for(world, tmp_path, {"url": base(httpserver)}).lookup(world["digest"])
    assert result.found, reasons(result)
    assert result.signer == REGISTRY_ID and result.issuer == ISSUER
    assert result.raw == world["good"][0] and result.document is not None
    assert result.document.name == "oktool"
    assert result.shim_path is not None and result.bundle_path is not None
    assert result.shim_path.read_bytes() == world["good"][0]
    assert result.bundle_path.read_bytes() == world["good"][1]
    assert cache_dir in result.shim_path.parents
    assert stat.S_IMODE(result.shim_path.stat().st_mode) == 0o600
    assert stat.S_IMODE(result.shim_path.parent.stat().st_mode) == 0o700
    assert not [p for p in result.shim_path.parent.iterdir() if p.name.startswith(".tmp-")]


# ------------------------------------------------------------------------------------------------
# Shims that must not count: each rejected, with the reason, and nothing cached


@pytest.mark.parametrize("case, expect", [
    ("unsigned", r"unsigned: .*\.bundle answered 404"),
    ("foreign", rf"signature does not verify .*expected .*{REGISTRY_ID}.*actual {EVIL_ID}"),
    ("wrong_hash", r"does not describe the binary it was looked up for: expected sha256:"),
])
def test_shim_that_is_unsigned_foreign_signed_or_about_another_binary_is_rejected(
        world, tmp_path, cache_dir, httpserver: HTTPServer, case: str, expect: str) -> None:
    shim, bundle = world["good"][0], None
    if case != "unsigned":
        shim, bundle = world[case]
    # The manifest names the foreign signer: a registry's own word is never an anchor.
    serve(httpserver, {world["hex"]: (shim, bundle)}, manifest={
        "atip": {"version": "0.6"},
        "trust": {"requireSignatures": True, "signers": [{"identity": EVIL_ID, "issuer": ISSUER}]}})
    result = client_for(world, tmp_path, {"url": base(httpserver)}).lookup(world["digest"])
    assert not result.found
    assert [a.outcome for a in result.attempts] == ["rejected"]
    assert re.search(expect, reasons(result)), reasons(result)
    assert not list(cache_dir.rglob("*.json"))  # nothing unverified is ever stored


def test_shim_for_another_digest_planted_in_the_cache_is_rejected_and_removed(
        world, tmp_path, cache_dir, httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch) -> None:
    # A validly signed shim for another binary, copied into this digest's cache slot.
    serve(httpserver, {world["hex"]: world["good"]})
    client = client_for(world, tmp_path, {"url": base(httpserver)})
    first = client.lookup(world["digest"])
    assert first.found and first.shim_path is not None and first.bundle_path is not None
    first.shim_path.write_bytes(world["other"][0])
    first.bundle_path.write_bytes(world["other"][1])
    monkeypatch.setenv("ATIP_OFFLINE", "1")
    again = client_for(world, tmp_path, {"url": base(httpserver)}).lookup(world["digest"])
    assert not again.found
    assert "no cached verified shim" in reasons(again)
    assert not first.shim_path.exists()


# ------------------------------------------------------------------------------------------------
# Caching: TTL, conditional requests, offline


def test_304_not_modified_reuses_the_cached_shim(world, tmp_path, cache_dir, httpserver: HTTPServer) -> None:
    serve(httpserver, {world["hex"]: world["good"]})
    regs = {"url": base(httpserver)}
    assert client_for(world, tmp_path, regs).lookup(world["digest"]).found
    httpserver.clear()
    seen: list[str | None] = []

    def not_modified(request: Request) -> Response:
        seen.append(request.headers.get("If-None-Match"))
        return Response(status=304)

    serve(httpserver, {})
    httpserver.expect_request(f"/shims/sha256/{world['hex']}.json").respond_with_handler(not_modified)
    client = client_for(world, tmp_path, regs)
    client.ttl = 0  # stale at once: revalidate
    result = client.lookup(world["digest"])
    assert result.found and result.from_cache, reasons(result)
    assert seen == [f'"{world["hex"][:8]}"']
    assert result.raw == world["good"][0]


def test_within_the_ttl_and_offline_no_request_is_made(
        world, tmp_path, cache_dir, httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch) -> None:
    serve(httpserver, {world["hex"]: world["good"]})
    regs = {"url": base(httpserver)}
    assert client_for(world, tmp_path, regs).lookup(world["digest"]).found
    requests = len(httpserver.log)
    assert client_for(world, tmp_path, regs).lookup(world["digest"]).from_cache
    monkeypatch.setenv("ATIP_OFFLINE", "1")
    client = client_for(world, tmp_path, regs)
    client.ttl = 0  # even stale: offline uses the verified cache and asks nobody
    assert client.lookup(world["digest"]).from_cache
    assert len(httpserver.log) == requests


def test_offline_without_a_cached_shim_asks_nobody_and_finds_nothing(
        world, tmp_path, cache_dir, httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch) -> None:
    serve(httpserver, {world["hex"]: world["good"]})
    monkeypatch.setenv("ATIP_OFFLINE", "1")
    result = client_for(world, tmp_path, {"url": base(httpserver)}).lookup(world["digest"])
    assert not result.found and [a.outcome for a in result.attempts] == ["offline"]
    assert httpserver.log == []


def test_a_shim_withdrawn_by_the_registry_leaves_the_cache(
        world, tmp_path, cache_dir, httpserver: HTTPServer) -> None:
    serve(httpserver, {world["hex"]: world["good"]})
    regs = {"url": base(httpserver)}
    first = client_for(world, tmp_path, regs).lookup(world["digest"])
    assert first.found and first.shim_path is not None
    httpserver.clear()
    serve(httpserver, {})
    client = client_for(world, tmp_path, regs)
    client.ttl = 0
    assert not client.lookup(world["digest"]).found
    assert not first.shim_path.exists()


# ------------------------------------------------------------------------------------------------
# A hostile or broken registry fails closed within the bounds


def test_server_error_fails_closed(world, tmp_path, cache_dir, httpserver: HTTPServer) -> None:
    serve(httpserver, {})
    httpserver.expect_request(f"/shims/sha256/{world['hex']}.json").respond_with_data("oops", status=500)
    result = client_for(world, tmp_path, {"url": base(httpserver)}).lookup(world["digest"])
    assert not result.found and [a.outcome for a in result.attempts] == ["error"]
    assert "expected status 200 or 304 or 404, got 500" in reasons(result)


def test_stalled_registry_fails_closed_within_the_timeout(
        world, tmp_path, cache_dir, second_server: HTTPServer) -> None:
    release = threading.Event()

    def stall(_: Request) -> Response:
        release.wait(10)
        return Response("{}")

    serve(second_server, {})
    second_server.expect_request(f"/shims/sha256/{world['hex']}.json").respond_with_handler(stall)
    client = client_for(world, tmp_path, {"url": base(second_server)})
    client.timeout = 0.5
    started = time.monotonic()
    try:
        result = client.lookup(world["digest"])
    finally:
        release.set()
    assert time.monotonic() - started < 2.5
    assert not result.found and "timed out" in reasons(result)


def test_100_mb_shim_stops_at_the_byte_cap(world, tmp_path, cache_dir, httpserver: HTTPServer) -> None:
    sent: list[int] = []

    def flood(_: Request) -> Response:
        def body() -> Iterator[bytes]:
            for _ in range(1600):  # 100 MiB if nobody stopped reading
                sent.append(1)
                yield b" " * 65536

        return Response(body(), content_type="application/json")  # no Content-Length

    serve(httpserver, {})
    httpserver.expect_request(f"/shims/sha256/{world['hex']}.json").respond_with_handler(flood)
    client = client_for(world, tmp_path, {"url": base(httpserver)})
    started = time.monotonic()
    result = client.lookup(world["digest"])
    assert time.monotonic() - started < 10
    assert not result.found
    assert f"sent more than the fetch cap of {client.max_bytes} bytes" in reasons(result)
    assert len(sent) < 1600
    assert not list(cache_dir.rglob("*.json"))


def test_redirect_to_ansecond_server_is_refused_and_the_token_never_reaches_it(
        world, tmp_path, cache_dir, httpserver: HTTPServer, second_server: HTTPServer,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REGISTRY_TOKEN", TOKEN)
    auth: list[str | None] = []

    def manifest(request: Request) -> Response:
        auth.append(request.headers.get("Authorization"))
        return Response(json.dumps({"atip": {"version": "0.6"}}), content_type="application/json")

    httpserver.expect_request("/.well-known/atip-registry.json").respond_with_handler(manifest)
    elsewhere = second_server.url_for(f"/shims/sha256/{world['hex']}.json")
    httpserver.expect_request(f"/shims/sha256/{world['hex']}.json").respond_with_data(
        "", status=302, headers={"Location": elsewhere})
    serve(second_server, {world["hex"]: world["good"]})
    result = client_for(world, tmp_path, {"url": base(httpserver), "tokenEnv": "REGISTRY_TOKEN"}
                        ).lookup(world["digest"])
    assert not result.found
    assert "refusing redirect" in reasons(result) and "another host (127.0.0.1" in reasons(result)
    assert auth == [f"Bearer {TOKEN}"]  # the token is used where policy says ...
    assert second_server.log == []        # ... and the other origin saw nothing at all
    assert TOKEN not in reasons(result)


def test_manifest_cannot_point_shims_at_ansecond_server(
        world, tmp_path, cache_dir, httpserver: HTTPServer, second_server: HTTPServer) -> None:
    serve(httpserver, {}, manifest={"atip": {"version": "0.6"}, "endpoints": {
        "shims": second_server.url_for("/shims/sha256/{hash}.json")}})
    result = client_for(world, tmp_path, {"url": base(httpserver)}).lookup(world["digest"])
    assert not result.found and "on the registry's own origin" in reasons(result)
    assert second_server.log == []


# ------------------------------------------------------------------------------------------------
# Order, allowlist, ATIP_REGISTRIES


def test_registries_are_asked_by_priority_and_allowlist_does_not_fall_through(
        world, tmp_path, cache_dir, httpserver: HTTPServer, second_server: HTTPServer) -> None:
    serve(httpserver, {})                                    # lists nothing
    serve(second_server, {world["hex"]: world["good"]})       # has the shim
    first, second = base(httpserver), base(second_server)
    fall = client_for(world, tmp_path, {"url": second, "priority": 50},
                      {"url": first, "priority": 10}).lookup(world["digest"])
    assert fall.found and fall.registry is not None and fall.registry.url == second
    assert [a.outcome for a in fall.attempts] == ["not-found", "found"]

    second_server.clear()
    serve(second_server, {world["hex"]: world["good"]})
    stop = client_for(world, tmp_path, {"url": second, "priority": 50},
                      {"url": first, "priority": 10, "mode": "allowlist"}).lookup(world["digest"])
    assert not stop.found
    assert "allowlist registry: no other registry is asked" in reasons(stop)
    assert second_server.log == []


def test_atip_registries_selects_among_policy_registries_but_cannot_add_one(
        world, tmp_path, cache_dir, httpserver: HTTPServer, second_server: HTTPServer,
        monkeypatch: pytest.MonkeyPatch) -> None:
    serve(httpserver, {world["hex"]: world["good"]})
    serve(second_server, {world["hex"]: world["good"]})
    regs = ({"url": base(httpserver), "priority": 1}, {"url": base(second_server), "priority": 2})
    monkeypatch.setenv("ATIP_REGISTRIES", base(second_server) + "/")
    result = client_for(world, tmp_path, *regs).lookup(world["digest"])
    assert result.registry is not None and result.registry.url == base(second_server)
    assert httpserver.log == []
    monkeypatch.setenv("ATIP_REGISTRIES", "https://shims.attacker.example")
    with pytest.raises(UsageError, match="which policy does not name"):
        client_for(world, tmp_path, *regs)


# ------------------------------------------------------------------------------------------------
# Through admission: the shim's read-only effects count only once fetched and verified


def test_admit_uses_a_fetched_shim_only_with_fetch_and_then_offline_from_the_cache(
        world, tmp_path, cache_dir, httpserver: HTTPServer) -> None:
    serve(httpserver, {world["hex"]: world["good"]})
    policy = registry_policy(world, tmp_path, {"url": base(httpserver)})
    bundle = tmp_path / "tool.sigstore.json"
    bundle.write_text(world["tool_bundle"])
    argv = ["admit", str(world["tool"]), "--command", "status", "--policy", str(policy),
            "--bundle", str(bundle), "--non-interactive", "--format", "json", "--no-audit", "--no-cache"]
    before = cli(*argv)
    assert before.code == 1, before.out + before.err  # no verified effects: ask, non-interactive: deny
    assert httpserver.log == []                        # no --fetch: no request
    assert "metadata.registry" in before.out

    fetched = cli(*argv, "--fetch")
    assert fetched.code == 0, fetched.out + fetched.err
    assert fetched.json["effects_verified"] is True
    os.environ["ATIP_OFFLINE"] = "1"
    try:
        offline = cli(*argv)  # the verified shim is cached: allowed with no request
    finally:
        del os.environ["ATIP_OFFLINE"]
    assert offline.code == 0 and offline.json["effects_verified"] is True
