"""``atip-trust trust-root update`` over TUF (state/tufroot.py, python-tuf) against a TUF repository made with
python-tuf's Metadata API (fixtures/tufrepo.py) and served on 127.0.0.1 (pytest-httpserver); ``--root-from``
for a copied repository; policy ``trust.rootMaxAge``.

The attacks python-tuf's client refuses, each as exit 2 that leaves the last verified root in place:
rollback, freeze, expiry, a signature threshold not met, mix-and-match, oversized metadata.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import testsigstore
from pytest_httpserver import HTTPServer
from tufrepo import TufRepo
from verify_helpers import Run, cli
from werkzeug import Request, Response

from atip_trust.state import tufroot

IDENTITY = "https://github.com/atip-test/tool/.github/workflows/release.yml@refs/tags/v1.0.0"
ISSUER = "https://token.actions.githubusercontent.com"
DATA = b"#!/bin/sh\necho tuf\n"


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test its own TUF store: a root stored for the public-good URL must not outlive the test
    (every later verification without --trusted-root would use it)."""
    monkeypatch.setenv("ATIP_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def sigstore() -> testsigstore.TestSigstore:
    return testsigstore.TestSigstore(seed=60, name="atip-test-tuf")


@pytest.fixture
def repo(tmp_path: Path, sigstore: testsigstore.TestSigstore) -> TufRepo:
    r = TufRepo(tmp_path / "repo", json.dumps(sigstore.trusted_root()).encode())
    r.publish()
    return r


@pytest.fixture
def served(httpserver: HTTPServer, repo: TufRepo) -> str:
    """The repository's folder served as files, read at each request (tests change them)."""
    def handler(request: Request) -> Response:
        path = repo.dir / request.path.lstrip("/")
        if ".." in request.path or not path.is_file():
            return Response("not found", status=404)
        return Response(path.read_bytes(), status=200)

    httpserver.expect_request(re.compile(".*")).respond_with_handler(handler)
    return httpserver.url_for("/").rstrip("/")


@pytest.fixture
def tuf_root(tmp_path: Path, repo: TufRepo) -> Path:
    path = tmp_path / "1.root.json"
    path.write_bytes(repo.root_bytes(1))
    return path


def _update(url: str, tuf_root: Path, *extra: str) -> Run:
    return cli("trust-root", "update", "--url", url, "--tuf-root", str(tuf_root), *extra, "--format", "json")


def test_update_verifies_and_stores_the_trusted_root(served: str, tuf_root: Path,
                                                     sigstore: testsigstore.TestSigstore) -> None:
    r = _update(served, tuf_root)
    assert r.code == 0, r.out + r.err
    stored = Path(r.json["path"]).read_bytes()
    assert json.loads(stored) == sigstore.trusted_root()
    assert r.json["digest"] == "sha256:" + hashlib.sha256(stored).hexdigest()
    assert tufroot.cached(served) is not None


def test_a_new_root_version_signed_by_the_old_root_is_followed(served: str, tuf_root: Path, repo: TufRepo,
                                                               sigstore: testsigstore.TestSigstore) -> None:
    assert _update(served, tuf_root).code == 0
    repo.rotate_root_key()
    new = json.dumps(sigstore.trusted_root_v2()).encode()
    repo.set_target(new)
    repo.publish()
    r = _update(served, tuf_root)
    assert r.code == 0, r.out + r.err
    assert Path(r.json["path"]).read_bytes() == new


def _refused(served: str, tuf_root: Path, needle: str) -> None:
    before = tufroot.cached(served)
    r = _update(served, tuf_root)
    assert r.code == 2, r.out + r.err
    assert "TUF update from" in r.err and needle in r.err, r.err
    assert tufroot.cached(served) == before  # the last verified root stays


def test_rollback_is_refused(served: str, tuf_root: Path, repo: TufRepo) -> None:
    old_timestamp = (repo.dir / "timestamp.json").read_bytes()
    repo.publish()
    assert _update(served, tuf_root).code == 0
    (repo.dir / "timestamp.json").write_bytes(old_timestamp)  # a version lower than the one seen
    _refused(served, tuf_root, "BadVersionNumberError")


def test_a_frozen_timestamp_is_refused(served: str, tuf_root: Path, repo: TufRepo) -> None:
    """Freeze: the mirror keeps serving a timestamp that has expired."""
    assert _update(served, tuf_root).code == 0
    repo.expires["timestamp"] = datetime.now(UTC) - timedelta(days=1)
    repo.publish(roles=("timestamp",))
    _refused(served, tuf_root, "ExpiredMetadataError")


def test_expired_targets_are_refused(served: str, tuf_root: Path, repo: TufRepo) -> None:
    repo.expires["targets"] = datetime.now(UTC) - timedelta(days=1)
    repo.publish()
    _refused(served, tuf_root, "ExpiredMetadataError")


def test_a_threshold_not_met_is_refused(served: str, tuf_root: Path, repo: TufRepo) -> None:
    """The new root requires two timestamp signatures; the timestamp carries one."""
    assert _update(served, tuf_root).code == 0
    repo.set_threshold("timestamp", 2)
    repo.publish()
    _refused(served, tuf_root, "UnsignedMetadataError")


def test_mix_and_match_is_refused(served: str, tuf_root: Path, repo: TufRepo) -> None:
    """A targets file of another version served under the name the snapshot vouches for."""
    version = repo.targets.signed.version
    repo.publish()
    shutil.copy(repo.dir / f"{version}.targets.json", repo.dir / f"{version + 1}.targets.json")
    _refused(served, tuf_root, "BadVersionNumberError")


def test_oversized_metadata_is_refused(served: str, tuf_root: Path, repo: TufRepo) -> None:
    path = repo.dir / "timestamp.json"
    doc = json.loads(path.read_bytes())
    doc["padding"] = "x" * 20000  # over python-tuf's timestamp cap (16 KiB)
    path.write_text(json.dumps(doc))
    _refused(served, tuf_root, "DownloadLengthMismatchError")


def test_a_target_that_is_no_trusted_root_is_refused(served: str, tuf_root: Path, repo: TufRepo) -> None:
    repo.set_target(b'{"mediaType": "not a trusted root"}')
    repo.publish()
    r = _update(served, tuf_root)
    assert r.code == 2 and "unsupported mediaType" in r.err, r.err
    assert tufroot.cached(served) is None


def test_an_unknown_repository_needs_its_first_root(served: str) -> None:
    r = cli("trust-root", "update", "--url", served)
    assert r.code == 2 and "--tuf-root" in r.err, r.err


def _bundle(tmp_path: Path, sigstore: testsigstore.TestSigstore) -> tuple[Path, Path]:
    artifact = tmp_path / "tool"
    artifact.write_bytes(DATA)
    bundle = tmp_path / "tool.sigstore.json"
    bundle.write_text(json.dumps(sigstore.sign_artifact(DATA, identity=IDENTITY, issuer=ISSUER)))
    return artifact, bundle


def _verify(artifact: Path, bundle: Path, *extra: str) -> Run:
    return cli("verify", str(artifact), "--bundle", str(bundle), "--certificate-identity", IDENTITY,
               "--certificate-oidc-issuer", ISSUER, *extra, "--format", "json", "--no-cache")


def test_root_from_a_copied_repository_becomes_the_root_verify_uses(
        tmp_path: Path, repo: TufRepo, tuf_root: Path, sigstore: testsigstore.TestSigstore) -> None:
    """Air-gapped: the repository copied to a folder, verified as a download would be, stored as the
    public-good root (its URL's slot); ``verify`` without --trusted-root then verifies with it."""
    artifact, bundle = _bundle(tmp_path, sigstore)
    assert _verify(artifact, bundle).code == 1  # the embedded public-good root does not know this instance
    r = cli("trust-root", "update", "--root-from", str(repo.dir), "--tuf-root", str(tuf_root), "--format", "json")
    assert r.code == 0 and r.json["url"] == tufroot.PRODUCTION_URL, r.out + r.err
    assert _verify(artifact, bundle).code == 0


def test_root_from_an_expired_copy_is_refused(tmp_path: Path, repo: TufRepo, tuf_root: Path) -> None:
    repo.expires["timestamp"] = datetime.now(UTC) - timedelta(hours=1)
    repo.publish(roles=("timestamp",))
    r = cli("trust-root", "update", "--root-from", str(repo.dir), "--tuf-root", str(tuf_root))
    assert r.code == 2 and "ExpiredMetadataError" in r.err, r.err


def _policy(tmp_path: Path, root: Path | None, max_age: str) -> Path:
    trust: dict[str, Any] = {"signers": [{"identity": IDENTITY, "issuer": ISSUER}], "rootMaxAge": max_age}
    if root is not None:
        trust["trustedRoots"] = [{"path": str(root)}]
    path = tmp_path / "policy.json"
    path.write_text(json.dumps({"version": 1, "mode": "enforce", "trust": trust}))
    return path


@pytest.mark.parametrize(("max_age", "code"), [("1d", 2), ("36500d", 0)])
def test_root_max_age_refuses_a_root_older_than_the_limit(tmp_path: Path, sigstore: testsigstore.TestSigstore,
                                                         max_age: str, code: int) -> None:
    """A file root's age counts from its newest validFor.start (the test instance's: 2025-01-01)."""
    artifact, bundle = _bundle(tmp_path, sigstore)
    root = sigstore.write_trusted_root(tmp_path / "root.json")
    r = _verify(artifact, bundle, "--policy", str(_policy(tmp_path, root, max_age)))
    assert r.code == code, r.out + r.err
    if code == 2:
        assert "over policy trust.rootMaxAge 1d" in r.err and "days" in r.err and "2025-01-01" in r.err


def test_root_max_age_counts_from_the_tuf_update_for_a_refreshed_root(
        tmp_path: Path, repo: TufRepo, tuf_root: Path, sigstore: testsigstore.TestSigstore) -> None:
    """The same content, refreshed over TUF a moment ago: young enough for a one-day limit."""
    artifact, bundle = _bundle(tmp_path, sigstore)
    assert cli("trust-root", "update", "--root-from", str(repo.dir), "--tuf-root", str(tuf_root)).code == 0
    assert _verify(artifact, bundle, "--policy", str(_policy(tmp_path, None, "1d"))).code == 0
    r = _verify(artifact, bundle, "--policy", str(_policy(tmp_path, None, "1m")), "--no-cache")
    assert r.code == 0 or "over policy trust.rootMaxAge 1m" in r.err  # a minute may pass on a slow machine


def test_root_max_age_bounds_the_embedded_root_too(tmp_path: Path, sigstore: testsigstore.TestSigstore) -> None:
    """The public-good root embedded in the sigstore package never updates by itself: with a limit it
    is refused once older than that, naming the age and the limit, until `trust-root update` runs."""
    artifact, bundle = _bundle(tmp_path, sigstore)
    r = _verify(artifact, bundle, "--policy", str(_policy(tmp_path, None, "1d")))
    assert r.code == 2 and "production (embedded in sigstore" in r.err and "rootMaxAge 1d" in r.err, r.err
