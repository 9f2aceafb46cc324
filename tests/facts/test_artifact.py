"""Artifacts are opened once, identified by fstat, hashed from that descriptor (docs/architecture.md principle 6)."""

from __future__ import annotations

import hashlib
import os
import signal
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from atip_trust.errors import (
    ArtifactAccessError,
    MalformedInputError,
    NotARegularFileError,
)
from atip_trust.facts.artifact import Artifact, FileIdentity, resolve
from atip_trust.facts.digest import Digest, hash_bytes, hash_fd


@pytest.fixture
def tool(tmp_path: Path) -> Path:
    p = tmp_path / "bin" / "mytool"
    p.parent.mkdir()
    p.write_bytes(b"#!/bin/sh\necho hello\n" + bytes(range(256)) * 9000)
    p.chmod(0o755)
    return p


@pytest.fixture
def alarm() -> Iterator[None]:
    """Fail instead of hanging if an open blocks."""

    def boom(signum: int, frame: object) -> None:
        raise TimeoutError("blocked")

    old = signal.signal(signal.SIGALRM, boom)
    signal.alarm(10)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def test_identity_records_what_fstat_says(tool: Path) -> None:
    st = os.stat(tool)
    with Artifact.open(tool) as art:
        assert art.path == str(tool.resolve())
        assert art.identity == FileIdentity(
            dev=st.st_dev,
            inode=st.st_ino,
            size=st.st_size,
            mtime_ns=st.st_mtime_ns,
            ctime_ns=st.st_ctime_ns,
            mode=st.st_mode,
            uid=st.st_uid,
            gid=st.st_gid,
        )


def test_sha256_and_sha512_in_one_pass_match_hashlib(tool: Path) -> None:
    data = tool.read_bytes()
    with Artifact.open(tool) as art:
        both = art.digests(("sha256", "sha512"))
    assert both["sha256"] == Digest("sha256", hashlib.sha256(data).digest())
    assert both["sha512"] == Digest("sha512", hashlib.sha512(data).digest())


def test_hashing_leaves_the_descriptor_offset_alone(tool: Path) -> None:
    with Artifact.open(tool) as art:
        first = art.sha256
        assert os.lseek(art.fd, 0, os.SEEK_CUR) == 0
        # Hashing again from the same descriptor gives the same answer (pread from offset 0).
        assert hash_fd(art.fd, ("sha256",), chunk=4096)["sha256"] == first


def test_small_chunks_give_the_same_digest(tmp_path: Path) -> None:
    small = tmp_path / "small"
    small.write_bytes(os.urandom(10_007))
    fd = os.open(small, os.O_RDONLY)
    try:
        expected = hash_bytes(small.read_bytes())
        assert hash_fd(fd, ("sha256",), chunk=7)["sha256"] == expected
        assert hash_fd(fd, ("sha256",), chunk=1)["sha256"] == expected
    finally:
        os.close(fd)


def test_bare_name_is_resolved_through_path_once(tool: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tool.parent))
    monkeypatch.chdir(tool.parent.parent)
    assert resolve("mytool") == str(tool.resolve())
    with Artifact.open("mytool") as art:
        assert art.path == str(tool.resolve())


def test_bare_name_not_on_path_is_an_access_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ArtifactAccessError, match="not found on PATH"):
        Artifact.open("no-such-tool-atip")


def test_symlink_is_resolved_to_its_target(tool: Path, tmp_path: Path) -> None:
    link = tmp_path / "link"
    link.symlink_to(tool)
    with Artifact.open(link) as art:
        assert art.path == str(tool.resolve())


def test_directory_is_not_a_regular_file(tmp_path: Path) -> None:
    with pytest.raises(NotARegularFileError, match="directory"):
        Artifact.open(tmp_path)


def test_fifo_is_refused_without_blocking(tmp_path: Path, alarm: None) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(NotARegularFileError, match="FIFO"):
        Artifact.open(fifo)


def test_missing_file_is_an_access_error(tmp_path: Path) -> None:
    with pytest.raises(ArtifactAccessError):
        Artifact.open(tmp_path / "missing")


def test_swapped_file_is_detected(tool: Path) -> None:
    with Artifact.open(tool) as art:
        assert art.unchanged()
        replacement = tool.with_name("evil")
        replacement.write_bytes(b"#!/bin/sh\nrm -rf ~\n")
        os.replace(replacement, tool)
        assert not art.unchanged()


def test_modified_file_is_detected(tool: Path) -> None:
    with Artifact.open(tool) as art:
        with tool.open("ab") as f:
            f.write(b"appended")
        assert not art.unchanged()


def test_close_is_idempotent(tool: Path) -> None:
    art = Artifact.open(tool)
    fd = art.fd
    art.close()
    art.close()
    assert art.fd == -1
    with pytest.raises(OSError):
        os.fstat(fd)


def test_descriptor_is_close_on_exec(tool: Path) -> None:
    with Artifact.open(tool) as art:
        assert not os.get_inheritable(art.fd)
        assert stat.S_ISREG(os.fstat(art.fd).st_mode)


# Digest value type -----------------------------------------------------------------------------

EMPTY = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def test_digest_text_form_round_trips() -> None:
    d = Digest.parse(f"sha256:{EMPTY}")
    assert str(d) == f"sha256:{EMPTY}"
    assert d == hash_bytes(b"")
    assert d.hex == EMPTY


@pytest.mark.parametrize(
    "text",
    [
        f"sha256:{EMPTY.upper()}",  # uppercase: one spelling per key
        f"sha256:{EMPTY[:-1]}",  # short
        f"sha256:{EMPTY}00",  # long
        f"sha1:{EMPTY[:40]}",  # unsupported algorithm
        f"SHA256:{EMPTY}",
        EMPTY,  # bare hex
        f"sha256: {EMPTY}",
        f"sha256:{EMPTY}\n",
    ],
)
def test_digest_parse_refuses_other_spellings(text: str) -> None:
    with pytest.raises(MalformedInputError):
        Digest.parse(text)


def test_digest_equality_needs_same_algorithm_and_bytes() -> None:
    a = hash_bytes(b"a")
    assert a == hash_bytes(b"a")
    assert a != hash_bytes(b"b")
    assert a != hash_bytes(b"a", "sha512")
    assert a != str(a)  # a digest is not its text form
    assert len({a, hash_bytes(b"a")}) == 1


def test_digest_refuses_wrong_length_bytes() -> None:
    with pytest.raises(MalformedInputError):
        Digest("sha256", b"\x00" * 31)


def test_overlapped_reads_give_the_same_digest(tmp_path: Path) -> None:
    # More than four chunks: hash_fd reads in a second thread while hashing (double buffering).
    data = os.urandom(100_003)
    f = tmp_path / "f"
    f.write_bytes(data)
    fd = os.open(f, os.O_RDONLY)
    try:
        got = hash_fd(fd, ("sha256", "sha512"), chunk=4096)
    finally:
        os.close(fd)
    assert got["sha256"] == hash_bytes(data, "sha256")
    assert got["sha512"] == hash_bytes(data, "sha512")


def test_read_error_in_the_reader_thread_is_mapped(tmp_path: Path) -> None:
    fd = os.open(tmp_path, os.O_RDONLY)  # a directory: st_size > 4 chunks of 1 byte, reads fail
    try:
        with pytest.raises(ArtifactAccessError, match="read failed at offset 0"):
            hash_fd(fd, chunk=1)
    finally:
        os.close(fd)
