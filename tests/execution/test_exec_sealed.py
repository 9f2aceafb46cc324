"""Issue 22, the exec side: what `exec` runs is what was admitted, and only that.

- a `#!` script reaches its interpreter as a sealed copy of the verified bytes (a memfd nobody can
  write, grow or shrink), never its own file, which bash reads a command at a time: a same-size rewrite
  in place while it runs must not run the new bytes;
- `--expect-digest sha256:<hex>` (what an agent hook pins when it rewrites an allowed command) refuses
  other bytes, and is never a bypass of the admission; the tool's words after TOOL pass untouched;
- the environment filter drops the variables that make a verified tool run a command of their choosing
  (`GIT_SSH_COMMAND`, `GIT_CONFIG_*`, `PAGER`, `EDITOR`, ...) unless the policy names them.

Real bash, dash, python3 and git, real files, real signatures (the local test Sigstore).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from atip_trust.errors import UsageError

from conftest import examples
from gate_world import World, make_world

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="memfd and /proc are Linux")

BASH, DASH, PYTHON, GIT = Path("/bin/bash"), Path("/usr/bin/dash"), Path("/usr/bin/python3"), Path("/usr/bin/git")
MEMFD = "memfd:atip-trust-verified-script"


@pytest.fixture()
def world(tmp_path: Path) -> World:
    w = make_world(tmp_path)
    for program in (BASH, DASH, PYTHON, GIT):
        if program.exists():
            w.sign(program.resolve().read_bytes())
    w.policy = _policy(w, "policy")
    return w


def _policy(world: World, name: str, **extra: Any) -> Path:
    rules = ("sh", "bash", "dash", "python3", "git *", "tool", "tool *", "victim", "victim *")
    return world.write_policy(name, permissions={"allow": [{"rule": r, "minTrustLevel": "VERIFIED"} for r in rules]},
                              **extra)


def _exec(world: World, *argv: str, policy: Path | None = None, env: dict[str, str] | None = None,
          extra: tuple[str, ...] = ()) -> Any:
    return world.run("exec", "--policy", str(policy or world.policy), "--bundle-dir", str(world.bundles),
                     "--audit-log", str(world.audit), *extra, "--", *argv, env=env)


def _audit(world: World) -> list[dict[str, Any]]:
    return [json.loads(x) for x in world.audit.read_text().splitlines()]


def _sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


# --- a #! script is run from a sealed copy -------------------------------------------------------


def _self_rewriting_script(target: Path, sentinel: Path) -> bytes:
    """A bash script that overwrites its own file in place (same size, same inode, os-level write at an
    offset, as a writer racing the interpreter would) and then continues: bash reads its script a
    command at a time, seeking back before each one it forks for, so from a file it reads the new line."""
    good = "echo original-bytes-ran; exit 0"
    evil = f"touch '{sentinel}'; exit 0"
    width = max(len(good), len(evil))
    head = "#!/bin/bash\n"
    rewrite = "printf '%s' '{evil}' | dd of='{target}' bs=1 seek={offset} conv=notrunc status=none\n"
    # The offset of the last line depends on the length of the rewrite line, which holds the offset.
    offset = 0
    for _ in range(3):
        line = rewrite.format(evil=evil.ljust(width), target=target, offset=offset)
        offset = len((head + line).encode())
    return (head + line + good.ljust(width) + "\n").encode()


@pytest.mark.skipif(not BASH.exists(), reason="needs bash")
def test_a_bash_script_rewritten_in_place_while_exec_runs_it_never_runs_the_new_bytes(world: World) -> None:
    target = world.signed_bin / "tool"
    sentinel = world.dir / "sentinel"
    body = _self_rewriting_script(target, sentinel)
    world.tool("tool", body)
    r = _exec(world, "tool")
    assert not sentinel.exists(), "the interpreter ran bytes written after the script was verified"
    assert r.returncode == 0, r.stderr
    assert r.stdout == "original-bytes-ran\n"
    # The control: the file on disk did change, at the same size (so only reading it again would tell).
    after = target.read_bytes()
    assert after != body and len(after) == len(body)


@pytest.mark.skipif(not BASH.exists(), reason="needs bash")
def test_a_script_another_process_rewrites_in_place_while_it_runs_never_runs_the_new_bytes(world: World) -> None:
    """The writer is another process: the running script waits on a FIFO (an external `cat`, so bash
    seeks back to its next line before it forks), the test rewrites the file in place at the same size,
    then lets it go on. From the file, bash would read the rewritten line next."""
    fifo, sentinel = world.dir / "go", world.dir / "sentinel"
    os.mkfifo(fifo)
    good, evil = "echo original-bytes-ran; exit 0", f"touch '{sentinel}'; exit 0"
    width = max(len(good), len(evil))
    body = f"#!/bin/bash\necho started\ncat '{fifo}' >/dev/null\n{good.ljust(width)}\n".encode()
    target = world.tool("tool", body)
    proc = subprocess.Popen([sys.executable, "-m", "atip_trust", "exec", "--policy", str(world.policy),
                             "--bundle-dir", str(world.bundles), "--audit-log", str(world.audit), "--", "tool"],
                            env=world.env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline() == "started\n"  # admitted, verified, running
        with open(target, "r+b") as f:  # same inode, same size
            f.seek(len(body) - width - 1)
            f.write(evil.ljust(width).encode())
        assert len(target.read_bytes()) == len(body)
        with open(fifo, "wb"):
            pass  # let the script go on
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert not sentinel.exists(), "the interpreter ran bytes written after the script was verified"
    assert proc.returncode == 0 and out == "original-bytes-ran\n", err


PROBES = {
    # Each prints where its script comes from, then tries to write to it through a new descriptor.
    BASH: '#!/bin/bash\nreadlink "$0"\n(echo x >> "$0") 2>/dev/null && echo writable || echo sealed\n',
    DASH: '#!/usr/bin/dash\nreadlink "$0"\n(echo x >> "$0") 2>/dev/null && echo writable || echo sealed\n',
    PYTHON: ("#!/usr/bin/python3\nimport os, sys\nprint(os.readlink(sys.argv[0]))\n"
             "try:\n    os.write(os.open(sys.argv[0], os.O_WRONLY), b'x')\n    print('writable')\n"
             "except OSError:\n    print('sealed')\n"),
}


@pytest.mark.parametrize("interpreter", list(PROBES), ids=lambda p: p.name)
def test_each_interpreter_reads_a_sealed_memfd_copy_never_the_scripts_own_file(world: World,
                                                                                interpreter: Path) -> None:
    if not interpreter.exists():
        pytest.skip(f"needs {interpreter}")
    tool = world.tool("tool", PROBES[interpreter].encode())
    r = _exec(world, "tool")
    assert r.returncode == 0, r.stderr
    source, written = r.stdout.splitlines()
    assert source.startswith(f"/{MEMFD}"), source  # not str(tool): the verified file is never reread
    assert written == "sealed"
    assert tool.read_bytes() == PROBES[interpreter].encode()
    line = _audit(world)[-1]
    assert line["decision"] == "allow" and line["exec"]["argv"][1].startswith("/dev/fd/")


def test_without_memfd_create_the_script_runs_from_an_unlinked_private_copy(world: World) -> None:
    """Where there is no memfd_create (macOS), the copy is a temporary file unlinked at once: the script
    runs from it, never from its own file, and nothing is left behind in the temporary directory."""
    tmp = world.dir / "tmp"
    tmp.mkdir()
    world.tool("tool", b'#!/bin/sh\nreadlink "$0"\necho ran "$@"\n')
    launcher = ("import os, sys\ndel os.memfd_create\nfrom atip_trust.cli.launch import main\n"
                "sys.argv = ['atip-trust', *sys.argv[1:]]\nsys.exit(main())\n")
    r = subprocess.run([sys.executable, "-c", launcher, "exec", "--policy", str(world.policy), "--bundle-dir",
                        str(world.bundles), "--audit-log", str(world.audit), "--", "tool", "x"],
                       capture_output=True, text=True, env=world.env(TMPDIR=str(tmp)), stdin=subprocess.DEVNULL,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    source, said = r.stdout.splitlines()
    assert source.startswith(str(tmp / "atip-trust-script-")) and source.endswith(" (deleted)"), source
    assert said == "ran x" and list(tmp.iterdir()) == []


def test_a_script_whose_bytes_changed_before_the_copy_is_refused_not_copied(tmp_path: Path) -> None:
    """The copy is hashed as it is made and must have the verified digest (Artifact.sealed_copy)."""
    from atip_trust.errors import ArtifactAccessError
    from atip_trust.facts.artifact import Artifact
    from atip_trust.facts.digest import Digest

    script = tmp_path / "tool"
    script.write_bytes(b"#!/bin/sh\necho safe\n")
    with Artifact.open(script) as art:
        verified = art.sha256
        fd = art.sealed_copy(verified)
        try:
            assert os.pread(fd, 100, 0) == b"#!/bin/sh\necho safe\n"
            with pytest.raises(OSError):
                os.pwrite(fd, b"#!/bin/sh\nrm -rf\n", 0)  # sealed against write
            again = os.open(f"/proc/self/fd/{fd}", os.O_WRONLY)  # nor through a new open file
            try:
                with pytest.raises(PermissionError):
                    os.write(again, b"#!/bin/sh\nrm -rf\n")
                with pytest.raises(PermissionError):
                    os.ftruncate(again, 0)
            finally:
                os.close(again)
        finally:
            os.close(fd)
        with open(script, "r+b") as f:  # same size, same inode
            f.write(b"#!/bin/sh\necho evil\n")
        with pytest.raises(ArtifactAccessError, match=f"expected {verified}, actual"):
            art.sealed_copy(verified)
        with pytest.raises(ArtifactAccessError, match="expected"):
            art.sealed_copy(Digest.parse(_sha(b"other")))


def test_probe_of_a_script_tool_reads_a_sealed_copy(tmp_path: Path) -> None:
    """`TOOL --agent` of a #! tool (discovery/probe.py): the interpreter reads the sealed copy too. The tool
    answers metadata only when its script comes from the memfd; from its own file it leaves a sentinel."""
    from discovery_world import ORG_ID, agent_json
    from discovery_world import World as DiscoveryWorld
    from verify_helpers import cli

    w = DiscoveryWorld(tmp_path)
    b = tmp_path / "bin"
    sentinel = w.sentinel("lazy")
    quoted = agent_json("memtool").replace("'", "'\\''")
    body = (f"#!/bin/sh\ncase \"$(readlink \"$0\")\" in /{MEMFD}*) printf '%s' '{quoted}'; exit 0;; esac\n"
            f"touch '{sentinel}'\n").encode()
    w.tool(b, "memtool", body, identity=ORG_ID)
    r = cli("scan", "--bundle-dir", str(w.bundles), str(b), "--policy", str(w.policy()), "--format",
            "json", "--surface", "--no-cache", env=_scan_env(tmp_path))
    assert not sentinel.exists(), r.out + r.err
    assert "memtool" in r.out and '"metadata"' in r.out, r.out


@pytest.mark.skipif(not BASH.exists(), reason="needs bash")
def test_run_verified_of_a_script_rewritten_in_place_while_it_runs_never_runs_the_new_bytes(tmp_path: Path) -> None:
    """The bounded runner (execution/child.py) given a #! file: the kernel reads the #! line and hands the
    interpreter a name to read the script by; that name is the sealed copy, not the file."""
    from atip_trust.execution.child import run_verified
    from atip_trust.facts.artifact import Artifact

    target, sentinel = tmp_path / "tool", tmp_path / "sentinel"
    body = _self_rewriting_script(target, sentinel)
    target.write_bytes(body)
    target.chmod(0o755)
    with Artifact.open(target) as art:
        art.sha256  # verified
        res = run_verified(art, [], timeout=30, max_output=4096, env={"PATH": "/usr/bin:/bin"})
    assert not sentinel.exists(), "the interpreter ran bytes written after the script was verified"
    assert res.exit_code == 0 and res.stdout == b"original-bytes-ran\n", res
    assert target.read_bytes() != body


def test_the_bridge_call_loop_runs_a_script_tool_from_its_sealed_copy(tmp_path: Path) -> None:
    """run_tool_call (bridge/loop.py) of a #! tool: its verified interpreter reads the sealed copy."""
    from test_bridge_loop import loop as make_loop
    from test_bridge_loop import response, shown

    lp = make_loop.__wrapped__(tmp_path)  # type: ignore[attr-defined]
    lp.world.tool("gh", lp.body('readlink "$0"\n'))
    policy = lp.policy()
    surface = lp.surface("openai", policy)
    [out] = lp.call("openai", response("openai", "gh_pr_list", {"state": "open"}), surface, policy)
    result = shown("openai", out.message)
    assert out.status == "ok" and result["exit_code"] == 0, result
    assert f"/{MEMFD}" in result["stdout"] and str(lp.gh) not in result["stdout"], result["stdout"]


def _scan_env(tmp: Path) -> dict[str, str]:
    env = dict(os.environ, ATIP_CACHE_DIR=str(tmp / "cache"), XDG_CACHE_HOME=str(tmp / "xdg-cache"),
               XDG_STATE_HOME=str(tmp / "xdg-state"))
    env.pop("ATIP_TRUST_ORG_POLICY", None)
    return env


# --- --expect-digest ----------------------------------------------------------------------------

ECHO = b'#!/bin/sh\nfor a in "$@"; do printf "[%s]" "$a"; done\necho\n'


def test_expect_digest_of_other_bytes_refuses_a_tool_the_policy_would_allow(world: World) -> None:
    sentinel = world.dir / "sentinel"
    body = f"#!/bin/sh\ntouch '{sentinel}'\n".encode()
    tool = world.tool("tool", body)  # signed and allowed: only the pin stops it
    pinned = _sha(b"the bytes the hook admitted")
    r = _exec(world, str(tool), "x", extra=("--expect-digest", pinned))
    assert r.returncode == 1, r.stderr
    assert "EXPECTED_DIGEST_MISMATCH" in r.stderr and pinned in r.stderr and _sha(body) in r.stderr
    assert not sentinel.exists()
    line = _audit(world)[-1]
    assert line["decision"] == "deny" and line["path"] == str(tool) and line["argv"] == [str(tool), "x"]
    reason = line["reasons"][-1]
    assert reason["code"] == "EXPECTED_DIGEST_MISMATCH"
    assert (reason["expected"], reason["actual"]) == (pinned, _sha(body))


def test_expect_digest_that_matches_still_needs_the_admission(world: World) -> None:
    sentinel = world.dir / "sentinel"
    body = f"#!/bin/sh\ntouch '{sentinel}'\n".encode()
    tool = world.tool("tool", body, signed=False)
    r = _exec(world, str(tool), extra=("--expect-digest", _sha(body), "--non-interactive"))
    assert r.returncode == 1 and "UNSIGNED" in r.stderr, r.stderr
    assert not sentinel.exists()


def test_the_hooks_rewritten_command_line_runs_the_tool_with_its_words_untouched(world: World) -> None:
    """`atip-trust exec --expect-digest sha256:<hex> -- /abs/path ARGS...`: every word after the path is
    the tool's, a leading `--` and this command's own option names included (`rm -- -rf` must remove
    the file named -rf, not become `rm -rf`)."""
    tool = world.tool("tool", ECHO)
    words = ["--", "--expect-digest", "sha256:00", "--policy", "/nonexistent", "-h", "", "a b", "--"]
    r = _exec(world, str(tool), *words, extra=("--expect-digest", _sha(ECHO)))
    assert r.returncode == 0, r.stderr
    assert r.stdout == "".join(f"[{w}]" for w in words) + "\n"
    line = _audit(world)[-1]
    assert line["argv"] == [str(tool), *words] and line["expect_digest"] == _sha(ECHO)


@pytest.mark.skipif(not BASH.exists(), reason="needs bash")
def test_a_pinned_command_joined_for_the_shell_reaches_the_tool_word_for_word(world: World) -> None:
    """execution/exec.py ``pinned_argv``, ``shlex.join``ed as a hook's ``updatedInput`` and run by real bash:
    quotes, ``$``, backticks, globs, newlines and ``;`` are the tool's words, never the shell's."""
    import shlex

    from atip_trust.execution.exec import pinned_argv

    tool = world.tool("tool", ECHO)
    sentinel = world.dir / "sentinel"
    words = ["a b", f"$(touch {sentinel})", f"`touch {sentinel}`", "*", "x\ny", f"; touch {sentinel}", "'\"", "--",
             "-rf", ""]
    argv = pinned_argv(str(tool), _sha(ECHO), words, program=[sys.executable, "-m", "atip_trust"],
                       options=["--policy", str(world.policy), "--bundle-dir", str(world.bundles),
                                "--audit-log", str(world.audit)])
    r = subprocess.run([str(BASH), "-c", shlex.join(argv)], capture_output=True, text=True, env=world.env(),
                       stdin=subprocess.DEVNULL, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "".join(f"[{w}]" for w in words) + "\n"
    assert not sentinel.exists()
    with pytest.raises(UsageError, match="absolute"):
        pinned_argv("tool", _sha(ECHO), [])


_WORD = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=12)
_OPTION_LIKE = st.sampled_from(["--", "-", "-h", "--help", "--policy", "--expect-digest", "--no-audit",
                                "--bundle-dir=x", "-v", "--interactive", "@file", "%s", "--=", ""])


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.one_of(_WORD, _OPTION_LIKE), max_size=8))
def test_exec_hands_every_word_after_the_tool_over_unchanged(words: list[str]) -> None:
    """The exec command line's parser (the same one `atip-trust exec` uses): whatever the words after
    TOOL look like, they come out as TOOL's arguments, in order, none taken as exec's own option."""
    from atip_trust.cli.main import build_parser
    from atip_trust.execution.exec import pinned_argv

    argv = pinned_argv("/usr/bin/tool", "sha256:" + "0" * 64, words, program=[], options=["--no-audit"])
    ns = build_parser("exec").parse_args(argv)
    assert ns.expect_digest == "sha256:" + "0" * 64 and ns.no_audit
    assert [ns.tool, *ns.args] == ["/usr/bin/tool", *words]


def test_a_leading_double_dash_after_the_tool_is_the_tools_own_word(world: World) -> None:
    """`atip-trust exec -- TOOL -- -x`: TOOL gets `-- -x` (for `rm -- -rf`, `grep -- -v FILE`, `env -- X=1
    prog`, the `--` is what makes the next word an operand); it was dropped."""
    tool = world.tool("tool", ECHO)
    r = _exec(world, str(tool), "--", "-x")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "[--][-x]\n"


@pytest.mark.parametrize("value", ["sha256:ABC", "sha512:" + "0" * 128, "deadbeef", "sha256:" + "0" * 63])
def test_a_malformed_expect_digest_is_a_usage_error_never_ignored(world: World, value: str) -> None:
    sentinel = world.dir / "sentinel"
    tool = world.tool("tool", f"#!/bin/sh\ntouch '{sentinel}'\n".encode())
    r = _exec(world, str(tool), extra=("--expect-digest", value))
    assert r.returncode == 2 and "expect-digest" in r.stderr, r.stderr
    assert not sentinel.exists()
    assert _audit(world)[-1]["decision"] == "deny"


def test_library_exec_verified_refuses_other_bytes_before_admission(world: World) -> None:
    from atip_trust.admission.admit import load_admission_policy
    from atip_trust.execution.exec import ExecRefused, exec_verified

    tool = world.tool("tool", ECHO)
    with pytest.raises(ExecRefused) as refused:
        exec_verified(str(tool), ["x"], policy=load_admission_policy(world.policy), bundle_dir=world.bundles,
                      audit_log=world.audit, expect_digest=_sha(b"other"))
    assert refused.value.behavior == "deny" and refused.value.exit_code == 1
    [reason] = refused.value.reasons
    assert reason.code == "EXPECTED_DIGEST_MISMATCH" and reason.actual == _sha(ECHO)
    assert reason.expected == _sha(b"other")


# --- the environment drops command-running variables --------------------------------------------

COMMAND_VARIABLES = {
    "GIT_SSH": "/tmp/evil", "GIT_SSH_COMMAND": "touch /tmp/evil", "GIT_PAGER": "evil", "GIT_EDITOR": "evil",
    "GIT_EXTERNAL_DIFF": "evil", "GIT_EXEC_PATH": "/tmp/evil", "GIT_CONFIG_COUNT": "1",
    "GIT_CONFIG_KEY_0": "core.pager", "GIT_CONFIG_VALUE_0": "evil", "GIT_CONFIG_PARAMETERS": "'core.pager'='evil'",
    "GIT_CONFIG_GLOBAL": "/tmp/evil", "GIT_CONFIG_SYSTEM": "/tmp/evil", "PAGER": "evil", "EDITOR": "evil",
    "VISUAL": "evil", "LESSOPEN": "|evil %s",
}


def test_command_running_variables_never_reach_a_verified_tool(world: World) -> None:
    world.tool("tool", b"#!/bin/sh\nenv\n")
    r = _exec(world, "tool", env=world.env(**COMMAND_VARIABLES, KEPT="yes"))
    assert r.returncode == 0, r.stderr
    names = {line.split("=", 1)[0] for line in r.stdout.splitlines() if "=" in line}
    assert "KEPT" in names
    assert not names & set(COMMAND_VARIABLES), sorted(names & set(COMMAND_VARIABLES))


@pytest.mark.skipif(not GIT.exists(), reason="needs git")
def test_git_config_from_the_environment_cannot_make_a_verified_git_run_an_alias_command(world: World) -> None:
    """`GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.x GIT_CONFIG_VALUE_0='!touch S' git x`: the signed git
    would run the alias's shell command. Dropped unless the policy names the variables; named, kept."""
    sentinel = world.dir / "sentinel"
    attack = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "alias.x", "GIT_CONFIG_VALUE_0": f"!touch '{sentinel}'",
              "HOME": str(world.dir)}
    r = _exec(world, str(GIT), "x", env=world.env(**attack))
    assert not sentinel.exists()
    assert r.returncode != 0 and "is not a git command" in r.stderr, r.stderr
    named = _policy(world, "named", exec={"env": {"mode": "pass", "allow": ["GIT_CONFIG_*"]}})
    r = _exec(world, str(GIT), "x", env=world.env(**attack), policy=named)
    assert sentinel.exists(), r.stderr


@pytest.mark.skipif(not GIT.exists(), reason="needs git")
def test_git_ssh_command_from_the_environment_never_runs_under_a_verified_git(world: World) -> None:
    """`GIT_SSH_COMMAND='touch S; false' git ls-remote ssh://...`: git runs the variable's command through
    a shell. Dropped, git runs ssh, which finds nothing listening on loopback port 1."""
    sentinel = world.dir / "sentinel"
    attack = {"GIT_SSH_COMMAND": f"touch '{sentinel}'; false", "GIT_SSH_VARIANT": "ssh", "HOME": str(world.dir)}
    r = _exec(world, str(GIT), "ls-remote", "ssh://127.0.0.1:1/nothing", env=world.env(**attack))
    assert not sentinel.exists()
    assert r.returncode != 0, r.stderr
    named = _policy(world, "named", exec={"env": {"mode": "pass", "allow": ["GIT_SSH_COMMAND"]}})
    _exec(world, str(GIT), "ls-remote", "ssh://127.0.0.1:1/nothing", env=world.env(**attack), policy=named)
    assert sentinel.exists()


def test_is_command_running_variable_names_the_git_pager_and_editor_variables() -> None:
    from atip_trust.execution.env import changes_what_runs, is_command_running_variable, is_injection

    for name in COMMAND_VARIABLES:
        assert is_command_running_variable(name) and changes_what_runs(name), name
    for name in ("GIT_CONFIG_KEY_7", "GIT_CONFIG_VALUE_12", "GIT_ASKPASS", "SSH_ASKPASS", "MANPAGER"):
        assert is_command_running_variable(name), name
    for name in ("PATH", "HOME", "GIT_AUTHOR_NAME", "GIT_DIR_X", "LANG", "TERM", "EDITORIAL"):
        assert not changes_what_runs(name), name
    assert changes_what_runs("LD_PRELOAD") and is_injection("LD_PRELOAD")
    assert not is_command_running_variable("LD_PRELOAD")
