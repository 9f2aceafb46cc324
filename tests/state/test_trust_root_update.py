"""``atip-trust trust-root update`` over TUF (state/tufroot.py, python-tuf) against a TUF repository made with
python-tuf's Metadata API (fixtures/tufrepo.py) and served on 127.0.0.1 (pytest-httpserver); ``--root-from``
for a copied repository; policy ``trust.rootMaxAge``.

The attacks python-tuf's client refuses, each as exit 2 that leaves the last verified root in place:
rollback, freeze, expiry, a signature threshold not met, mix-and-match, oversized metadata.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pytest_httpserver import HTTPServer

from atip_trust.state import tufroot

import testsigstore
import tuf_world
from tufrepo import TufRepo
from verify_helpers import Run, cli

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
    return tuf_world.published_repo(tmp_path / "repo", sigstore)


@pytest.fixture
def served(httpserver: HTTPServer, repo: TufRepo) -> str:
    return tuf_world.serve(httpserver, repo)


@pytest.fixture
def tuf_root(tmp_path: Path, repo: TufRepo) -> Path:
    return tuf_world.first_root(tmp_path, repo)


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


@pytest.fixture
def shipped(monkeypatch: pytest.MonkeyPatch, served: str, repo: TufRepo) -> str:
    """The public-good repository is the served test repository, and the TUF root "shipped with the
    package" is its first root (in-process, as load.standard_org_policy_path is replaced): the only way
    a test can sign metadata the shipped root vouches for."""
    monkeypatch.setitem(tufroot.INSTANCE_URLS, "production", served)
    first = repo.root_bytes(1)
    monkeypatch.setattr(tufroot, "shipped_tuf_root", lambda url: first if url.rstrip("/") == served else None)
    tufroot._VERIFIED.clear()
    return served


def test_public_good_update_from_the_shipped_root_becomes_the_root_verify_uses(
        tmp_path: Path, shipped: str, sigstore: testsigstore.TestSigstore) -> None:
    """The public-good store, updated from the shipped root, is verified again from it on use."""
    artifact, bundle = _bundle(tmp_path, sigstore)
    assert _verify(artifact, bundle).code == 1  # the embedded public-good root does not know this instance
    r = cli("trust-root", "update", "--format", "json")
    assert r.code == 0 and r.json["url"] == shipped, r.out + r.err
    assert _verify(artifact, bundle).code == 0
    assert tufroot.why_not(shipped) is None


def test_root_from_a_copied_custom_repository_is_a_root_the_policy_may_name(
        tmp_path: Path, repo: TufRepo, tuf_root: Path, sigstore: testsigstore.TestSigstore) -> None:
    """Air-gapped: a custom repository copied to a folder, verified as a download would be, stored in
    its URL's slot; it is an anchor only where named (--trusted-root, trust.trustedRoots)."""
    artifact, bundle = _bundle(tmp_path, sigstore)
    url = "https://tuf.example.org"
    r = cli("trust-root", "update", "--url", url, "--root-from", str(repo.dir), "--tuf-root", str(tuf_root),
            "--format", "json")
    assert r.code == 0 and r.json["url"] == url, r.out + r.err
    assert _verify(artifact, bundle).code == 1  # not the public-good root: nothing verifies with it unnamed
    assert _verify(artifact, bundle, "--trusted-root", r.json["path"]).code == 0


@pytest.mark.parametrize("flags", [["--tuf-root", "T"], ["--root-from", "R"], ["--root-from", "R", "--tuf-root", "T"],
                                   ["--staging", "--tuf-root", "T"]])
def test_attack_tuf_root_or_root_from_cannot_start_the_public_good_store(
        tmp_path: Path, repo: TufRepo, tuf_root: Path, sigstore: testsigstore.TestSigstore, flags: list[str]) -> None:
    """Issue 33: `--tuf-root X --root-from Y` started the public-good store from any TUF root (and said it
    was verified from the public-good repository); a bundle from that instance then verified."""
    argv = [{"T": str(tuf_root), "R": str(repo.dir)}.get(f, f) for f in flags]
    r = cli("trust-root", "update", *argv)
    assert r.code == 2 and "shipped with the package" in r.err and "--url" in r.err, r.out + r.err
    assert "verified" not in r.out
    for url in tufroot.INSTANCE_URLS.values():
        assert not Path(tufroot.store_dir(url)).exists()
    artifact, bundle = _bundle(tmp_path, sigstore)
    assert _verify(artifact, bundle).code == 1


def _plant(url: str, root: bytes, *, metadata_from: Path | None = None) -> Path:
    """What an attacker writes into the user's cache: a trusted_root.json and a verified.json naming its
    digest (and, optionally, a real store's metadata beside them)."""
    folder = Path(tufroot.store_dir(url))
    if metadata_from is not None:
        shutil.copytree(metadata_from / "metadata", folder / "metadata", symlinks=True, dirs_exist_ok=True)
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    (folder / "trusted_root.json").write_bytes(root)
    (folder / "verified.json").write_text(json.dumps({
        "url": url, "path": str(folder / "trusted_root.json"), "digest": "sha256:" + hashlib.sha256(root).hexdigest(),
        "verified_at": datetime.now(UTC).isoformat()}))
    for f in folder.rglob("*"):
        if f.is_file() and not f.is_symlink():
            f.chmod(0o600)
    return folder


def test_attack_a_planted_public_good_root_with_its_record_does_not_verify(
        tmp_path: Path, sigstore: testsigstore.TestSigstore) -> None:
    """Issue 33: an attacker's trusted_root.json beside a verified.json naming its digest was believed;
    a bundle from the attacker's CA for the org's own identity became VERIFIED."""
    artifact, bundle = _bundle(tmp_path, sigstore)
    _plant(tufroot.PRODUCTION_URL, json.dumps(sigstore.trusted_root()).encode())
    r = _verify(artifact, bundle)
    assert r.code == 1, r.out + r.err
    assert r.json["trusted_root"]["name"].startswith("production (embedded"), r.json["trusted_root"]
    why = tufroot.why_not(tufroot.PRODUCTION_URL) or ""
    assert "the TUF store" in why and "timestamp.json not found" in why, why


def test_doctor_warns_about_a_store_that_is_not_used(tmp_path: Path, sigstore: testsigstore.TestSigstore) -> None:
    from atip_trust.cli.cmd_doctor import trusted_root

    assert not [f for f in trusted_root(None) if "TUF store" in f.message]
    folder = _plant(tufroot.PRODUCTION_URL, json.dumps(sigstore.trusted_root()).encode())
    (warning,) = [f for f in trusted_root(None) if "TUF store" in f.message]
    assert warning.status == "warning" and warning.path == str(folder), warning
    assert "the production TUF store is not used" in warning.message and "shipped with the sigstore package" in warning.message


def test_attack_a_planted_root_beside_real_metadata_does_not_verify(
        tmp_path: Path, shipped: str, repo: TufRepo, sigstore: testsigstore.TestSigstore) -> None:
    """The store's metadata is real (a real update ran), only the root and its record are the attacker's:
    the targets metadata names other bytes."""
    assert cli("trust-root", "update").code == 0
    other = testsigstore.TestSigstore(seed=61, name="attacker")
    artifact = tmp_path / "tool"
    artifact.write_bytes(DATA)
    bundle = tmp_path / "evil.sigstore.json"
    bundle.write_text(json.dumps(other.sign_artifact(DATA, identity=IDENTITY, issuer=ISSUER)))
    store = Path(tufroot.store_dir(shipped))
    _plant(shipped, json.dumps(other.trusted_root()).encode())
    tufroot._VERIFIED.clear()
    r = _verify(artifact, bundle)
    assert r.code == 1, r.out + r.err
    assert "LengthOrHashMismatchError" in (tufroot.why_not(shipped) or ""), tufroot.why_not(shipped)
    assert (store / "metadata" / "timestamp.json").is_file()


def test_attack_a_planted_root_version_signed_by_the_attacker_does_not_verify(
        tmp_path: Path, shipped: str, repo: TufRepo, sigstore: testsigstore.TestSigstore) -> None:
    """A whole planted repository: the attacker's own TUF root as version 2 in root_history, its own
    timestamp, snapshot and targets naming its trusted root. Version 2 is not signed by version 1's keys."""
    other = testsigstore.TestSigstore(seed=62, name="attacker")
    evil_root = json.dumps(other.trusted_root()).encode()
    evil = TufRepo(tmp_path / "evil", evil_root)
    evil.publish()
    evil.publish()  # root version 2 of the attacker's repository, signed by its own keys only
    folder = _plant(shipped, evil_root)
    meta = folder / "metadata"
    (meta / "root_history").mkdir(parents=True, exist_ok=True)
    for n in (1, 2):
        if (evil.dir / f"{n}.root.json").exists():
            (meta / "root_history" / f"{n + 1}.root.json").write_bytes(evil.root_bytes(n))
    (meta / "timestamp.json").write_bytes((evil.dir / "timestamp.json").read_bytes())
    for role in ("snapshot", "targets"):
        newest = max(evil.dir.glob(f"*.{role}.json"), key=lambda p: int(p.name.split(".")[0]))
        (meta / f"{role}.json").write_bytes(newest.read_bytes())
    artifact = tmp_path / "tool"
    artifact.write_bytes(DATA)
    bundle = tmp_path / "evil.sigstore.json"
    bundle.write_text(json.dumps(other.sign_artifact(DATA, identity=IDENTITY, issuer=ISSUER)))
    r = _verify(artifact, bundle)
    assert r.code == 1, r.out + r.err
    assert "does not verify from the TUF root shipped" in (tufroot.why_not(shipped) or "")


def test_attack_a_store_file_others_can_write_is_not_used(
        tmp_path: Path, shipped: str, sigstore: testsigstore.TestSigstore) -> None:
    """A stored root is checked for owner and mode like the org's files."""
    assert cli("trust-root", "update").code == 0
    store = Path(tufroot.store_dir(shipped))
    (store / "metadata" / "timestamp.json").chmod(0o666)
    tufroot._VERIFIED.clear()
    artifact, bundle = _bundle(tmp_path, sigstore)
    assert _verify(artifact, bundle).code == 1
    assert "writable by group or others" in (tufroot.why_not(shipped) or ""), tufroot.why_not(shipped)


def test_an_expired_store_is_not_used(tmp_path: Path, shipped: str, repo: TufRepo,
                                      sigstore: testsigstore.TestSigstore, monkeypatch: pytest.MonkeyPatch) -> None:
    """Freeze, offline: metadata that expired since the update is not an anchor (the shipped root is)."""
    assert cli("trust-root", "update").code == 0
    assert tufroot.why_not(shipped) is None
    later = datetime.now(UTC) + timedelta(days=60)  # past every role's 30 days
    import tuf.ngclient._internal.trusted_metadata_set as tms

    class Later(datetime):
        @classmethod
        def now(cls, tz: Any = None) -> datetime:  # type: ignore[override]
            return later

    monkeypatch.setattr(tms.datetime, "datetime", Later)
    tufroot._VERIFIED.clear()
    assert "ExpiredMetadataError" in (tufroot.why_not(shipped) or ""), tufroot.why_not(shipped)


def test_root_from_an_expired_copy_is_refused(tmp_path: Path, repo: TufRepo, tuf_root: Path) -> None:
    repo.expires["timestamp"] = datetime.now(UTC) - timedelta(hours=1)
    repo.publish(roles=("timestamp",))
    r = cli("trust-root", "update", "--url", "https://tuf.example.org", "--root-from", str(repo.dir),
            "--tuf-root", str(tuf_root))
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
        tmp_path: Path, shipped: str, sigstore: testsigstore.TestSigstore) -> None:
    """The same content, refreshed over TUF a moment ago: young enough for a one-day limit."""
    artifact, bundle = _bundle(tmp_path, sigstore)
    assert cli("trust-root", "update").code == 0
    assert _verify(artifact, bundle, "--policy", str(_policy(tmp_path, None, "1d"))).code == 0
    r = _verify(artifact, bundle, "--policy", str(_policy(tmp_path, None, "1m")), "--no-cache")
    assert r.code == 0 or "over policy trust.rootMaxAge 1m" in r.err  # a minute may pass on a slow machine


def test_root_max_age_bounds_the_embedded_root_too(tmp_path: Path, sigstore: testsigstore.TestSigstore) -> None:
    """The public-good root embedded in the sigstore package never updates by itself: with a limit it
    is refused once older than that, naming the age and the limit, until `trust-root update` runs."""
    artifact, bundle = _bundle(tmp_path, sigstore)
    r = _verify(artifact, bundle, "--policy", str(_policy(tmp_path, None, "1d")))
    assert r.code == 2 and "production (embedded in sigstore" in r.err and "rootMaxAge 1d" in r.err, r.err
