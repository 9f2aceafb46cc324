"""The README's test command is the fast default suite and `.ci/run` runs exactly it first, then the slow
tests, then lint (ruff, mypy), then the benches (issue 35): a README that drifts from CI, or a CI that
drops a step, fails here."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from readme_commands import joined, sh_blocks

ROOT = Path(__file__).resolve().parents[2]


def readme_test_command() -> str:
    """The first sh block of "Run the tests", its continuation lines joined (tests/readme_commands.py)."""
    blocks = sh_blocks("## Run the tests")
    assert blocks, "README's 'Run the tests' has no sh block"
    (command,) = joined(blocks[0])
    return command


def test_the_readme_command_runs_the_default_suite_on_every_core() -> None:
    command = readme_test_command()
    assert "-n auto" in command and "pytest" in command
    assert not re.search(r"-m pytest .*-m ", command)  # the default selection: pyproject's addopts


def test_ci_runs_the_readme_command_then_slow_then_lint_then_bench() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    run = ci[ci.index("\nstep "):]  # the steps, after the comments and the step function
    steps = [run.index(readme_test_command()), run.index("-m slow"), run.index("ruff check"),
             run.index("mypy"), run.index("-m bench")]
    assert steps == sorted(steps), steps
    assert "CI=true" in ci and "< /dev/null" in ci
    assert re.search(r'"\$rc" -eq 5', ci), "pytest's exit 5 (no tests collected) must fail the run"


def test_the_default_run_leaves_out_slow_and_bench_and_refuses_unknown_markers() -> None:
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert "-m 'not bench and not slow'" in options["addopts"]
    assert "--strict-markers" in options["addopts"]
    declared = {m.split(":", 1)[0] for m in options["markers"]}
    assert {"slow", "bench"} <= declared
