"""Bash is the oracle: no line the shell gate allows may run an unsigned program.

Hypothesis draws hostile lines from fixtures/shell_lines.py's grammar (runners fed by xargs, expansions
in a wrapper's operand, builtins that change lookup, files written then run, env's grammar, programs
that run programs); the gate judges each in-process, exactly as ``atip-trust hook`` does; every line it
allows is then run by real bash in a world whose unsigned programs append to a sentinel file, and whose
denied commands (``gh repo delete``, a force push) append to another: neither may ever be written.
``test_the_oracle_at_scale`` (``pytest -m slow``) draws ``ATIP_ORACLE_LINES`` lines (default 10,000 in
CI, which fits its time budget) from a seeded ``random.Random``; issue 32's measure is the same test with
``ATIP_ORACLE_LINES=100000``, run as root and as an unprivileged user (17 to 29 minutes each here).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shell_lines import ShellWorld, line, make_world

from atip_trust.agents.formats import HookRequest
from atip_trust.agents.hooks import Options, decide_command
from atip_trust.admission.admit import load_admission_policy
from atip_trust.admission.options import AdmitOptions
from atip_trust.policy.model import Policy

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell lines")
LINES = 2000
SLOW_LINES = int(os.environ.get("ATIP_ORACLE_LINES", "10000"))


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> tuple[ShellWorld, Policy]:
    world = make_world(tmp_path_factory.mktemp("oracle"))
    return world, load_admission_policy(str(world.policy))


def judge(world: ShellWorld, policy: Policy, text: str) -> str | None:
    verdict = decide_command(HookRequest("claude-code", "Bash", text, cwd=str(world.dir)), policy=policy,
                             options=Options(admit=AdmitOptions(audit=False), bundle_dir=str(world.bundles),
                                             path_env=world.env["PATH"]))
    return None if verdict is None else verdict.behavior


def run_in_bash(world: ShellWorld, text: str) -> bool:
    """True when bash ran an unsigned program for ``text`` (:func:`ran`)."""
    return ran(world, text)[0]


def ran(world: ShellWorld, text: str) -> tuple[bool, bool]:
    """Run ``text`` as an agent's shell would (its background jobs waited for, the whole process group
    killed if it outlives 20 s); whether an unsigned program ran, and whether a denied command did."""
    proc = subprocess.Popen(["/bin/bash", "-c", text + "\nwait"], cwd=world.dir, env=world.env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        pass
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
    try:
        return world.sentinel.exists(), world.denied is not None and world.denied.exists()
    finally:
        world.sentinel.unlink(missing_ok=True)
        world.reset()


def test_the_worlds_unsigned_programs_do_leave_the_sentinel(oracle: tuple[ShellWorld, Policy]) -> None:
    """The oracle can fail: these lines run an unsigned program, and the gate does not allow them."""
    world, policy = oracle
    for text in ("evil", "env evil", "echo evil | xargs env", "cp ./evil bin/tool; tool", "command ./[d]/evil",
                 "E=x; $E", "tool; ./evil"):
        assert run_in_bash(world, text.replace("E=x; $E", "$E")), text
        assert judge(world, policy, text) != "allow", text


def test_the_worlds_signed_tools_are_allowed(oracle: tuple[ShellWorld, Policy]) -> None:
    world, policy = oracle
    for text in ("tool pr list", "env tool x", "nice -n 1 tool", "bash -c 'tool pr'", "tool > /dev/null",
                 "timeout 5 env -- tool"):
        assert judge(world, policy, text) == "allow", text
        assert not run_in_bash(world, text), text


@pytest.mark.slow
def test_no_line_the_gate_allows_runs_an_unsigned_program(oracle: tuple[ShellWorld, Policy]) -> None:
    world, policy = oracle
    seen = {"lines": 0, "allowed": 0}
    escaped: list[str] = []

    @settings(max_examples=LINES, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(st.randoms(use_true_random=False))
    def check(rng: random.Random) -> None:
        text = line(rng)
        seen["lines"] += 1
        if judge(world, policy, text) != "allow":
            return
        seen["allowed"] += 1
        if any(ran(world, text)):
            escaped.append(text)
        assert not escaped, f"allowed, and bash ran an unsigned program or a denied command: {text!r}"

    check()
    assert seen["lines"] >= LINES
    assert seen["allowed"] >= LINES // 40, seen  # enough allowed lines that the oracle is exercised (92 today)


@pytest.mark.slow
def test_the_oracle_at_scale(oracle: tuple[ShellWorld, Policy]) -> None:
    """Issue 32's measure: ``SLOW_LINES`` seeded lines (100,000 for the measure: about 17 minutes on two
    busy cores, mostly bash; ``-m slow``), 0 allowed lines run unverified bytes or a denied command."""
    world, policy = oracle
    rng = random.Random(32)
    counts = {"allowed": 0, "unsigned": 0, "denied": 0}
    escaped: list[str] = []
    for _ in range(SLOW_LINES):
        text = line(rng)
        if judge(world, policy, text) != "allow":
            continue
        counts["allowed"] += 1
        unsigned, denied = ran(world, text)
        counts["unsigned"] += unsigned
        counts["denied"] += denied
        if unsigned or denied:
            escaped.append(text)
    print(f"oracle, {SLOW_LINES} lines as uid {os.getuid()}: {counts}")  # the figure (pytest -s)
    assert not escaped, (counts, escaped[:20])
    assert counts["allowed"] >= SLOW_LINES // 40, counts
