"""Attacks on the shim registry client (RFC §4.4-4.8): an environment variable that drops an org's
allowlist registry, a withdrawn shim kept alive in the cache, a registry's own caching headers.

Real registries on 127.0.0.1 (pytest-httpserver), shims signed by the project's test Sigstore and
verified by the project's verifier (the fixtures of test_registry_client.py).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from atip_trust.errors import UsageError

import test_registry_client
from test_registry_client import base, client_for, reasons, registry_policy, serve
from verify_helpers import cli

#: The fixtures of test_registry_client.py, by name (a signed shim world, a private cache directory).
world = test_registry_client.world
cache_dir = test_registry_client.cache_dir


def _admit(world: dict[str, Any], policy: Path, *extra: str) -> Any:
    """``admit`` of the UNSIGNED tool (no bundle), non-interactive: only a registry-signed shim's
    effects could make its ``status`` command allowed."""
    return cli("admit", str(world["tool"]), "--command", "status", "--policy", str(policy),
               "--non-interactive", "--format", "json", "--no-audit", "--no-cache", *extra)


def test_atip_registries_leaving_out_the_orgs_allowlist_registry_is_refused_not_a_fall_through_allow(
        world, tmp_path, cache_dir, httpserver: HTTPServer, second_server: HTTPServer,
        monkeypatch: pytest.MonkeyPatch) -> None:
    serve(httpserver, {})                                   # the org's allowlist: lists nothing
    serve(second_server, {world["hex"]: world["good"]})     # a fall-through registry: "harmless"
    regs = ({"url": base(httpserver), "priority": 1, "mode": "allowlist"},
            {"url": base(second_server), "priority": 2})
    policy = registry_policy(world, tmp_path, *regs)
    assert _admit(world, policy, "--fetch").code != 0       # the allowlist's answer is final: no shim
    monkeypatch.setenv("ATIP_REGISTRIES", base(second_server))
    with pytest.raises(UsageError, match="after the allowlist registry"):
        client_for(world, tmp_path, *regs)
    r = _admit(world, policy, "--fetch")
    assert r.code == 2, r.out + r.err
    assert "allowlist" in r.err and '"allow"' not in r.out
    assert second_server.log == []


def test_atip_registries_may_still_narrow_to_registries_before_the_allowlist_cut(
        world, tmp_path, cache_dir, httpserver: HTTPServer, second_server: HTTPServer,
        monkeypatch: pytest.MonkeyPatch) -> None:
    serve(httpserver, {world["hex"]: world["good"]})
    serve(second_server, {})
    regs = ({"url": base(httpserver), "priority": 1},
            {"url": base(second_server), "priority": 2, "mode": "allowlist"})
    monkeypatch.setenv("ATIP_REGISTRIES", base(httpserver))
    result = client_for(world, tmp_path, *regs).lookup(world["digest"])
    assert result.found, reasons(result)
    assert second_server.log == []


def _age_cache(cache: Path, hours: float) -> None:
    """Make every cached shim's last check ``hours`` old (as if the machine had been offline)."""
    metas = list(cache.rglob("*.meta.json"))
    assert metas
    for meta in metas:
        info = json.loads(meta.read_text())
        info["checked"] = time.time() - hours * 3600
        meta.write_text(json.dumps(info))


def test_a_withdrawn_shim_cached_long_ago_stops_relaxing_the_gate_without_fetch(
        world, tmp_path, cache_dir, httpserver: HTTPServer) -> None:
    serve(httpserver, {world["hex"]: world["good"]})
    policy = registry_policy(world, tmp_path, {"url": base(httpserver)})
    bundle = tmp_path / "tool.sigstore.json"
    bundle.write_text(world["tool_bundle"])
    signed = ("--bundle", str(bundle))
    assert _admit(world, policy, *signed, "--fetch").json["effects_verified"] is True
    httpserver.clear()
    serve(httpserver, {})                                  # the registry withdraws the shim
    _age_cache(cache_dir, 6 * 24)                          # six days: still within the week
    assert _admit(world, policy, *signed).json["effects_verified"] is True
    _age_cache(cache_dir, 8 * 24)                          # eight days: counts as absent
    stale = _admit(world, policy, *signed)
    assert stale.json["effects_verified"] is False, stale.out
    assert "maximum age" in stale.out
    assert httpserver.log == []                            # without --fetch: no request at all


def test_policy_max_cache_age_shortens_offline_use_of_a_cached_shim(
        world, tmp_path, cache_dir, httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch) -> None:
    serve(httpserver, {world["hex"]: world["good"]})
    regs = {"url": base(httpserver), "maxCacheAgeHours": 1}
    assert client_for(world, tmp_path, regs).lookup(world["digest"]).found
    _age_cache(cache_dir, 2)
    monkeypatch.setenv("ATIP_OFFLINE", "1")
    result = client_for(world, tmp_path, regs).lookup(world["digest"])
    assert not result.found and "maxCacheAgeHours" in reasons(result)
    # A meta file claiming a check in the future is no fresher than an unknown one.
    for meta in cache_dir.rglob("*.meta.json"):
        meta.write_text(json.dumps({**json.loads(meta.read_text()), "checked": time.time() + 86400}))
    assert not client_for(world, tmp_path, regs).lookup(world["digest"]).found


def test_rfc_4_7_registry_cache_control_no_cache_revalidates_with_if_modified_since(
        world, tmp_path, cache_dir, httpserver: HTTPServer) -> None:
    # RFC §4.7: clients SHOULD honour Cache-Control and send If-Modified-Since.
    httpserver.no_handler_status_code = 404
    shim, bundle = world["good"]
    httpserver.expect_request("/.well-known/atip-registry.json").respond_with_json(
        {"atip": {"version": "0.6"}, "registry": {"name": "t", "url": base(httpserver)}})
    seen: list[tuple[str | None, str | None]] = []

    def shim_answer(request: Request) -> Response:
        seen.append((request.headers.get("If-None-Match"), request.headers.get("If-Modified-Since")))
        if request.headers.get("If-Modified-Since"):
            return Response(status=304)
        return Response(shim, content_type="application/json", headers={
            "ETag": '"v1"', "Last-Modified": "Tue, 01 Sep 2026 10:00:00 GMT", "Cache-Control": "no-cache"})

    httpserver.expect_request(f"/shims/sha256/{world['hex']}.json").respond_with_handler(shim_answer)
    httpserver.expect_request(f"/shims/sha256/{world['hex']}.json.bundle").respond_with_data(bundle)
    regs = {"url": base(httpserver)}
    assert client_for(world, tmp_path, regs).lookup(world["digest"]).found
    again = client_for(world, tmp_path, regs).lookup(world["digest"])  # within 24 h, but no-cache
    assert again.found and again.from_cache, reasons(again)
    assert seen == [(None, None), ('"v1"', "Tue, 01 Sep 2026 10:00:00 GMT")]


def test_rfc_4_7_registry_cache_control_no_store_keeps_no_copy(
        world, tmp_path, cache_dir, httpserver: HTTPServer) -> None:
    httpserver.no_handler_status_code = 404
    shim, bundle = world["good"]
    httpserver.expect_request("/.well-known/atip-registry.json").respond_with_json(
        {"atip": {"version": "0.6"}, "registry": {"name": "t", "url": base(httpserver)}})
    httpserver.expect_request(f"/shims/sha256/{world['hex']}.json").respond_with_data(
        shim, content_type="application/json", headers={"Cache-Control": "private, no-store"})
    httpserver.expect_request(f"/shims/sha256/{world['hex']}.json.bundle").respond_with_data(bundle)
    client = client_for(world, tmp_path, {"url": base(httpserver)})
    result = client.lookup(world["digest"])
    assert result.found and result.shim_path is not None
    assert list(cache_dir.rglob(f"{world['hex']}.json")) == []
    assert os.path.exists(result.shim_path)  # readable while the client lives (its scratch copy)


def test_a_registry_trickling_its_headers_is_an_error_attempt_within_the_lookup_timeout(
        world, tmp_path, cache_dir) -> None:
    from atip_trust.admission.admit import load_admission_policy
    from atip_trust.admission.shims import registry_specs, shim_verifier
    from atip_trust.registry import RegistryClient
    from atip_trust.signature.trustroot import TrustRoot

    from test_attacks_network import TrickleServer

    server = TrickleServer()
    try:
        policy = load_admission_policy(registry_policy(world, tmp_path, {"url": server.url("")}))
        root = TrustRoot.from_file(world["dir"] / "trusted_root.json")
        client = RegistryClient(registry_specs(policy), shim_verifier(root), cache_dir=cache_dir, timeout=0.6)
        result = client.lookup(world["digest"])
        assert not result.found
        assert [a.outcome for a in result.attempts] == ["error"]
        assert "timed out: not complete after 0.6 s" in reasons(result)
        assert server.client_hung_up.wait(5) and not server.finished_answer.is_set()
    finally:
        server.close()


@pytest.mark.parametrize("header", ["max-age=\u00b3", "max-age=\uff13", "max-age=\u0663"])
def test_a_registry_max_age_in_other_digits_is_no_max_age(header: str) -> None:
    """Issue 33 item 5 (strict intake): a Cache-Control from the network in non-ASCII digits is not a
    delta-seconds (RFC 9111): unparsed (the client's own TTL), never an error or a number."""
    from atip_trust.registry.client import _cache_control

    assert _cache_control(header) == float("inf")
