"""Bash is the oracle: no line the shell gate allows may run an unsigned program.

Hypothesis draws hostile lines from fixtures/shell_lines.py's grammar (runners fed by xargs, expansions
in a wrapper's operand, builtins that change lookup, files written then run, env's grammar, programs
that run programs); the gate judges each in-process, exactly as ``atip-trust hook`` does; every line it
allows is then run by real bash in a world whose unsigned programs append to a sentinel file, and whose
denied commands (``gh repo delete``, a force push) append to another: neither may ever be written.
``test_the_oracle_at_scale`` (``pytest -m slow``) draws ``ATIP_ORACLE_LINES`` lines (default 10,000 in
CI, which fits its time budget) from a seeded ``random.Random``; issue 32's measure is the same test with
``ATIP_ORACLE_LINES=100000``, run as root and as an unprivileged user
(17 to 29 minutes each here; ``test_the_oracle_at_scale_as_an_unprivileged_user`` runs it under
``setpriv``). Every tenth allowed line is also judged with ``--pin`` and its rewritten line run by bash in
the world's folder, which ships its own ``atip_trust/`` package (its import would leave the sentinel too).
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from atip_trust.admission.admit import load_admission_policy
from atip_trust.admission.options import AdmitOptions
from atip_trust.agents.formats import HookRequest
from atip_trust.agents.hooks import Options, decide_command
from atip_trust.cli.cmd_hook import pin_words
from atip_trust.policy.model import Policy

from shell_lines import ShellWorld, line, make_world

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell lines")
LINES = 2000
SLOW_LINES = int(os.environ.get("ATIP_ORACLE_LINES", "10000"))


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> tuple[ShellWorld, Policy]:
    world = make_world(tmp_path_factory.mktemp("oracle"))
    return world, load_admission_policy(str(world.policy))


@contextmanager
def agent_tools(world: ShellWorld) -> Iterator[None]:
    """The gate reads the world's agent-tools tree (its registry.json pins deploy), as a hook whose user
    ran ``scan --update-registry`` would; the process's own setting is put back after."""
    saved = os.environ.get("XDG_DATA_HOME")
    if world.xdg_data is not None:
        os.environ["XDG_DATA_HOME"] = str(world.xdg_data)
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("XDG_DATA_HOME", None)
        else:
            os.environ["XDG_DATA_HOME"] = saved


def judge(world: ShellWorld, policy: Policy, text: str) -> str | None:
    with agent_tools(world):
        verdict = decide_command(HookRequest("claude-code", "Bash", text, cwd=str(world.dir)), policy=policy,
                                 options=Options(admit=AdmitOptions(audit=False), bundle_dir=str(world.bundles),
                                                 path_env=world.env["PATH"]))
    return None if verdict is None else verdict.behavior


def judge_pinned(world: ShellWorld, policy: Policy, text: str) -> str | None:
    """The line ``atip-trust hook claude-code --pin`` would have the agent run, or None when not allowed."""
    program, flags = pin_words(["atip-trust", "hook", "claude-code", "--pin", "--no-audit", "--policy",
                                str(world.policy), "--bundle-dir", str(world.bundles)])
    with agent_tools(world):
        verdict = decide_command(HookRequest("claude-code", "Bash", text, cwd=str(world.dir)), policy=policy,
                                 options=Options(admit=AdmitOptions(audit=False), bundle_dir=str(world.bundles),
                                                 path_env=world.env["PATH"], pin=program, pin_options=flags))
    return verdict.rewritten if verdict is not None and verdict.behavior == "allow" else None


def refused(world: ShellWorld, policy: Policy, text: str, did: tuple[bool, bool], *, unsigned: bool = False,
            denied: bool = False) -> str:
    """The attack tests' one check: bash did what the attack claims (``did``: an unsigned program ran, a
    denied command ran; each required as said), and the gate neither allows ``text`` nor has no opinion on
    it. Returns the gate's answer."""
    assert (did[0] or not unsigned) and (did[1] or not denied), \
        f"bash did not do what the attack claims for {text!r}: (unsigned ran, denied ran) = {did}"
    answer = judge(world, policy, text)
    assert answer not in ("allow", None), f"allowed, and bash runs it: {text!r} ({answer})"
    return str(answer)


def run_in_bash(world: ShellWorld, text: str, *, path: str | None = None) -> bool:
    """True when bash ran an unsigned program for ``text`` (:func:`ran`)."""
    return ran(world, text, path=path)[0]


def ran(world: ShellWorld, text: str, *, path: str | None = None) -> tuple[bool, bool]:
    """Run ``text`` as an agent's shell would (its background jobs waited for, the whole process group
    killed if it outlives 20 s), with ``path`` for PATH if given; whether an unsigned program ran, and
    whether a denied command did."""
    env = world.env if path is None else {**world.env, "PATH": path}
    proc = subprocess.Popen(["/bin/bash", "-c", text + "\nwait"], cwd=world.dir, env=env,
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


def test_the_worlds_registry_pinned_copies_are_deploy(oracle: tuple[ShellWorld, Policy]) -> None:
    """The PINNED class can fail: its lines really destroy, and only the registry pin says the copy is
    deploy (off PATH, its name never typed)."""
    world, policy = oracle
    for text in ("d/ship destroy prod", "tools/dl destroy prod", "d/ship -q destroy prod"):
        assert ran(world, text)[1], text
        assert judge(world, policy, text) == "deny", text
    assert judge(world, policy, "d/ship status") == "allow"  # deploy's allow rule, as deploy: signed
    # Its signed metadata declares purge's -f as --force, which a deny rule names.
    for text in ("d/ship purge -f x", "d/ship -e prod purge -yf x", "d/ship --undeclared purge -f x"):
        assert ran(world, text)[1], text
        assert judge(world, policy, text) in ("deny", "ask"), text
    assert judge(world, policy, "d/ship purge -f x") == "deny"
    assert judge(world, policy, "d/ship -e purge status") == "allow"  # purge is -e's value


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
        pinned = judge_pinned(world, policy, text) if seen["allowed"] % 10 == 0 else None
        if pinned is not None and any(ran(world, pinned)):
            escaped.append(f"--pin: {pinned}")
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
        pinned = judge_pinned(world, policy, text) if counts["allowed"] % 10 == 0 else None
        if pinned is not None and any(ran(world, pinned)):
            escaped.append(f"--pin: {pinned}")
    print(f"oracle, {SLOW_LINES} lines as uid {os.getuid()}: {counts}")  # the figure (pytest -s)
    assert not escaped, (counts, escaped[:20])
    assert counts["allowed"] >= SLOW_LINES // 40, counts


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None,
                    reason="needs root to start a process as another user (setpriv)")
def test_the_oracle_at_scale_as_an_unprivileged_user(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The same run as nobody (uid 65534): the decision depends on the real uid (hooks.changeable asks
    the kernel), so it is a pytest of :func:`test_the_oracle_at_scale` started by ``setpriv``."""
    home = tempfile.mkdtemp(prefix="atip-oracle-user-")
    os.chown(home, 65534, 65534)
    env = {"PATH": "/usr/bin:/bin", "HOME": home, "LANG": "C.UTF-8", "ATIP_CACHE_DIR": f"{home}/cache",
           "ATIP_ORACLE_LINES": str(SLOW_LINES)}
    try:
        r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-m",
                            "pytest", "-q", "-s", "-p", "no:cacheprovider", "-m", "slow", "--basetemp", f"{home}/t",
                            f"{__file__}::test_the_oracle_at_scale"], cwd=Path(__file__).resolve().parents[2],
                           env=env, capture_output=True, text=True, timeout=4 * 3600, check=False)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    assert r.returncode == 0 and "as uid 65534" in r.stdout, (r.stdout[-3000:], r.stderr[-2000:])
