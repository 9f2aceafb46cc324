"""The TUF store when it cannot be written or read back (issue 33 item 5): a store that cannot be
created or filled is a clear error and the previously verified root stays usable; a damaged (truncated)
``metadata/root.json`` is reported by path with the way out, and ``trust-root update`` starts over from
the TUF root shipped with the package (public-good, staging) or the ``--tuf-root`` given (any other).
Real python-tuf against a repository served on 127.0.0.1 (fixtures/tufrepo.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from pytest_httpserver import HTTPServer

from atip_trust.state import tufroot

import testsigstore
import tuf_world
from tufrepo import TufRepo
from verify_helpers import cli, cli_subprocess


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATIP_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def sigstore() -> testsigstore.TestSigstore:
    return testsigstore.TestSigstore(seed=3306, name="atip-test-tuf-damage")


@pytest.fixture
def repo(tmp_path: Path, sigstore: testsigstore.TestSigstore) -> TufRepo:
    return tuf_world.published_repo(tmp_path / "repo", sigstore)


@pytest.fixture
def served(httpserver: HTTPServer, repo: TufRepo) -> str:
    return tuf_world.serve(httpserver, repo)


@pytest.fixture
def tuf_root(tmp_path: Path, repo: TufRepo) -> Path:
    return tuf_world.first_root(tmp_path, repo)


def _truncate_root(url: str) -> Path:
    meta = Path(tufroot.store_dir(url)) / "metadata" / "root.json"
    meta.write_bytes(meta.read_bytes()[:37])  # a kill mid-write
    return meta


def test_a_truncated_store_root_is_reported_by_path_with_the_way_out(served: str, tuf_root: Path) -> None:
    assert cli("trust-root", "update", "--url", served, "--tuf-root", str(tuf_root)).code == 0
    meta = _truncate_root(served)
    r = cli("trust-root", "update", "--url", served)
    assert r.code == 2, r.out + r.err
    assert str(meta) in r.err and "damaged" in r.err and "--tuf-root FILE" in r.err, r.err
    assert "internal error" not in r.err
    r = cli("trust-root", "update", "--url", served, "--tuf-root", str(tuf_root), "--format", "json")
    assert r.code == 0, r.out + r.err  # started over from the root given
    assert tufroot.cached(served) is not None


def test_a_truncated_shipped_repository_store_starts_over_from_the_shipped_root(
        served: str, repo: TufRepo, monkeypatch: pytest.MonkeyPatch) -> None:
    """For a repository whose TUF root ships with the package (here the test repository stands in for
    public-good), a damaged store root is no dead end: the update starts from the shipped root."""
    monkeypatch.setattr(tufroot, "INSTANCE_URLS", {"production": served})
    monkeypatch.setattr(tufroot, "embedded_tuf_root", lambda instance: repo.root_bytes(1))
    assert cli("trust-root", "update", "--url", served).code == 0
    _truncate_root(served)
    r = cli("trust-root", "update", "--url", served, "--format", "json")
    assert r.code == 0, r.out + r.err
    assert tufroot.cached(served) is not None


def test_a_store_that_cannot_be_created_is_a_clear_error(served: str, tuf_root: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache folder goes (stops root as a read-only folder stops a user)")
    monkeypatch.setenv("ATIP_CACHE_DIR", str(blocked))
    r = cli("trust-root", "update", "--url", served, "--tuf-root", str(tuf_root))
    assert r.code == 2 and "cannot create the TUF store" in r.err and "internal error" not in r.err, r.err


def test_a_full_store_is_a_clear_error_and_keeps_the_verified_root(
        served: str, tuf_root: Path, repo: TufRepo, sigstore: testsigstore.TestSigstore) -> None:
    """A file-size limit (a full disk) on the update after a good one: exit 2 naming the store, and the
    root verified before is still the one in use, its record intact."""
    assert cli("trust-root", "update", "--url", served, "--tuf-root", str(tuf_root)).code == 0
    before = tufroot.cached(served)
    assert before is not None
    repo.set_target(json.dumps(sigstore.trusted_root_v2()).encode())
    repo.publish()
    r = cli_subprocess("trust-root", "update", "--url", served, "--tuf-root", str(tuf_root),
                       env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}, max_file_bytes=64)
    assert r.code == 2, r.out + r.err
    assert "cannot write the TUF store" in r.err and "internal error" not in r.err, r.err
    assert tufroot.cached(served) == before
    store = Path(tufroot.store_dir(served))
    assert not [p for p in store.rglob(".tmp-*")]
