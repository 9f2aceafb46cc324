"""The local registry ``registry.json`` (RFC §4.3): a name -> digest index that notices a changed binary
(re-hashing only when the file's identity changed), survives concurrent writers (flock + atomic
replace) and refuses an index it cannot trust instead of reading it as empty."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from atip_trust.errors import AtipTrustError, MalformedInputError
from atip_trust.registry import LocalRegistry


def _tool(path: Path, body: bytes) -> Path:
    path.write_bytes(body)
    path.chmod(0o755)
    return path


def test_lookup_trusts_the_recorded_digest_only_while_the_file_identity_is_unchanged(
        tmp_path: Path, settle: Callable[[], None]) -> None:
    tool = _tool(tmp_path / "gh", b"#!/bin/sh\necho v1\n")
    settle()  # past the same-timestamp window (conftest.py): the digest may be taken on trust
    reg = LocalRegistry(tmp_path / "registry.json")
    added = reg.put("gh", tool)
    assert str(added.digest) == "sha256:" + hashlib.sha256(b"#!/bin/sh\necho v1\n").hexdigest()

    same = reg.get("gh")
    assert same is not None and not same.rehashed and not same.changed

    tool.write_bytes(b"#!/bin/sh\necho v2\n")  # same size, new bytes: mtime/ctime move
    edited = reg.get("gh")
    assert edited is not None and edited.rehashed and edited.changed
    assert str(edited.current) == "sha256:" + hashlib.sha256(b"#!/bin/sh\necho v2\n").hexdigest()

    tool.unlink()
    gone = reg.get("gh")
    assert gone is not None and gone.changed and gone.current is None
    assert reg.get("nope") is None


def test_a_file_added_right_after_it_changed_is_hashed_on_every_lookup(tmp_path: Path) -> None:
    # Within the racy window the identity may not move with the bytes: nothing is taken on trust.
    tool = _tool(tmp_path / "fresh", b"#!/bin/sh\necho fresh\n")
    reg = LocalRegistry(tmp_path / "registry.json")
    reg.put("fresh", tool)
    entry = reg.get("fresh")
    assert entry is not None and entry.rehashed and not entry.changed


def test_index_follows_the_rfc_shape_and_is_private(tmp_path: Path) -> None:
    tool = _tool(tmp_path / "curl", b"#!/bin/sh\necho curl\n")
    reg = LocalRegistry(tmp_path / "state" / "registry.json")
    reg.put("curl", tool, source="shim", shim_registry="https://shims.example.org")
    doc = json.loads(reg.path.read_text())
    assert doc["version"] == "2" and "updated" in doc
    assert doc["tools"]["curl"]["hash"].startswith("sha256:")
    assert doc["tools"]["curl"]["source"] == "shim"
    assert doc["tools"]["curl"]["shimRegistry"] == "https://shims.example.org"
    assert stat.S_IMODE(reg.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(reg.path.parent.stat().st_mode) == 0o700
    assert reg.remove("curl") and not reg.remove("curl") and reg.names() == []


WRITER = """
import sys
from atip_trust.registry import LocalRegistry
reg = LocalRegistry(sys.argv[1])
for i in range(int(sys.argv[3])):
    reg.put(f"{sys.argv[2]}-{i}", sys.argv[4])
"""


def test_concurrent_writers_lose_no_update_and_readers_never_see_half_an_index(tmp_path: Path) -> None:
    tool = _tool(tmp_path / "t", b"#!/bin/sh\n")
    index = tmp_path / "registry.json"
    writers, each = 6, 8
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(index), f"w{n}", str(each), str(tool)],
                              stdin=subprocess.DEVNULL)
             for n in range(writers)]
    reg = LocalRegistry(index)
    reads = 0
    try:
        while any(p.poll() is None for p in procs):
            if index.exists():
                reg.names()  # raises MalformedInputError on a torn file
                reads += 1
    finally:
        for p in procs:
            p.wait(timeout=60)
    assert all(p.returncode == 0 for p in procs)
    assert len(reg.names()) == writers * each
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".registry-")]


def test_an_index_others_can_write_or_that_is_malformed_is_refused_not_replaced(tmp_path: Path) -> None:
    tool = _tool(tmp_path / "t", b"#!/bin/sh\n")
    index = tmp_path / "registry.json"
    reg = LocalRegistry(index)
    reg.put("keep", tool)
    os.chmod(index, 0o666)
    with pytest.raises(AtipTrustError, match="writable by group or others"):
        reg.get("keep")
    os.chmod(index, 0o600)
    index.write_text('{"version": "2", "tools": []}')
    with pytest.raises(MalformedInputError, match="not an RFC §4.3 index"):
        reg.put("new", tool)
    assert index.read_text() == '{"version": "2", "tools": []}'  # not overwritten with one entry
