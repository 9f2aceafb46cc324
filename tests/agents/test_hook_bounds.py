"""A hook that always answers (issue 32, item 8): the parse is bounded in time and memory, no input
reaches a recursion limit, and whatever becomes of the process that decides a large line (a crash, a
signal, memory exhausted) the agent still reads a blocking answer in its own format.

An agent treats a hook that dies (exit 139 after SIGSEGV, 137 after SIGKILL) as a non-blocking error and
runs the line: these tests are about that fail-open, so each checks the exit status and the JSON."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from atip_trust.agents import bash_syntax
from atip_trust.agents.shell_model import Unprovable, programs

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork, /proc and prlimit")
HOOK = [sys.executable, "-m", "atip_trust", "hook", "claude-code", "--no-audit"]


def _input(line: str) -> str:
    return json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash", "cwd": "/tmp",
                       "tool_input": {"command": line}})


@pytest.fixture()
def names_gh(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A policy that names a program (so an unprovable line is a question, not no opinion)."""
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps({"version": 1, "permissions": {"deny": ["gh repo delete *"]}}))
    env = {**os.environ, "HOME": str(tmp_path), "ATIP_CACHE_DIR": str(tmp_path / "cache"), "CI": "true"}
    return policy, env


def _blocking(proc: subprocess.CompletedProcess[str]) -> tuple[str, str]:
    """The decision and reason of a Claude Code answer, after checking it is one the agent honours."""
    assert proc.returncode in (0, 2), (proc.returncode, proc.stdout[-300:], proc.stderr[-300:])
    spec = json.loads(proc.stdout)["hookSpecificOutput"]
    return spec["permissionDecision"], spec["permissionDecisionReason"]


ADVERSARIAL = {
    "a=(b=( chain, 64 KiB": "a=(b=(" * 11000,
    "open pipeline, 60 KB": "ls|" * 20000,
    "open pipeline under the threshold": "ls|" * 1300,
    "500 runners": "env " * 500 + "ls",
    "nested subshells": "(" * 30000,
    "a long quote": "echo '" + "x" * 200000,
    "nested substitutions": '"$(' * 20000,
}


@pytest.mark.parametrize("name", list(ADVERSARIAL))
def test_an_adversarial_line_gets_a_blocking_answer_within_the_timeout(
        name: str, names_gh: tuple[Path, dict[str, str]]) -> None:
    policy, env = names_gh
    started = time.monotonic()
    proc = subprocess.run([*HOOK, "--policy", str(policy), "--timeout", "20"], input=_input(ADVERSARIAL[name]),
                          capture_output=True, text=True, env=env, timeout=120, check=False)
    behavior, reason = _blocking(proc)
    assert behavior in ("deny", "ask"), reason
    assert "RecursionError" not in reason and "internal error" not in reason, reason
    assert time.monotonic() - started < 60  # the answer came from the hook, not from our timeout


@pytest.mark.parametrize("unit", ["a=(b=(", "ls|"])
def test_a_parse_that_outgrows_its_budget_is_a_denial_naming_the_cause(
        unit: str, names_gh: tuple[Path, dict[str, str]]) -> None:
    policy, env = names_gh
    proc = subprocess.run([*HOOK, "--policy", str(policy)], input=_input(unit * 20000), capture_output=True,
                          text=True, env=env, timeout=120, check=False)
    behavior, reason = _blocking(proc)
    assert behavior == "deny" and ("budget" in reason or "'|' characters" in reason), reason


@pytest.mark.parametrize("kb", [16, 64, 250])
def test_the_grammar_is_cancelled_on_a_super_linear_line_and_reads_the_next_one(kb: int) -> None:
    with pytest.raises(bash_syntax.OverBudget, match="CPU time"):
        bash_syntax.parse(("a=(b=(" * (kb * 1024 // 6)).encode())
    assert bash_syntax.parse(b"ls -la").type == "program"  # the cancelled parse was reset, not resumed


@pytest.mark.parametrize("runner", ["env", "nice", "nohup", "timeout 1", "setsid", "stdbuf -o0", "command",
                                    "time", "sudo /usr/bin/env"])
def test_a_chain_of_runners_is_unprovable_not_a_recursion_error(runner: str) -> None:
    with pytest.raises(Unprovable, match="runners"):
        programs(f"{runner} " * 600 + "ls")


def test_a_long_and_list_is_read_without_nesting_deeper() -> None:
    assert len(programs(" && ".join(["ls"] * 5000))) == 5000


def _limit_works(limit: int) -> bool:
    return subprocess.run(["prlimit", f"--as={limit}", sys.executable, "-c", "import atip_trust.cli.main"],
                          capture_output=True, timeout=60, check=False).returncode == 0


@pytest.mark.skipif(shutil.which("prlimit") is None, reason="util-linux prlimit is not installed")
@pytest.mark.parametrize("mib", [40, 48, 64, 96, 160])
def test_under_a_small_address_space_the_hook_still_answers(mib: int, names_gh: tuple[Path, dict[str, str]]
                                                            ) -> None:
    """prlimit --as caps the hook and the process it decides in: where the interpreter can start at all,
    a line too big for the memory left is a denial in Claude Code's format, never a dead hook."""
    if not _limit_works(mib << 20):
        pytest.skip(f"the interpreter cannot start in {mib} MiB here")
    policy, env = names_gh
    line = " ".join(f"ls a{i}; gh pr view {i};" for i in range(12000))
    proc = subprocess.run(["prlimit", f"--as={mib << 20}", *HOOK, "--policy", str(policy), "--timeout", "60"],
                          input=_input(line), capture_output=True, text=True, env=env, timeout=180, check=False)
    if proc.returncode == 0 and not proc.stdout:
        return  # it had the memory to decide: no opinion on ls and gh under this policy
    behavior, reason = _blocking(proc)
    assert behavior in ("deny", "ask"), reason


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry))
    return found


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGSEGV])
def test_a_decider_killed_mid_decision_is_answered_with_a_denial(
        sig: signal.Signals, names_gh: tuple[Path, dict[str, str]]) -> None:
    """A large line is decided in a child; the child is killed while it admits 20,000 programs: the hook
    process that the agent waits for answers, blocking, naming the signal."""
    policy, env = names_gh
    line = " ".join(f"ls a{i};" for i in range(20000))
    proc = subprocess.Popen([*HOOK, "--policy", str(policy), "--timeout", "120"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdin is not None
        proc.stdin.write(_input(line))
        proc.stdin.close()
        deadline = time.monotonic() + 60
        children: list[int] = []
        while not children and proc.poll() is None and time.monotonic() < deadline:
            children = _children(proc.pid)
            time.sleep(0.01)  # polling for the child to exist; the assertion below does not depend on timing
        assert children, "the hook decided a 200 KB line without a child process"
        os.kill(children[0], sig)
        proc.wait(timeout=120)
        out, err = proc.stdout.read(), proc.stderr.read()  # type: ignore[union-attr]
    finally:
        proc.kill()
        proc.wait()
        for stream in (proc.stdout, proc.stderr):
            stream.close()  # type: ignore[union-attr]
    assert proc.returncode == 2, (proc.returncode, out, err)
    spec = json.loads(out)["hookSpecificOutput"]
    assert spec["permissionDecision"] == "deny" and sig.name in spec["permissionDecisionReason"], out


def test_a_decider_that_outlives_the_timeout_is_stopped_and_answered(names_gh: tuple[Path, dict[str, str]]) -> None:
    """20,000 admissions take longer than a 2 s --timeout: the hook answers at its timeout, the child is
    gone (no process of the hook outlives its answer)."""
    policy, env = names_gh
    line = " ".join(f"ls a{i};" for i in range(20000))
    proc = subprocess.Popen([*HOOK, "--policy", str(policy), "--timeout", "2"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        out, err = proc.communicate(_input(line), timeout=120)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 2, (out, err)
    spec = json.loads(out)["hookSpecificOutput"]
    assert spec["permissionDecision"] == "deny" and "no answer within 2 s" in spec["permissionDecisionReason"]
    assert _running_with(str(policy)) == [], "the decision process outlived the hook's answer"


def _running_with(word: str) -> list[int]:
    """Processes whose command line holds ``word`` (a forked child keeps its parent's command line)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    if word.encode() in f.read().split(b"\0"):
                        found.append(int(entry))
            except OSError:
                continue
    return found


def test_parser_from_bindings_alone_shares_its_types_with_a_later_package_import() -> None:
    """The hook builds bash's parser from the compiled bindings without running either package's
    ``__init__`` (issue 32 Measure): neither package, nor the grammar package's importlib.resources, is
    loaded (typing is no witness: every module takes TYPE_CHECKING from it at run time), and a later
    ``import tree_sitter`` finds the same binding, so its Node is the parsed node's type (a second copy
    of the binding would make every isinstance check against it fail)."""
    probe = ("import sys\n"
             "from atip_trust.agents import bash_syntax\n"
             "root = bash_syntax.parse(b'gh pr list --state open')\n"
             "cold = [m for m in ('importlib.resources', 'tree_sitter', 'tree_sitter_bash')"
             " if m in sys.modules]\n"
             "import tree_sitter, tree_sitter_bash\n"
             "print(cold, type(root) is tree_sitter.Node, root.type, root.has_error)\n")
    p = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["[]", "True", "program", "False"], p.stdout
