"""Start-up: a subcommand imports only what it uses (each subcommand's parser is built on its own), so
`--version` and `hash` never load sigstore, cryptography, jsonschema or httpx; and an `admit` whose trust
report and policy come from the verdict cache loads none of them either (_base/lazy.py). What each fast
path never loads, and why, is declared once in tests/fast_path.py; a failure names the module, the reason
and the import stack that loaded it. Design and figures: docs/adr/0001-start-up.md; bench/startup.py,
bench/run.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import fast_path
import testsigstore

REPO = Path(__file__).resolve().parents[2]

PROBE = fast_path.RECORDER + """
import json
from atip_trust.cli.main import main
rc = main(json.loads(sys.argv[1]))
sys.stderr.write(json.dumps({"rc": rc, "modules": sorted(sys.modules), "who": _WHO}) + chr(10))
"""


#: The probe's entry as the console script runs it (cli/launch.py, which pauses the collector first).
CONSOLE = ("from atip_trust.cli.launch import main as launch\n"
           "def main(argv):\n    sys.argv = ['atip-trust', *argv]\n    return launch()\n")


def probe(argv: list[str], env: dict[str, str] | None = None, *, bare: bool = False,
          stdin: str | None = None, console: bool = False) -> dict[str, Any]:
    """Run the CLI's ``main(argv)`` in a fresh interpreter: its exit code, standard output, every module
    it loaded and who imported each (tests/fast_path.py). ``bare``: without site-packages (``-S``; the
    package from this checkout). ``stdin``: text the command reads as its standard input. ``console``:
    through the console script's entry point (cli/launch.py) rather than the library's."""
    code = PROBE if not console else PROBE.replace("from atip_trust.cli.main import main\n", CONSOLE)
    code = code if stdin is None else code.replace(
        "rc = main(", f"sys.stdin = __import__('io').TextIOWrapper(__import__('io').BytesIO({stdin.encode()!r})); rc = main(")
    p = subprocess.run([sys.executable, *(["-S"] if bare else []), "-c", code, json.dumps(argv)], cwd=REPO,
                       capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL, env=env)
    lines = p.stderr.strip().splitlines()
    assert lines, f"the probe printed nothing (exit {p.returncode})"
    out: dict[str, Any] = json.loads(lines[-1])
    out["stdout"] = p.stdout
    return out


def off_path(out: dict[str, Any], path: str, *, bare: bool = False) -> list[str]:
    """What ``out`` loaded that fast path ``path`` never loads, each with why and who imported it."""
    return fast_path.loaded_against(out["modules"], out["who"], path, bare=bare)


def tops(out: dict[str, Any]) -> set[str]:
    return {m.split(".")[0] for m in out["modules"]}


@pytest.mark.slow
@pytest.mark.parametrize("argv", [["--version"], ["hash", "./README.md"], ["hash", "--format", "json",
                                                                            "./pyproject.toml"]])
def test_version_and_hash_load_no_verification_stack(argv: list[str]) -> None:
    path = "version" if argv == ["--version"] else "hash"
    out = probe(argv)
    assert out["rc"] == 0 and off_path(out, path) == [], "\n".join(off_path(out, path))
    bare = probe(argv, bare=True)  # nor pathlib (a bare interpreter)
    assert bare["rc"] == 0 and off_path(bare, path, bare=True) == [], "\n".join(off_path(bare, path, bare=True))


@pytest.mark.slow
def test_hash_of_many_files_loads_no_process_pool_or_sarif() -> None:
    """Threads hash many files; the process pool (verification's) and SARIF (--format sarif, or a
    file that fails) are not loaded for it."""
    p = subprocess.run([sys.executable, "-c", "import sys; from atip_trust.cli.main import main; "
                        "rc = main(sys.argv[1:]); print(rc, sorted(m for m in sys.modules if m in ("
                        "'multiprocessing', 'concurrent.futures.process', 'atip_trust.cli.sarif')))",
                        "hash", "./README.md", "./pyproject.toml", "./schema/policy.schema.json"], cwd=REPO, capture_output=True, text=True, timeout=120,
                       stdin=subprocess.DEVNULL)
    assert p.stdout.splitlines()[-1] == "0 []", p.stdout + p.stderr


def test_only_the_named_subcommand_is_built_but_help_lists_them_all() -> None:
    from atip_trust.cli.main import COMMANDS, build_parser, command_of

    assert command_of(["--format", "json", "verify", "x"]) == "verify"
    assert command_of(["-v", "--", "hash"]) is None
    full = subprocess.run([sys.executable, "-m", "atip_trust", "--help"], capture_output=True, text=True,
                          timeout=60, cwd=REPO, stdin=subprocess.DEVNULL)
    assert full.returncode == 0 and all(c in full.stdout for c in COMMANDS)
    bad = subprocess.run([sys.executable, "-m", "atip_trust", "nosuch"], capture_output=True, text=True,
                         timeout=60, cwd=REPO, stdin=subprocess.DEVNULL)
    assert bad.returncode == 2 and "invalid choice" in bad.stderr
    assert build_parser("hash").parse_args(["hash", "README.md"]).command == "hash"


ID = "https://github.com/acme/tool/.github/workflows/release.yml@refs/tags/v1.0.0"
ISS = "https://token.actions.githubusercontent.com"


def cache_env(tmp_path: Path) -> dict[str, str]:
    """This environment with its verdict cache under ``tmp_path`` and no organisation policy."""
    env = {**os.environ, "ATIP_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("ATIP_TRUST_ORG_POLICY", None)
    return env


def signed_tool(tmp_path: Path) -> tuple[testsigstore.TestSigstore, Path, Path]:
    """The test Sigstore, an executable tool in ``tmp_path`` and its keyless bundle (ID, ISS)."""
    ts = testsigstore.TestSigstore(seed=7)
    body = b"#!/bin/sh\necho tool\n"
    tool = tmp_path / "tool"
    tool.write_bytes(body)
    tool.chmod(0o755)
    bundle = tmp_path / "tool.sigstore.json"
    bundle.write_text(json.dumps(ts.sign_artifact(body, identity=ID, issuer=ISS)))
    return ts, tool, bundle


def admit_world(tmp_path: Path, *, file_root: bool = True) -> tuple[list[str], dict[str, str]]:
    """A keyless-signed tool, its bundle and a one-signer policy (with ``file_root``, a trusted root file
    too): the ``admit --no-audit --format json`` command line and an environment with its own cache."""
    ts, tool, bundle = signed_tool(tmp_path)
    trust: dict[str, object] = {"signers": [{"identity": ID, "issuer": ISS}]}
    argv = ["admit", str(tool), "--command", "status", "--bundle", str(bundle), "--no-audit",
            "--format", "json", "--policy", str(tmp_path / "policy.json")]
    if file_root:
        trust["trustedRoots"] = [{"path": str(ts.write_trusted_root(tmp_path / "trusted_root.json"))}]
        argv += ["--trusted-root", str(tmp_path / "trusted_root.json")]
    (tmp_path / "policy.json").write_text(json.dumps({
        "version": 1, "trust": trust,
        "permissions": {"allow": [{"rule": "tool *", "minTrustLevel": "VERIFIED"}]}}))
    return argv, cache_env(tmp_path)


def verify_world(tmp_path: Path) -> tuple[list[str], dict[str, str]]:
    """A keyless-signed tool, its bundle and root: the ``verify --format json`` command line naming the
    signer, and an environment with its own cache."""
    ts, tool, bundle = signed_tool(tmp_path)
    root = ts.write_trusted_root(tmp_path / "trusted_root.json")
    argv = ["verify", str(tool), "--bundle", str(bundle), "--trusted-root", str(root),
            "--certificate-identity", ID, "--certificate-oidc-issuer", ISS, "--format", "json"]
    return argv, cache_env(tmp_path)


#: A Claude Code pre-tool request for a program (``true`` would be a shell builtin: nothing to admit).
HOOK_REQUEST = json.dumps({"session_id": "s", "hook_event_name": "PreToolUse", "tool_name": "Bash",
                           "tool_input": {"command": "ls -l"}})


def hook_world(tmp_path: Path) -> tuple[list[str], dict[str, str]]:
    """A policy that denies programs it does not name: the ``hook claude-code --no-audit`` command line
    and an environment with its own cache (its standard input: ``HOOK_REQUEST``)."""
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps({"version": 1, "hooks": {"unlisted": "deny"}}))
    root = str(REPO / "fixtures" / "sigstore" / "trusted_root.json")
    return ["hook", "claude-code", "--no-audit", "--trusted-root", root, "--policy", str(policy)], cache_env(tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("root", ["file", "embedded"])
def test_a_cache_hit_admit_loads_no_verifier_schema_validator_http_or_terminal_library(
        tmp_path: Path, root: str) -> None:
    """The warm path: the same keyless-signed tool, bundle, policy and root a second time. The first
    (a miss) really verifies, so it loads sigstore and cryptography and validates the policy with
    jsonschema; the second reuses the trust report and the policy's validation and loads none of
    them, nor httpx or rich, and decides the same. With the embedded root (no --trusted-root), the
    root is found and digested without importing sigstore."""
    argv, env = admit_world(tmp_path, file_root=root == "file")
    cold, warm = probe(argv, env), probe(argv, env)
    cold_out, warm_out = json.loads(str(cold["stdout"])), json.loads(str(warm["stdout"]))
    assert cold_out["cache"] == "miss" and warm_out["cache"] == "hit", (cold, warm)
    # The probe sees what a verification loads (so the empty list below is not for want of looking),
    # and says who loaded it.
    assert {"sigstore", "cryptography", "jsonschema"} <= tops(cold)
    assert any("sigstore was loaded" in line and "atip_trust.evaluation" in line
               for line in off_path(cold, "admit-hit")), off_path(cold, "admit-hit")
    assert off_path(warm, "admit-hit-no-audit") == [], "\n".join(off_path(warm, "admit-hit-no-audit"))
    assert cold["rc"] == warm["rc"] == (0 if root == "file" else 1)
    if root == "file":  # (the embedded root is found through the sigstore package: not in a bare run)
        bare = probe(argv, env, bare=True)
        assert json.loads(str(bare["stdout"]))["decision"] == warm_out["decision"], bare
        assert bare["rc"] == 0 and off_path(bare, "admit-hit-no-audit", bare=True) == [], \
            "\n".join(off_path(bare, "admit-hit-no-audit", bare=True))
        # ... and it does look: a miss in the same bare interpreter loads them (through the verifier,
        # which is not there to load: the run stops with exit 2, having imported pathlib first).
        assert "pathlib" in probe([*argv, "--no-cache"], env, bare=True)["modules"]
        # As run by default: no ATIP_CACHE_DIR, an audit line. The folders are platformdirs' (XDG here),
        # found without importing it (state/dirs.py): the bare interpreter has no platformdirs at all.
        home = {k: v for k, v in env.items() if k != "ATIP_CACHE_DIR"}
        home.update(XDG_CACHE_HOME=str(tmp_path / "xdg-cache"), XDG_STATE_HOME=str(tmp_path / "xdg-state"))
        audited = [a for a in argv if a != "--no-audit"]
        assert json.loads(str(probe(audited, home)["stdout"]))["cache"] == "miss"
        default = probe(audited, home, bare=True)
        assert json.loads(str(default["stdout"]))["cache"] == "hit", default
        assert default["rc"] == 0 and off_path(default, "admit-hit", bare=True) == [], \
            "\n".join(off_path(default, "admit-hit", bare=True))
        lines = (tmp_path / "xdg-state" / "atip-trust" / "audit.jsonl").read_text().splitlines()
        assert len(lines) == 2 and json.loads(lines[-1])["decision"] == "allow", lines
    assert warm_out["trust_level"] == cold_out["trust_level"]
    assert warm_out["decision"]["behavior"] == cold_out["decision"]["behavior"]


LAUNCH_PROBE = """
import json, sys
entry, argv = json.loads(sys.argv[1]), json.loads(sys.argv[2])
sys.argv = ["atip-trust", *argv]
if entry == "launch":
    from atip_trust.cli.launch import main
    run = main
else:
    from atip_trust.cli.main import main as cli_main
    run = lambda: cli_main(sys.argv[1:])
try:
    rc = run()
except SystemExit as exit:
    rc = exit.code
sys.stderr.write(json.dumps({"rc": rc}) + chr(10))
"""


def test_the_console_entry_and_a_library_caller_answer_a_usage_error_alike(tmp_path: Path) -> None:
    """The console script (cli/launch.py, which only pauses the garbage collector) parses as the library
    entry does: the same exit codes and argparse's messages, word for word."""
    file = tmp_path / "f"
    file.write_bytes(b"x")

    def run(entry: str, argv: list[str]) -> tuple[dict[str, object], str]:
        p = subprocess.run([sys.executable, "-c", LAUNCH_PROBE,
                            json.dumps(entry), json.dumps(argv)], cwd=REPO, capture_output=True, text=True,
                           timeout=120, stdin=subprocess.DEVNULL)
        lines = p.stderr.strip().splitlines()
        return json.loads(lines[-1]), "\n".join(lines[:-1])

    assert run("launch", ["hash", str(file)])[0] == run("library", ["hash", str(file)])[0] == {"rc": 0}
    for argv in (["admit"], ["admit", "x", "--bogus"], ["admit", "x", "--command"],
                 ["hash", "--algorithm", "md5", str(file)]):
        (a, a_err), (b, b_err) = run("launch", argv), run("library", argv)
        assert a["rc"] == b["rc"] == 2 and a_err == b_err and "error:" in a_err, (argv, a_err, b_err)
    assert "the following arguments are required: TOOL" in run("launch", ["admit"])[1]


@pytest.mark.slow
def test_a_cache_hit_verify_loads_no_verifier_http_client_or_metadata_model(tmp_path: Path) -> None:
    """``verify`` has the same warm path as ``admit``: the second identical run takes the report from the
    verdict cache and loads no verifier, HTTP client (``--fetch`` only), metadata model or dataclasses."""
    argv, env = verify_world(tmp_path)
    cold, warm = probe(argv, env), probe(argv, env)
    assert (json.loads(str(cold["stdout"]))["cache"], json.loads(str(warm["stdout"]))["cache"]) == ("miss", "hit")
    assert cold["rc"] == warm["rc"] == 0
    assert "sigstore" in tops(cold)
    assert off_path(warm, "verify-hit") == [], "\n".join(off_path(warm, "verify-hit"))
    bare = probe(argv, env, bare=True)  # nor pathlib
    assert json.loads(str(bare["stdout"]))["cache"] == "hit", bare
    assert bare["rc"] == 0 and off_path(bare, "verify-hit", bare=True) == [], \
        "\n".join(off_path(bare, "verify-hit", bare=True))


@pytest.mark.slow
def test_an_agent_hook_answering_for_a_command_loads_no_verifier_or_dataclasses(tmp_path: Path) -> None:
    """The pre-tool hook runs before every shell command an agent runs: for a command whose program has
    no evidence it answers (here denied: the policy denies programs it does not name); the first time it
    evaluates the program (and validates the policy), from then on it answers from the verdict cache
    without loading a verifier, dataclasses or platformdirs."""
    # The request comes on a standard input with bytes under it, as the agent gives it (the hook reads
    # ``sys.stdin.buffer``).
    argv, env = hook_world(tmp_path)
    for run in range(2):
        out = probe(argv, env, stdin=HOOK_REQUEST)
        answer = json.loads(out["stdout"])["hookSpecificOutput"]
        # ls has no evidence: UNSIGNED, which this policy denies — a decision, not an error (an internal
        # error denies too, and must not pass for one).
        assert answer["permissionDecision"] == "deny", answer
        reason = answer["permissionDecisionReason"]
        assert "ls -l" in reason and "UNSIGNED" in reason and "error" not in reason, answer
        if run == 0:
            assert "jsonschema" in tops(out), out  # the probe sees what a first answer loads
            continue
        assert off_path(out, "hook-hit") == [], "\n".join(off_path(out, "hook-hit"))


@pytest.mark.slow
def test_every_deferring_module_is_loaded_by_a_probed_command(tmp_path: Path) -> None:
    """DEFERRING (tests/fast_path.py) may name only modules the probed commands load: deferring pays
    there and nowhere else (tests/base/test_layers.py refuses a deferred import in any other module).
    The probed commands are those of the tests above: ``--version``, ``hash``, and ``admit`` (with a
    file and the embedded root, with and without an audit line), ``verify`` and a hook answer, each run
    twice: the first run fills the verdict cache (what a miss loads, e.g. the verifier's modules, which
    defer what only signing or some evidence needs), the second answers from it (the fast path). The
    hook answers through the console script's entry (cli/launch.py), as an agent runs it."""
    loaded = set(probe(["--version"])["modules"]) | set(probe(["hash", "./README.md"])["modules"])
    worlds: list[tuple[list[str], dict[str, str], str | None]] = []
    for name in ("admit", "embedded", "verify", "hook"):
        (tmp_path / name).mkdir()
    argv, env = admit_world(tmp_path / "admit")
    env["XDG_STATE_HOME"] = str(tmp_path / "state")  # where the audit line goes
    worlds += [([a for a in argv if a != "--no-audit"], env, None), (argv, env, None)]
    embedded, env = admit_world(tmp_path / "embedded", file_root=False)
    worlds += [(embedded, env, None), (*verify_world(tmp_path / "verify"), None),
               (*hook_world(tmp_path / "hook"), HOOK_REQUEST)]
    for argv, env, stdin in worlds:
        console = argv[0] == "hook"
        first, second = (probe(argv, env, stdin=stdin, console=console) for _ in range(2))
        if console:  # (the hook answers in its agent's format, without a cache field)
            assert second["rc"] == 0 and off_path(second, "hook-hit") == [], second
        else:
            assert json.loads(str(second["stdout"]))["cache"] == "hit", second
        loaded |= set(first["modules"]) | set(second["modules"])
    absent = sorted(fast_path.DEFERRING - loaded)
    assert not absent, (f"DEFERRING names {len(absent)} module(s) no probed command loads: {', '.join(absent)}; "
                        "take them off it (tests/fast_path.py) and let them import plainly at the top")
