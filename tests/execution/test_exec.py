"""`atip-trust exec` and `exec_verified`: exactly the verified bytes run, or nothing does.

The swap tests race deterministically: a child Python process admits through the library and swaps
the file in the ``before_exec`` hook point, after admission and the audit line, before the last
checks and ``execve``. The replacement bytes would write a sentinel file; it must never appear.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from gate_world import World, make_world

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="execve of a descriptor is POSIX")

SAFE = b"#!/bin/sh\necho safe-bytes-ran\n"

RUNNER = r"""
import json, os, sys
from pathlib import Path
from atip_trust.admission.admit import load_admission_policy
from atip_trust.execution.exec import ExecRefused, exec_verified

mode, target, evil, policy, bundles, audit = sys.argv[1:7]

def swap(plan):
    if mode == "rename":            # a new file renamed over the verified one
        os.replace(evil, target)
    elif mode == "rewrite":         # the same inode, new bytes
        with open(target, "r+b") as f:
            f.truncate(0)
            f.write(Path(evil).read_bytes())
    elif mode == "symlink":         # the PATH entry is a symlink; it is pointed elsewhere
        tmp = target + ".tmp"
        os.symlink(evil, tmp)
        os.replace(tmp, target)

try:
    exec_verified("victim", [], policy=load_admission_policy(policy), bundle_dir=bundles,
                  audit_log=audit, before_exec=None if mode == "none" else swap)
except ExecRefused as refused:
    print(json.dumps({"behavior": refused.behavior,
                      "reasons": [[r.code, r.message] for r in refused.reasons]}))
    sys.exit(refused.exit_code)
"""


@pytest.fixture()
def world(tmp_path: Path) -> World:
    return make_world(tmp_path)


def _race(world: World, mode: str, target: Path, evil: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", RUNNER, mode, str(target), str(evil), str(world.policy),
         str(world.bundles), str(world.audit)],
        capture_output=True, text=True, timeout=120, env=world.env(), stdin=subprocess.DEVNULL)


def _evil(world: World, sentinel: Path, folder: Path | None = None) -> Path:
    folder = folder or world.dir / "evil"
    folder.mkdir(exist_ok=True)
    # Signed too: what stops it is not its signature but that it is not the file admitted.
    return world.tool("victim", f"#!/bin/sh\ntouch {sentinel}\n".encode(), folder=folder)


def test_verified_tool_runs_through_the_library_when_nothing_changes(world: World) -> None:
    target = world.tool("victim", SAFE)
    r = _race(world, "none", target, target)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout == "safe-bytes-ran\n"


@pytest.mark.parametrize("mode", ["rename", "rewrite"])
def test_binary_replaced_between_admission_and_exec_never_runs_the_new_bytes(world: World, mode: str) -> None:
    target = world.tool("victim", SAFE)
    sentinel = world.dir / "sentinel"
    evil = _evil(world, sentinel)
    r = _race(world, mode, target, evil)
    assert r.returncode == 1, r.stdout + r.stderr
    out = json.loads(r.stdout)
    codes = [c for c, _ in out["reasons"]]
    assert codes == ["REPLACED_SINCE_VERIFIED" if mode == "rename" else "CHANGED_SINCE_VERIFIED"]
    assert str(target) in out["reasons"][0][1]
    assert not sentinel.exists()
    # The audit trail has the allow line written before exec, then the refusal naming why.
    lines = [json.loads(x) for x in world.audit.read_text().splitlines()]
    assert lines[-2]["decision"] == "allow" and lines[-2]["argv"] == ["victim"]
    assert lines[-1]["decision"] == "deny" and lines[-1]["reasons"][-1]["code"] in codes


def test_symlink_swapped_in_the_path_directory_never_runs_the_new_target(world: World) -> None:
    real = world.dir / "v1"
    real.mkdir()
    verified = world.tool("victim", SAFE, folder=real)
    link = world.signed_bin / "victim"
    link.symlink_to(verified)
    sentinel = world.dir / "sentinel"
    evil = _evil(world, sentinel)
    r = _race(world, "symlink", link, evil)
    assert r.returncode == 1, r.stdout + r.stderr
    reasons = json.loads(r.stdout)["reasons"]
    assert reasons[0][0] == "REPLACED_SINCE_VERIFIED" and "now names a different file" in reasons[0][1]
    assert not sentinel.exists()


def _exec(world: World, *argv: str, policy: Path | None = None, env: dict[str, str] | None = None,
          extra: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    return world.run("exec", "--policy", str(policy or world.policy), "--bundle-dir", str(world.bundles),
                     "--audit-log", str(world.audit), *extra, "--", *argv, env=env)


def test_exit_code_of_the_tool_passes_through_and_the_audit_line_records_argv_and_digest(world: World) -> None:
    world.tool("tool", b"#!/bin/sh\necho \"ran $*\"\nexit 7\n")
    r = _exec(world, "tool", "--json", "x y")
    assert r.returncode == 7, r.stderr
    assert r.stdout == "ran --json x y\n"
    line = json.loads(world.audit.read_text().splitlines()[-1])
    assert line["decision"] == "allow" and line["argv"] == ["tool", "--json", "x y"]
    assert line["digest"].startswith("sha256:") and line["interpreter"]["trust_level"] == "VERIFIED"
    assert line["exec"]["argv"][0] == "/bin/sh" and line["exec"]["argv"][1].startswith("/dev/fd/")


def test_signal_that_kills_the_tool_passes_through(world: World) -> None:
    world.tool("tool", b"#!/bin/sh\nkill -TERM $$\nsleep 5\n")
    r = _exec(world, "tool")
    assert r.returncode == -signal.SIGTERM, (r.returncode, r.stderr)


def test_env_scrubbing_drops_ld_preload_and_other_injection_variables(world: World) -> None:
    world.tool("tool", b"#!/bin/sh\nenv\n")
    env = world.env(LD_PRELOAD="/nonexistent/evil.so", BASH_ENV="/tmp/evil.sh",
                    PYTHONPATH="/tmp/evil", FOO="kept")
    r = _exec(world, "tool", env=env)
    assert r.returncode == 0, r.stderr
    names = {line.split("=", 1)[0] for line in r.stdout.splitlines() if "=" in line}
    assert "FOO" in names
    assert not names & {"LD_PRELOAD", "BASH_ENV", "PYTHONPATH"}


def test_env_allowlist_keeps_only_what_policy_names_and_only_a_named_injection_variable(world: World) -> None:
    world.tool("tool", b"#!/bin/sh\nenv\n")
    env = world.env(LD_PRELOAD="", FOO="dropped", BAR="kept")
    only = world.write_policy("allowlist", exec={"env": {"mode": "allowlist", "allow": ["BAR", "LD_PRELOAD", "PATH"]}})
    r = _exec(world, "tool", policy=only, env=env)
    names = {line.split("=", 1)[0] for line in r.stdout.splitlines() if "=" in line}
    assert r.returncode == 0, r.stderr
    assert {"BAR", "LD_PRELOAD"} <= names and "FOO" not in names
    star = world.write_policy("star", exec={"env": {"mode": "allowlist", "allow": ["*"]}})
    r = _exec(world, "tool", policy=star, env=env)
    assert r.returncode == 2 and "exec.env.allow" in r.stderr and r.stdout == ""  # no keep-everything pattern


def test_script_with_an_unsigned_interpreter_is_refused_under_verify_interpreter(world: World) -> None:
    interp = world.dir / "mysh"
    shutil.copyfile("/bin/sh", interp)
    interp.chmod(0o755)
    interp.write_bytes(interp.read_bytes() + b"\0unsigned build")  # other bytes than the signed /bin/sh
    sentinel = world.dir / "sentinel"
    world.tool("tool", f"#!{interp}\ntouch {sentinel}\n".encode())
    r = _exec(world, "tool")
    assert r.returncode == 1, r.stderr
    assert "SCRIPT_INTERPRETER_NOT_ADMITTED" in r.stderr and str(interp) in r.stderr and "UNSIGNED" in r.stderr
    assert not sentinel.exists()


def test_script_is_refused_outright_under_exec_scripts_deny(world: World) -> None:
    world.tool("tool", b"#!/bin/sh\necho ran\n")
    r = _exec(world, "tool", policy=world.write_policy("noscripts", exec={"scripts": "deny"}))
    assert r.returncode == 1 and "SCRIPT_DENIED" in r.stderr and r.stdout == ""


def test_env_shebang_runs_the_verified_interpreter_found_on_path_without_running_env(world: World) -> None:
    os.symlink("/bin/sh", world.signed_bin / "sh")
    world.tool("tool", b"#!/usr/bin/env sh\necho \"via env $*\"\n")
    r = _exec(world, "tool", "a")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "via env a\n"
    world.tool("tool", b"#!/usr/bin/env -S sh -e\necho no\n")
    r = _exec(world, "tool")
    assert r.returncode == 1 and "SCRIPT_INTERPRETER_UNKNOWN" in r.stderr


def test_unsigned_tool_is_denied_and_ask_exits_3_without_running(world: World) -> None:
    sentinel = world.dir / "sentinel"
    world.tool("tool", f"#!/bin/sh\ntouch {sentinel}\n".encode(), signed=False)
    r = _exec(world, "tool", "x", extra=("--non-interactive",))
    assert r.returncode == 1 and "exec refused (deny)" in r.stderr and "UNSIGNED" in r.stderr
    world.tool("tool", f"#!/bin/sh\ntouch {sentinel}\n".encode())
    asking = world.write_policy("ask", permissions={"ask": ["tool *"]})
    r = _exec(world, "tool", "x", policy=asking, extra=("--interactive", "always"))
    assert r.returncode == 3 and "exec refused (ask)" in r.stderr
    assert not sentinel.exists()


def test_a_local_policy_cannot_let_ld_preload_through_an_org_layer_that_does_not_name_it() -> None:
    """A hostile local policy: it allows LD_PRELOAD for the tools it runs, while the org layer states
    exec.env without naming it. Layers only tighten, so the injection variable is dropped."""
    from atip_trust.execution.env import exec_environment
    from atip_trust.policy.compose import compose
    from atip_trust.policy.load import layer_from_document

    org = layer_from_document({"version": 1, "exec": {"env": {"mode": "pass"}}}, source="org")
    local = layer_from_document({"version": 1, "exec": {"env": {"mode": "pass", "allow": ["LD_PRELOAD"]}}},
                                source="local")
    env = {"PATH": "/usr/bin", "LD_PRELOAD": "/tmp/evil.so", "HOME": "/root"}
    assert "LD_PRELOAD" not in exec_environment(compose([org, local]), env)
    # The control: with no org layer the local policy's own choice is what applies.
    assert exec_environment(compose([local]), env).get("LD_PRELOAD") == "/tmp/evil.so"
