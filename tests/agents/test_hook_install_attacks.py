"""Attacks on ``atip-trust hook install``: a project's agent settings file is the project's to choose,
and a checked-out project may make it a link. Installing must not write outside the project through it,
nor create files through a link that points nowhere.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from atip_trust.cli.main import main

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX links")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    (tmp_path / "project" / ".claude").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "project")
    return tmp_path / "project"


def test_a_project_settings_link_out_of_the_project_is_not_written_through(
        project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A cloned repository ships ``.claude/settings.json -> ~/some/app.json``: ``--scope project``
    would merge a hook into the user's other file (and say it wrote the project's)."""
    victim = tmp_path / "home" / "app.json"
    victim.write_text('{"theme": "dark"}\n')
    os.symlink(victim, project / ".claude" / "settings.json")
    assert main(["hook", "install", "claude-code", "--scope", "project"]) == 2
    assert victim.read_text() == '{"theme": "dark"}\n'
    assert "outside the project" in capsys.readouterr().err


def test_a_settings_link_to_nothing_creates_nothing(project: Path, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """A dangling link would have install create the folders and the file wherever it points."""
    target = tmp_path / "home" / "nowhere" / "made.json"
    os.symlink(target, project / ".claude" / "settings.json")
    assert main(["hook", "install", "claude-code", "--settings", str(project / ".claude" / "settings.json")]) == 2
    assert not target.parent.exists()
    assert "does not exist" in capsys.readouterr().err


def test_a_dotfiles_link_inside_the_project_still_installs(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "shared.json").write_text("{}\n")
    os.symlink(project / "shared.json", project / ".claude" / "settings.json")
    assert main(["hook", "install", "claude-code", "--scope", "project"]) == 0
    assert "hooks" in (project / "shared.json").read_text()
