"""``verify --fetch``: the metadata's ``trust.provenance.url`` is fetched only when asked, only over HTTPS
(plain http only on loopback), within a byte cap and a deadline, following only same-origin redirects,
and the fetched bytes are verified exactly like a local ``--bundle``.

A real HTTP server on loopback (pytest-httpserver) serves the project's own committed Sigstore fixtures.
"""

from __future__ import annotations

import json
import os
import re
import socket
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from atip_trust._base.limits import LIMITS
from atip_trust._version import __version__
from atip_trust.errors import InputTooLargeError, NetworkError, UsageError
from atip_trust.net.fetch import (
    MAX_REDIRECTS,
    bundle_suffix,
    check_url,
    fetch_bytes,
    fetched_provenance,
    is_loopback,
    redirect_target,
)

from conftest import FIXTURES
from verify_helpers import Run, cli, cli_subprocess

SIG = FIXTURES / "sigstore"
ARTIFACT = SIG / "artifacts" / "hello-tool"
GOOD = SIG / "good" / "hello-tool.dsse.sigstore.json"
OTHER_ARTIFACT_BUNDLE = SIG / "good" / "readme.email.sigstore.json"
IDENTITY = "https://github.com/atip-test/hello-tool/.github/workflows/release.yml@refs/tags/v1.0.0"
#: The good DSSE fixture is signed by the slsa-github-generator (fixtures/make_sigstore_fixtures.py GENERATOR),
#: the message bundles by hello-tool's release workflow: either signer is allowed here.
GENERATOR = ("https://github.com/slsa-framework/slsa-github-generator/.github/workflows/"
             "generator_generic_slsa3.yml@refs/tags/v2.1.0")
ISSUER = "https://token.actions.githubusercontent.com"
SIGNER = ["--trusted-root", str(SIG / "trusted_root.json"), "--certificate-identity-regexp",
          f"{re.escape(IDENTITY)}|{re.escape(GENERATOR)}", "--certificate-oidc-issuer", ISSUER]
JSON = "application/json"


def write_metadata(tmp_path: Path, url: str | None) -> Path:
    """ATIP 0.6 metadata for hello-tool declaring its provenance URL (RFC §3.2.2 trust.provenance)."""
    trust: dict[str, object] = {"source": "native"}
    if url is not None:
        trust["provenance"] = {"url": url, "format": "slsa-provenance-v1", "slsaLevel": 3}
    doc = {
        "atip": {"version": "0.6", "features": ["trust-v1", "trust-provenance"]},
        "name": "hello-tool",
        "version": "1.0.0",
        "description": "Print a greeting",
        "trust": trust,
        "commands": {"": {"description": "Say hello", "effects": {"network": False}}},
    }
    path = tmp_path / "hello-tool.atip.json"
    path.write_text(json.dumps(doc))
    return path


def verify(meta: Path, *extra: str, subprocess: bool = False) -> Run:
    argv = ["verify", str(ARTIFACT), *SIGNER, "--metadata", str(meta), "--format", "json", *extra]
    return cli_subprocess(*argv) if subprocess else cli(*argv)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# ------------------------------------------------------------------------------------------------
# The promise: no network unless asked; with --fetch, fetched material verifies like a local bundle


def test_metadata_check_accepts_the_test_metadata(tmp_path: Path) -> None:
    meta = write_metadata(tmp_path, "http://127.0.0.1:1/b.json")
    r = cli("metadata", "check", str(meta))
    assert r.code == 0, r.err
    assert "provenance.url: http://127.0.0.1:1/b.json" in r.out


def test_fetched_provenance_bundle_verifies(httpserver: HTTPServer, tmp_path: Path) -> None:
    body = GOOD.read_bytes()
    httpserver.expect_request("/hello-tool.dsse.sigstore.json").respond_with_data(body, content_type=JSON)
    url = httpserver.url_for("/hello-tool.dsse.sigstore.json")
    r = verify(write_metadata(tmp_path, url), "--fetch", subprocess=True)
    assert r.code == 0, (r.out, r.err)
    out = r.json
    assert out["trust_level"] == "VERIFIED"
    import hashlib

    assert out["fetched"] == [{
        "url": url, "final_url": url, "sha256": "sha256:" + hashlib.sha256(body).hexdigest(),
        "bytes": len(body), "file": "fetched-provenance.json",
    }]
    assert [a["evidence"] for a in out["attestations"]] == ["fetched-provenance.json"]
    assert len(httpserver.log) == 1
    request = httpserver.log[0][0]
    assert request.headers["User-Agent"] == f"atip-trust/{__version__}"
    assert "Authorization" not in request.headers and "Cookie" not in request.headers


def test_without_fetch_the_url_is_only_reported_and_nothing_is_requested(
    httpserver: HTTPServer, tmp_path: Path
) -> None:
    httpserver.expect_request("/b.json").respond_with_data(GOOD.read_bytes(), content_type=JSON)
    url = httpserver.url_for("/b.json")
    r = verify(write_metadata(tmp_path, url), subprocess=True)
    assert httpserver.log == []
    assert r.code == 1, r.err
    assert r.json["trust_level"] == "UNSIGNED"
    assert "fetched" not in r.json
    assert r.json["claims"]["provenance"]["url"] == url
    # The same as with no bundle and no metadata at all.
    bare = cli("verify", str(ARTIFACT), *SIGNER, "--format", "json")
    assert (bare.code, bare.json["trust_level"]) == (r.code, r.json["trust_level"])


def test_fetched_bundle_for_another_artifact_is_judged_like_the_local_file(
    httpserver: HTTPServer, tmp_path: Path
) -> None:
    httpserver.expect_request("/readme.json").respond_with_data(OTHER_ARTIFACT_BUNDLE.read_bytes(),
                                                                content_type=JSON)
    fetched = verify(write_metadata(tmp_path, httpserver.url_for("/readme.json")), "--fetch")
    local = cli("verify", str(ARTIFACT), *SIGNER, "--bundle", str(OTHER_ARTIFACT_BUNDLE),
                "--format", "json")
    assert local.code != 0
    assert fetched.code == local.code
    assert fetched.json["trust_level"] == local.json["trust_level"] != "VERIFIED"
    assert [(c["name"], c["status"]) for c in fetched.json["checks"]] == \
        [(c["name"], c["status"]) for c in local.json["checks"]]


def test_fetched_jsonl_of_bundles_is_read_line_by_line(httpserver: HTTPServer, tmp_path: Path) -> None:
    lines = [json.dumps(json.loads(p.read_bytes())) for p in
             (SIG / "good" / "hello-tool.v0.3.sigstore.json", GOOD)]
    httpserver.expect_request("/all.jsonl").respond_with_data("\n".join(lines) + "\n")
    r = verify(write_metadata(tmp_path, httpserver.url_for("/all.jsonl")), "--fetch")
    assert r.code == 0, r.out
    assert r.json["fetched"][0]["file"] == "fetched-provenance.jsonl"
    assert [a["evidence"] for a in r.json["attestations"]] == \
        ["fetched-provenance.jsonl#1", "fetched-provenance.jsonl#2"]


def test_fetched_garbage_is_refused_by_the_bundle_loader(httpserver: HTTPServer, tmp_path: Path) -> None:
    # The RFC's example URL is a GitHub attestations web page: HTML, not a bundle.
    httpserver.expect_request("/page").respond_with_data("<html>attestations</html>",
                                                         content_type="text/html")
    r = verify(write_metadata(tmp_path, httpserver.url_for("/page")), "--fetch")
    assert r.code == 2
    assert "fetched-provenance.json" in r.out and "not valid JSON" in r.out


def test_fetch_without_metadata_is_a_usage_error() -> None:
    r = cli("verify", str(ARTIFACT), *SIGNER, "--fetch")
    assert r.code == 2
    assert "--fetch needs --metadata" in r.err


def test_fetch_with_metadata_declaring_no_url_fails_closed(tmp_path: Path) -> None:
    r = cli("verify", str(ARTIFACT), *SIGNER, "--fetch", "--metadata", str(write_metadata(tmp_path, None)))
    assert r.code == 2
    assert "declares no trust.provenance.url and no trust.integrity.signature.bundle" in r.err


# ------------------------------------------------------------------------------------------------
# Attacks and failures: each exits 2 (could not evaluate) with the URL named


def test_redirect_to_the_same_origin_is_followed(httpserver: HTTPServer, tmp_path: Path) -> None:
    httpserver.expect_request("/old").respond_with_data("", status=302, headers={"Location": "/new"})
    httpserver.expect_request("/new").respond_with_data(GOOD.read_bytes(), content_type=JSON)
    r = verify(write_metadata(tmp_path, httpserver.url_for("/old")), "--fetch")
    assert r.code == 0, r.out
    assert r.json["fetched"][0]["final_url"] == httpserver.url_for("/new")
    assert [req.path for req, _ in httpserver.log] == ["/old", "/new"]


def test_redirect_to_another_host_is_refused(
    httpserver: HTTPServer, second_server: HTTPServer, tmp_path: Path
) -> None:
    second_server.expect_request("/evil.json").respond_with_data(GOOD.read_bytes(), content_type=JSON)
    target = second_server.url_for("/evil.json")
    httpserver.expect_request("/b.json").respond_with_data("", status=301, headers={"Location": target})
    r = verify(write_metadata(tmp_path, httpserver.url_for("/b.json")), "--fetch")
    assert r.code == 2
    err = json.loads(r.out)["error"]["message"] if r.out.strip() else r.err
    assert "refusing redirect" in err
    assert f"localhost:{httpserver.port}" in err and f"127.0.0.1:{second_server.port}" in err
    assert second_server.log == []


def test_redirect_to_same_host_other_port_is_refused(httpserver: HTTPServer) -> None:
    other = f"http://localhost:{closed_port()}/b.json"
    httpserver.expect_request("/b.json").respond_with_data("", status=307, headers={"Location": other})
    with pytest.raises(NetworkError, match="another scheme or port"):
        fetch_bytes(httpserver.url_for("/b.json"), timeout=1)


def test_redirect_loop_stops_after_the_cap(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/loop").respond_with_data("", status=302, headers={"Location": "/loop"})
    with pytest.raises(NetworkError, match=f"more than {MAX_REDIRECTS} redirects"):
        fetch_bytes(httpserver.url_for("/loop"), timeout=60)  # a bound, not a timing assertion: the cap must stop the loop first
    assert len(httpserver.log) == MAX_REDIRECTS + 1


def test_https_to_http_downgrade_redirect_is_refused() -> None:
    # No TLS server in the tests: the redirect decision is a pure function.
    with pytest.raises(NetworkError, match="downgrade from https to http"):
        redirect_target(httpx.URL("https://example.com/a"), "http://example.com/b")
    with pytest.raises(NetworkError, match=r"another host \(evil.example, not example.com\)"):
        redirect_target(httpx.URL("https://example.com/a"), "https://evil.example/a")
    with pytest.raises(NetworkError, match="without a Location header"):
        redirect_target(httpx.URL("https://example.com/a"), None, 301)
    assert redirect_target(httpx.URL("https://example.com/a/b"), "../c") == httpx.URL("https://example.com/c")
    assert redirect_target(httpx.URL("https://example.com/a"), "https://EXAMPLE.com:443/x") == \
        httpx.URL("https://example.com/x")


def test_cookie_set_before_a_redirect_is_not_sent_back(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/old").respond_with_data(
        "", status=302, headers={"Location": "/new", "Set-Cookie": "session=secret; Path=/"})
    httpserver.expect_request("/new").respond_with_data(b"{}", content_type=JSON)
    assert fetch_bytes(httpserver.url_for("/old"), timeout=1) == b"{}"
    follow = httpserver.log[1][0]
    assert "Cookie" not in follow.headers and "Authorization" not in follow.headers


def test_oversized_body_with_content_length_is_refused_before_reading(
    httpserver: HTTPServer, tmp_path: Path
) -> None:
    # Through the CLI with the real cap: one byte over it.
    httpserver.expect_request("/big").respond_with_data(b" " * (LIMITS.fetch_bytes + 1))
    started = time.monotonic()
    r = verify(write_metadata(tmp_path, httpserver.url_for("/big")), "--fetch")
    assert time.monotonic() - started < 5
    assert r.code == 2
    message = r.json["error"]["message"] if r.out.strip() else r.err
    assert f"over the fetch cap of {LIMITS.fetch_bytes} bytes" in message
    assert httpserver.url_for("/big") in message


def test_oversized_streamed_body_stops_at_the_cap(httpserver: HTTPServer) -> None:
    sent = []

    def endless(_: Request) -> Response:
        def body() -> Iterator[bytes]:
            for _ in range(1000):  # 64 MiB if nobody stopped reading
                sent.append(1)
                yield b"x" * 65536

        return Response(body(), content_type=JSON)  # no Content-Length: nothing to refuse early

    httpserver.expect_request("/stream").respond_with_handler(endless)
    with pytest.raises(InputTooLargeError, match=r"sent more than the fetch cap of 100000 bytes"):
        fetch_bytes(httpserver.url_for("/stream"), timeout=1, max_bytes=100_000)


def test_body_at_the_cap_is_accepted(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/exact").respond_with_data(b"y" * 1000)
    assert fetch_bytes(httpserver.url_for("/exact"), timeout=1, max_bytes=1000) == b"y" * 1000


def test_slow_server_times_out(second_server: HTTPServer) -> None:
    release = threading.Event()

    def stall(_: Request) -> Response:
        release.wait(5)
        return Response("{}")

    second_server.expect_request("/slow").respond_with_handler(stall)
    url = second_server.url_for("/slow")
    started = time.monotonic()
    try:
        with pytest.raises(NetworkError, match=r"timed out.* after 0.3 s") as info:
            fetch_bytes(url, timeout=0.3)
    finally:
        release.set()
    assert time.monotonic() - started < 1.5
    assert url in str(info.value)


def test_slow_drip_server_hits_the_total_deadline(second_server: HTTPServer) -> None:
    # Each byte arrives well within the read timeout; only the total deadline stops this.
    release = threading.Event()

    def drip(_: Request) -> Response:
        def body() -> Iterator[bytes]:
            for _ in range(100):
                yield b" "
                if release.wait(0.05):
                    return

        return Response(body(), content_type=JSON)

    second_server.expect_request("/drip").respond_with_handler(drip)
    started = time.monotonic()
    try:
        with pytest.raises(NetworkError, match=r"not complete after 0.4 s"):
            fetch_bytes(second_server.url_for("/drip"), timeout=0.4)
    finally:
        release.set()
    assert time.monotonic() - started < 1.5


def test_not_found_exits_2_naming_status_and_url(httpserver: HTTPServer, tmp_path: Path) -> None:
    httpserver.expect_request("/missing").respond_with_data("no", status=404)
    url = httpserver.url_for("/missing")
    r = verify(write_metadata(tmp_path, url), "--fetch", subprocess=True)
    assert r.code == 2
    message = r.json["error"]["message"] if r.out.strip() else r.err
    assert "expected status 200, got 404" in message and url in message
    assert "Traceback" not in r.err


def test_connection_refused_is_a_network_error() -> None:
    url = f"http://127.0.0.1:{closed_port()}/b.json"
    with pytest.raises(NetworkError, match="cannot connect to http://127.0.0.1"):
        fetch_bytes(url, timeout=1)


def test_compressed_body_is_refused(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/gz").respond_with_data(b"\x1f\x8b", headers={"Content-Encoding": "gzip"})
    with pytest.raises(NetworkError, match="Content-Encoding 'gzip'"):
        fetch_bytes(httpserver.url_for("/gz"), timeout=1)
    assert httpserver.log[0][0].headers["Accept-Encoding"] == "identity"


@pytest.mark.parametrize("url", [
    "file:///etc/passwd",
    "ftp://127.0.0.1/b.json",
    "data:application/json,{}",
    "http://example.com/b.json",
    "http://10.0.0.1/b.json",
    "gopher://localhost/",
])
def test_non_https_urls_are_refused_before_any_connection(url: str) -> None:
    with pytest.raises(NetworkError, match="refusing to fetch") as info:
        fetch_bytes(url, timeout=1)
    assert url.split("/")[0] in str(info.value)


def test_credentials_in_the_url_are_refused_without_connecting(httpserver: HTTPServer) -> None:
    url = httpserver.url_for("/b.json").replace("http://", "http://user:pw@")
    with pytest.raises(NetworkError, match="carries credentials"):
        fetch_bytes(url, timeout=1)
    assert httpserver.log == []


def test_plain_http_metadata_url_is_refused_through_the_cli(tmp_path: Path) -> None:
    r = verify(write_metadata(tmp_path, "http://example.com/b.json"), "--fetch")
    assert r.code == 2
    message = r.json["error"]["message"] if r.out.strip() else r.err
    assert "http://example.com/b.json" in message and "only for loopback" in message


def test_loopback_detection() -> None:
    for host in ("localhost", "127.0.0.1", "127.1.2.3", "::1", "[::1]"):
        assert is_loopback(host), host
    for host in ("example.com", "0.0.0.0", "10.0.0.1", "localhost.example.com", "::"):
        assert not is_loopback(host), host
    assert check_url("http://[::1]:8080/x").host == "::1"


def test_https_proxy_from_the_environment_is_used_for_https(
    httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The local server plays a proxy that refuses CONNECT: the request reached it, so it was honoured.
    port = closed_port()
    monkeypatch.setenv("HTTPS_PROXY", f"http://user:proxysecret@localhost:{httpserver.port}")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    with pytest.raises(NetworkError) as info:
        fetch_bytes(f"https://0.0.0.0:{port}/b.json", timeout=1)
    assert "proxysecret" not in str(info.value)
    assert [req.method for req, _ in httpserver.log] == ["CONNECT"]
    # NO_PROXY names the host: straight to it (nothing listens: connection refused), proxy untouched.
    httpserver.clear_log()
    monkeypatch.setenv("NO_PROXY", "0.0.0.0")
    with pytest.raises(NetworkError, match="cannot connect"):
        fetch_bytes(f"https://0.0.0.0:{port}/b.json", timeout=1)
    assert httpserver.log == []


def test_loopback_is_never_proxied(httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch) -> None:
    dead = f"http://127.0.0.1:{closed_port()}"
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.setenv(name, dead)
    httpserver.expect_request("/b.json").respond_with_data(b"{}")
    assert fetch_bytes(httpserver.url_for("/b.json"), timeout=1) == b"{}"


def test_fetched_material_lives_in_a_private_directory_removed_afterwards(
    httpserver: HTTPServer, tmp_path: Path
) -> None:
    httpserver.expect_request("/b.json").respond_with_data(GOOD.read_bytes())
    meta = write_metadata(tmp_path, httpserver.url_for("/b.json"))
    with fetched_provenance(meta, timeout=1) as material:
        (m,) = material
        assert stat.S_IMODE(os.stat(m.path.parent).st_mode) == 0o700
        assert stat.S_IMODE(os.stat(m.path).st_mode) == 0o600
        assert m.path.read_bytes() == GOOD.read_bytes()
        where = m.path.parent
    assert not where.exists()


def test_fetched_provenance_without_url_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="nothing to fetch"):
        with fetched_provenance(write_metadata(tmp_path, None), timeout=1):
            pass


def test_suffix_is_chosen_by_content() -> None:
    assert bundle_suffix(b'{\n  "a": 1\n}\n') == ".json"
    assert bundle_suffix(b'{"a": 1}\n{"b": 2}\n') == ".jsonl"
    assert bundle_suffix(b"<html>") == ".json"


def _github_api_answer(*bundles: Path) -> bytes:
    """The shape of GET /repos/{owner}/{repo}/attestations/sha256:{hex} (what gh attestation reads)."""
    return json.dumps({"attestations": [
        {"bundle": json.loads(p.read_bytes()), "repository_id": 1, "bundle_url": None} for p in bundles
    ]}).encode()


def test_fetched_github_attestations_api_answer_verifies_each_bundle(
    httpserver: HTTPServer, tmp_path: Path
) -> None:
    body = _github_api_answer(SIG / "good" / "hello-tool.v0.3.sigstore.json", GOOD)
    httpserver.expect_request("/repos/atip-test/hello-tool/attestations/x").respond_with_data(
        body, content_type=JSON)
    r = verify(write_metadata(tmp_path, httpserver.url_for("/repos/atip-test/hello-tool/attestations/x")),
               "--fetch")
    assert r.code == 0, r.out
    assert [a["evidence"] for a in r.json["attestations"]] == [
        "fetched-provenance.json#attestations[0]", "fetched-provenance.json#attestations[1]"]


@pytest.mark.parametrize("doc,path", [
    ({"attestations": []}, "$.attestations"),
    ({"attestations": {"bundle": {}}}, "$.attestations"),
    ({"attestations": [{"bundle": "not an object"}]}, "$.attestations[0].bundle"),
    ({"attestations": [{"repository_id": 1}]}, "$.attestations[0].bundle"),
])
def test_malformed_github_attestations_answer_exits_2_naming_the_path(
    tmp_path: Path, doc: dict, path: str
) -> None:
    f = tmp_path / "answer.json"
    f.write_text(json.dumps(doc))
    r = cli("verify", str(ARTIFACT), *SIGNER, "--bundle", str(f), "--format", "json")
    assert r.code == 2
    assert path in r.out + r.err
    assert r.json["decision"]["behavior"] == "deny"


def test_local_github_attestations_answer_with_only_another_artifacts_bundle_is_not_verified(
    tmp_path: Path,
) -> None:
    f = tmp_path / "answer.json"
    f.write_bytes(_github_api_answer(OTHER_ARTIFACT_BUNDLE))
    r = cli("verify", str(ARTIFACT), *SIGNER, "--bundle", str(f), "--format", "json")
    assert r.code == 1 and r.json["trust_level"] != "VERIFIED"
