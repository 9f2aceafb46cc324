"""``write_atomic`` (_base/files.py) creates its temporary file itself, exclusively and 0600, without
tempfile (docs/adr/0001-start-up.md): a cache entry or a policy signature is never written through a
link someone planted at the target, is private, and leaves no temporary file behind."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from atip_trust._base.files import write_atomic


def test_an_atomic_write_replaces_a_planted_link_instead_of_writing_through_it(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_bytes(b"keep")
    target = tmp_path / "entry.json"
    target.symlink_to(victim)
    write_atomic(str(target), b"new")
    assert victim.read_bytes() == b"keep"
    assert not target.is_symlink() and target.read_bytes() == b"new"


def test_an_atomic_write_is_private_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / "entry.json"
    write_atomic(str(target), b"x")
    assert stat.S_IMODE(os.lstat(target).st_mode) == 0o600
    write_atomic(str(target), b"y", mode=0o644)
    assert stat.S_IMODE(os.lstat(target).st_mode) == 0o644 and target.read_bytes() == b"y"
    assert sorted(os.listdir(tmp_path)) == ["entry.json"]
