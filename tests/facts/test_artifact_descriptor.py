"""An ``Artifact`` owns one file descriptor (issue 35, item 3: no descriptor owner is a value ``Record``):
closed on every path — a ``with`` block's end, an exception inside it, an ``open`` that refuses the file,
an admission or verification that raises — closed exactly once (a second ``close`` must not close the
file that reuses the number), never duplicated by a copy or a pickle, and left open where a caller lent
it. Descriptors are counted in /proc/self/fd (Linux), real files, real FIFOs and symlinks."""

from __future__ import annotations

import copy
import os
import pickle
from pathlib import Path
from typing import Any

import pytest

import atip_trust
from atip_trust._base.record import Record
from atip_trust.errors import AtipTrustError
from atip_trust.facts.artifact import Artifact

from world import World

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts descriptors in /proc/self/fd")

SIGNED = b"#!/bin/sh\necho signed\n"


def open_fds() -> set[int]:
    """The descriptors open now (the listing's own descriptor, closed once it is read, left out)."""
    found = set()
    for name in os.listdir("/proc/self/fd"):
        try:
            os.fstat(int(name))
        except OSError:
            continue
        found.add(int(name))
    return found


@pytest.fixture
def tool(tmp_path: Path) -> Path:
    p = tmp_path / "tool"
    p.write_bytes(b"#!/bin/sh\necho hi\n")
    p.chmod(0o755)
    return p


def test_a_with_block_closes_it_on_success_and_on_an_exception(tool: Path) -> None:
    before = open_fds()
    with Artifact.open(str(tool)) as art:
        assert art.fd in open_fds() - before
        art.sha256  # noqa: B018 - hashing reads through the same descriptor
    assert art.fd == -1 and open_fds() == before
    with pytest.raises(RuntimeError), Artifact.open(str(tool)) as art:
        raise RuntimeError("boom")
    assert art.fd == -1 and open_fds() == before


def test_a_second_close_does_not_close_the_file_that_reuses_the_number(tool: Path, tmp_path: Path) -> None:
    """The attack: close twice after the number was handed out again (an audit log, a bundle)."""
    art = Artifact.open(str(tool))
    number = art.fd
    art.close()
    other = os.open(tmp_path / "other", os.O_CREAT | os.O_RDWR, 0o600)
    try:
        assert other == number  # the lowest free number: the one just released
        art.close()
        os.fstat(other)  # still open: the second close did nothing
        assert "closed" in repr(art)
    finally:
        os.close(other)


def test_an_open_that_refuses_the_file_leaves_no_descriptor(tmp_path: Path, tool: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    link = tmp_path / "link"
    link.symlink_to(tool)
    before = open_fds()
    for target in (tmp_path, fifo, tmp_path / "missing"):
        with pytest.raises(AtipTrustError):
            Artifact.open(str(target))
    with pytest.raises(AtipTrustError):
        Artifact.open(str(link), resolved=True)  # the last component is never followed
    assert open_fds() == before


def test_it_cannot_be_copied_or_pickled_and_is_equal_only_to_itself(tool: Path) -> None:
    with Artifact.open(str(tool)) as art, Artifact.open(str(tool)) as again:
        for duplicate in (copy.copy, copy.deepcopy, pickle.dumps):
            with pytest.raises(TypeError, match="owns its file descriptor"):
                duplicate(art)
        assert art == art and art != again and len({art, again}) == 2
        assert not isinstance(art, Record)  # a resource owner, no value


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    w = World(tmp_path_factory.mktemp("fds"), seed=3535)
    return {"tool": w.tool("signed", SIGNED), "bundle": w.bundle("signed.sigstore.json", SIGNED),
            "policy": atip_trust.load_policy(w.policy_file(permissions={"allow": ["signed *"]}), managed=False),
            "dir": w.dir}


def test_admit_and_verify_close_what_they_open_whether_they_answer_or_raise(world) -> None:
    bad = Path(world["dir"]) / "bad.sigstore.json"
    bad.write_text("{not json")
    before = open_fds()
    adm = atip_trust.admit(world["tool"], policy=world["policy"], command="status", bundles=[world["bundle"]],
                           audit=False, cache=False)
    assert adm.behavior == "allow"
    assert open_fds() == before
    with pytest.raises(AtipTrustError):
        atip_trust.verify(world["tool"], bundles=[str(bad)], options=atip_trust.VerifyOptions(cache=False))
    assert open_fds() == before
    with atip_trust.HeldTool.open(world["tool"], policy=world["policy"], bundles=[world["bundle"]],
                                  audit=False, cache=False) as held:
        assert held.admit("status").behavior == "allow"
    assert open_fds() == before


def test_an_artifact_lent_to_admit_stays_open_for_its_owner(world) -> None:
    with Artifact.open(world["tool"]) as art:
        adm = atip_trust.admit(art, policy=world["policy"], command="status", bundles=[world["bundle"]],
                               audit=False, cache=False)
        assert adm.behavior == "allow"
        os.fstat(art.fd)  # the caller's descriptor, still open: exec_fd runs these bytes
        assert art.exec_fd() == art.fd
    assert art.fd == -1
