"""A bare name is looked up on PATH only where the product says so, and a file named by the user is that file.

The warm paths now pass paths as text (docs/caching.md), where they used to pass a ``Path`` to mean
"this file, not a PATH name". An attacker who can put a ``tool`` on PATH (or in the working directory)
must not get the other one opened, hashed and decided on in place of the file meant: ``verify tool`` and a
file found by ``exec``/hooks are files, ``admit tool`` and ``hash tool`` are PATH names.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from atip_trust.admission.verify import subject_of
from atip_trust.execution.exec import locate
from atip_trust.facts.artifact import Artifact, resolve


@pytest.fixture
def two_tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """A ``tool`` in the working directory and another ``tool`` on PATH; their sha256 digests."""
    here, onpath = tmp_path / "here", tmp_path / "bin"
    here.mkdir()
    onpath.mkdir()
    (here / "tool").write_bytes(b"#!/bin/sh\necho the file in the working directory\n")
    (onpath / "tool").write_bytes(b"#!/bin/sh\necho the program on PATH\n")
    for p in (here / "tool", onpath / "tool"):
        p.chmod(0o755)
    monkeypatch.chdir(here)
    monkeypatch.setenv("PATH", str(onpath))
    return (hashlib.sha256((here / "tool").read_bytes()).hexdigest(),
            hashlib.sha256((onpath / "tool").read_bytes()).hexdigest())


def _sha(art: Artifact) -> str:
    with art:
        return art.digest().hex


def test_a_file_named_by_the_user_is_that_file_not_a_program_on_path(two_tools: tuple[str, str]) -> None:
    here, onpath = two_tools
    assert _sha(Artifact.open("tool", lookup=False)) == here
    assert resolve("tool", lookup=False) == os.path.realpath("tool")
    # verify ARTIFACT takes a file, as cosign verify-blob does
    subject = subject_of("tool")
    assert isinstance(subject, Artifact) and _sha(subject) == here


def test_a_bare_program_name_is_looked_up_on_path_and_never_in_the_working_directory(
        two_tools: tuple[str, str]) -> None:
    here, onpath = two_tools
    assert _sha(Artifact.open("tool")) == onpath
    assert _sha(Artifact.open(locate("tool"), lookup=False)) == onpath


def test_a_path_object_is_a_file_even_without_a_slash(two_tools: tuple[str, str]) -> None:
    """exec/hooks hand over what ``locate`` found; a ``Path`` (not a name) stays the file it names."""
    here, _ = two_tools
    found = locate(Path("tool"))
    assert found == "tool"
    assert _sha(Artifact.open(found, lookup=False)) == here


def test_an_artifact_opened_as_resolved_must_be_an_absolute_path(two_tools: tuple[str, str]) -> None:
    """``resolved=True`` skips the walk only for an absolute path; a bare name is still resolved (on PATH)."""
    _, onpath = two_tools
    assert _sha(Artifact.open("tool", resolved=True)) == onpath
