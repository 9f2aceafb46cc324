"""Attacks on the one HTTP client (net/fetch.py) and what uses it: a hostile server that trickles its
headers, ``ATIP_OFFLINE`` against every network path.

Real servers on 127.0.0.1: a raw socket server for the header trickle (no HTTP library can send a
status line and then one header byte at a time), pytest-httpserver for the rest.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from pytest_httpserver import HTTPServer

from atip_trust.errors import NetworkError
from atip_trust.net.fetch import fetch_bytes, fetch_conditional

from test_fetch import GOOD, IDENTITY, ISSUER, JSON, SIG, verify, write_metadata

#: How long the trickle server keeps going before it finishes a valid answer (the old code's fetch
#: then succeeds: what the tests below must never see).
TRICKLE_LIMIT = 20.0


class TrickleServer:
    """A real HTTP server on 127.0.0.1 that sends ``HTTP/1.1 200 OK`` and then one byte of a header
    every 0.2 s, never finishing the headers until ``TRICKLE_LIMIT`` has passed; it records whether
    the client hung up first."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.stop = threading.Event()
        self.client_hung_up = threading.Event()
        self.finished_answer = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def url(self, path: str = "/x") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def _serve(self) -> None:
        self.sock.settimeout(0.2)
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(2)
            try:
                conn.recv(65536)  # the request
                conn.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: ")
                waited = 0.0
                while waited < TRICKLE_LIMIT:
                    if self.stop.wait(0.2):
                        return
                    waited += 0.2
                    conn.sendall(b"a")
                conn.sendall(b"\r\nContent-Length: 2\r\nContent-Type: application/json\r\n\r\n{}")
                self.finished_answer.set()
            except OSError:
                self.client_hung_up.set()

    def close(self) -> None:
        self.stop.set()
        self.sock.close()


@pytest.fixture
def trickle() -> Iterator[TrickleServer]:
    server = TrickleServer()
    try:
        yield server
    finally:
        server.close()


def test_a_server_trickling_header_bytes_cannot_hold_a_fetch_past_its_deadline(
        trickle: TrickleServer) -> None:
    # Each header byte arrives well inside the per-read timeout; only a deadline over the headers
    # stops this. The old client waited the whole trickle out and returned the answer.
    with pytest.raises(NetworkError, match=r"timed out: not complete after 0.6 s"):
        fetch_bytes(trickle.url(), timeout=0.6)
    assert trickle.client_hung_up.wait(5), "the client must close the connection at its deadline"
    assert not trickle.finished_answer.is_set()


def test_a_registry_trickling_headers_fails_closed_at_the_lookup_timeout(trickle: TrickleServer) -> None:
    with pytest.raises(NetworkError, match=r"timed out"):
        fetch_conditional(trickle.url("/.well-known/atip-registry.json"), timeout=0.6)
    assert not trickle.finished_answer.is_set()


def test_rfc_4_6_atip_offline_stops_verify_fetch_before_any_request(
        httpserver: HTTPServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # admit --help says ATIP_OFFLINE forbids the network whatever is given; verify --fetch obeyed
    # --fetch instead.
    httpserver.expect_request("/prov").respond_with_data(b"{}")
    meta = write_metadata(tmp_path, httpserver.url_for("/prov"))
    monkeypatch.setenv("ATIP_OFFLINE", "1")
    r = verify(meta, "--fetch", subprocess=True)
    assert r.code == 2, r.out + r.err
    assert "ATIP_OFFLINE" in r.err
    assert httpserver.log == []


def test_rfc_4_6_atip_offline_refuses_every_request_of_the_one_http_client(
        httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch) -> None:
    httpserver.expect_request("/x").respond_with_data(b"{}")
    monkeypatch.setenv("ATIP_OFFLINE", "yes")
    with pytest.raises(NetworkError, match="ATIP_OFFLINE"):
        fetch_bytes(httpserver.url_for("/x"))
    with pytest.raises(NetworkError, match="ATIP_OFFLINE"):
        fetch_conditional(httpserver.url_for("/x"))
    assert httpserver.log == []


def _metadata_with_signature_bundle(tmp_path: Path, bundle_url: str, provenance_url: str | None) -> Path:
    """hello-tool's metadata declaring where its signature bundle lives (RFC §3.2.2
    ``trust.integrity.signature.bundle``), and optionally its provenance."""
    meta = write_metadata(tmp_path, provenance_url)
    doc = json.loads(meta.read_text())
    doc["trust"]["integrity"] = {"signature": {"type": "cosign", "identity": IDENTITY, "issuer": ISSUER,
                                               "bundle": bundle_url}}
    meta.write_text(json.dumps(doc))
    return meta


def test_fetch_follows_the_declared_signature_bundle_url(httpserver: HTTPServer, tmp_path: Path) -> None:
    # The old --fetch read only trust.provenance.url and refused this metadata (nothing to fetch).
    body = (SIG / "good" / "hello-tool.v0.3.sigstore.json").read_bytes()
    httpserver.expect_request("/hello-tool.sigstore.json").respond_with_data(body, content_type=JSON)
    meta = _metadata_with_signature_bundle(tmp_path, httpserver.url_for("/hello-tool.sigstore.json"), None)
    r = verify(meta, "--fetch", subprocess=True)
    assert r.code == 0, (r.out, r.err)
    assert r.json["signature"]["status"] == "valid"
    assert [f["file"] for f in r.json["fetched"]] == ["fetched-signature.json"]


def test_fetch_takes_both_the_signature_bundle_and_the_provenance(httpserver: HTTPServer, tmp_path: Path) -> None:
    httpserver.expect_request("/sig.json").respond_with_data(
        (SIG / "good" / "hello-tool.v0.3.sigstore.json").read_bytes(), content_type=JSON)
    httpserver.expect_request("/prov.json").respond_with_data(GOOD.read_bytes(), content_type=JSON)
    meta = _metadata_with_signature_bundle(tmp_path, httpserver.url_for("/sig.json"),
                                           httpserver.url_for("/prov.json"))
    r = verify(meta, "--fetch", subprocess=True)
    assert r.code == 0, (r.out, r.err)
    assert [f["file"] for f in r.json["fetched"]] == ["fetched-signature.json", "fetched-provenance.json"]
    assert r.json["trust_level"] == "VERIFIED"


@pytest.mark.slow
def test_verify_fetch_from_a_header_trickling_server_exits_2_timed_out_within_its_documented_10_s(
        trickle: TrickleServer, tmp_path: Path) -> None:
    # Through the CLI as users call it (docs/network.md: 10 s in total). The old client waited the trickle out.
    r = verify(write_metadata(tmp_path, trickle.url("/prov.json")), "--fetch", subprocess=True)
    assert r.code == 2, r.out + r.err
    assert "timed out: not complete after 10.0 s" in r.err
    assert trickle.client_hung_up.wait(5) and not trickle.finished_answer.is_set()
