"""Bash is the oracle for the words too: whenever the shell model says a program gets literal words, bash
must run that program with exactly those words.

A word the grammar drops, splits or joins differently from bash is a word the policy's rules never saw: a
deny rule on ``--force`` would not match ``gh pr merge < /dev/null --force`` if the grammar read
``--force`` as a second redirection target (it did). Hypothesis draws lines of quoting, blanks,
operators, redirections and expansions around a program ``P`` that records its argv; bash runs each line
the model reads as literal.
"""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from atip_trust.agents.shell_model import Unprovable, programs

from world import World

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell lines")

PIECES = [*" \t;&|()<>{}[]*?~$`'\"\\#=!%^,.:-_/", "x", "y", "--force", "{}", "\\\n", "\n", "2>&1", "2>/dev/null",
          "< /dev/null", "> /dev/null", ">&2", "<<< w", "&>/dev/null", "'a b'", '"c d"', "$'e'", "\\ ", "# c",
          "2>&-", "<&-", "3<&0"]
FORMS = ["P {}", "P a {} b", "P {} --force", "env P {}", "P{}", "nice P {}", "P -- {}"]
#: Lines the grammar once read differently from bash (each hid or invented a word or a command).
KNOWN = ["gh pr merge < /dev/null --force", "P -^<& --force", "P -2>&1^%", "P < /dev/null>$ --force",
         "ls\n\\P evil", "P {\t{&_", "P a -<$ b", "P /{\\?  --force", "P <<< w'a b'\\- --force", "P $ --force",
         "P a y=~ b", "P 2>&- x", "tee f < /dev/null\n\\P evil"]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    w = World(tmp_path_factory.mktemp("argv"), root=None)  # bash and a printer: nothing is verified here
    (w.dir / "out").mkdir()
    # One file per run of P: how many words, then each word, each ended by NUL (a word may hold any
    # other byte).
    w.tool("bin/P", f'#!/bin/sh\n{{ printf "%s\\0" "$#"; [ "$#" -eq 0 ] || printf "%s\\0" "$@"; }} '
                    f'> "{w.dir}/out/$$"\n')
    return w.dir


def bash_argvs(world: Path, line: str) -> list[tuple[str, ...]]:
    """The argv (after P) of every run of P when bash runs ``line`` (background jobs waited for)."""
    for old in (world / "out").iterdir():
        old.unlink()
    subprocess.run(["/bin/bash", "-c", line + "\nwait"], cwd=world, env={"PATH": f"{world}/bin:/usr/bin:/bin"},
                   stdin=subprocess.DEVNULL, capture_output=True, timeout=20, check=False)
    runs = [f.read_bytes().decode("utf-8", "surrogateescape") for f in (world / "out").iterdir()]
    return sorted(tuple(r.split("\0")[1:-1]) for r in runs)


def check(world: Path, line: str) -> bool:
    """True when the model read the line (literal words for P); then bash must agree."""
    try:
        found = [p for p in programs(line) if p.argv[0] == "P"]
    except Unprovable:
        return False
    if not found or not all(p.literal for p in found):
        return False
    got = bash_argvs(world, line)
    if got:  # bash may not run P at all (a failed redirection, a syntax error of its own)
        assert got == sorted(p.argv[1:] for p in found), (line, got)
    return True


@pytest.mark.parametrize("line", KNOWN)
def test_lines_the_grammar_once_misread_are_refused_or_read_as_bash_does(world: Path, line: str) -> None:
    check(world, line)


@pytest.mark.slow
def test_bash_runs_exactly_the_words_the_model_read(world: Path) -> None:
    seen = {"read": 0}

    @settings(max_examples=1500, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(st.randoms(use_true_random=False))
    def one(rng: random.Random) -> None:
        junk = "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 7)))
        if check(world, rng.choice(FORMS).replace("{}", junk)):
            seen["read"] += 1

    one()
    assert seen["read"] >= 300, seen  # enough lines read for the comparison to mean something
