"""What a cache hit keeps between two calls in one process beyond the verdict memo itself (the opened
cache, the trusted root object, resolved paths), and the changes each must still see on the next call."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

from atip_trust.admission.verdict_key import open_cache
from atip_trust.facts.artifact import resolve
from atip_trust.signature.trustroot import TrustRoot

import testsigstore


def test_a_cache_directory_changed_between_two_calls_in_one_process_is_the_one_used(
        tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("ATIP_CACHE_DIR", str(tmp_path / "one"))
    first = open_cache(True)
    monkeypatch.setenv("ATIP_CACHE_DIR", str(tmp_path / "two"))
    second = open_cache(True)
    assert first is not None and second is not None
    assert (first.where, second.where) == (str(tmp_path / "one"), str(tmp_path / "two"))
    assert open_cache(False) is None


def test_a_trusted_root_replaced_in_place_between_two_reads_in_one_process_is_read_again(
        tmp_path: Path, settle: Callable[[], None]) -> None:
    root = tmp_path / "trusted_root.json"
    testsigstore.TestSigstore(seed=41).write_trusted_root(root)
    root.write_text(json.dumps(json.loads(root.read_text()), indent=2))
    other = testsigstore.TestSigstore(seed=42).write_trusted_root(tmp_path / "other.json")
    settle()  # past RACY_NS (_base/statmemo.py): only a settled file is remembered
    first = TrustRoot.from_file(str(root), deferred=True)
    assert TrustRoot.from_file(str(root), deferred=True) is first  # remembered while unchanged
    # Same size, same mtime: only the ctime (which nobody can set back) tells.
    st = root.stat()
    compact = json.dumps(json.loads(other.read_text()), separators=(",", ":")).encode()
    assert len(compact) <= st.st_size
    root.write_bytes(compact + b" " * (st.st_size - len(compact)))
    os.utime(root, ns=(st.st_atime_ns, st.st_mtime_ns))
    again = TrustRoot.from_file(str(root), deferred=True)
    assert again.digest != first.digest
    assert again.raw == root.read_bytes()


def test_a_tool_path_turned_into_a_symlink_between_two_calls_in_one_process_is_resolved_again(
        tmp_path: Path) -> None:
    tool = tmp_path / "tool"
    tool.write_bytes(b"#!/bin/sh\n")
    real = tmp_path / "real"
    real.write_bytes(b"#!/bin/sh\necho real\n")
    assert resolve(str(tool)) == str(tool)
    tool.unlink()
    tool.symlink_to(real)
    assert resolve(str(tool)) == str(real)
