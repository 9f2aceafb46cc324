"""The README's commands fit on a screen and still run as written (issue 35, item 7): each long command is
broken with continuation lines, each block is bash syntax, and the main job, read as bash joins it, is the
command the README promises (`allow`, exit 0). A continuation that lost its backslash would leave the
flags on a line of their own: a second command, and a main job without its signer."""

from __future__ import annotations

import subprocess

import pytest

from readme_commands import README, joined, readme_main_job, sh_blocks
from verify_helpers import cli

#: A README command line wider than this is broken with a continuation (a backslash at its end).
SCREEN = 110


def test_every_readme_command_block_is_bash_syntax() -> None:
    blocks = sh_blocks()
    assert len(blocks) >= 2, "the README lost its set-up or test command"
    for block in blocks:
        parsed = subprocess.run(["bash", "-n"], input=block, capture_output=True, text=True, timeout=30)
        assert parsed.returncode == 0, block + "\n" + parsed.stderr


def test_no_readme_command_line_is_wider_than_a_screen_unless_it_is_one_word() -> None:
    """Only a word that cannot be broken (a URL) may stand alone on a longer line."""
    for block in sh_blocks():
        for line in block.splitlines():
            words = line.removesuffix("\\").split()
            assert len(line) <= SCREEN or len(words) == 1, f"{len(line)} characters: {line}"


def test_a_continuation_is_joined_as_bash_joins_it() -> None:
    """The pair ends the word before it only where a blank separates them, as in bash."""
    assert joined("a \\\n  --b c \\\n  d\ne") == ["a --b c d", "e"]
    assert joined("a\\\nb") == ["ab"]


def test_the_readme_main_job_as_written_allows_the_shipped_tool() -> None:
    argv = readme_main_job()
    assert "--certificate-identity" in argv and "--min-slsa-level" in argv, argv
    r = cli(*argv, "--format", "json", cwd=README.parent)
    assert r.code == 0, r.out + r.err
    assert r.json["decision"]["behavior"] == "allow"


@pytest.mark.parametrize("cut", ["--certificate-identity", "--certificate-oidc-issuer"])
def test_a_main_job_that_lost_a_continuation_is_not_the_command_that_allows(cut: str) -> None:
    """A backslash dropped before ``cut``: the job ends there and the signer the policy needs is gone."""
    argv = readme_main_job()
    r = cli(*argv[:argv.index(cut)], "--format", "json", cwd=README.parent)
    assert r.code != 0 and r.json["decision"]["behavior"] != "allow", r.out + r.err
