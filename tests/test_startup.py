"""Start-up: a subcommand imports only what it uses (each subcommand's parser is built on its own), so
`--version` and `hash` never load sigstore, cryptography, jsonschema or httpx; and an `admit` whose trust
report and policy come from the verdict cache loads none of them either (_base/lazy.py). Figures:
bench/startup.py, bench/run.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import testsigstore

REPO = Path(__file__).resolve().parent.parent
HEAVY = ("sigstore", "sigstore_models", "cryptography", "jsonschema", "referencing", "httpx",
         "rfc3161_client", "rich", "in_toto_attestation", "google")
#: Our own modules a warm admission has no use for (no metadata, registry, provenance requirement or
#: SARIF output): the provenance model, the registry client and its HTTP layer, SARIF, and the
#: evaluation itself (its inputs are evaluation/inputs.py).
OWN_COLD = ("atip_trust.provenance.slsa", "atip_trust.registry.client", "atip_trust.net.fetch",
            "atip_trust.facts.metadata", "atip_trust.admission.metadata_trust", "atip_trust.cli.sarif",
            "atip_trust.evaluation.evaluate")

#: Standard-library and small third-party modules a cache-hit admission (ATIP_CACHE_DIR set, no audit
#: line) has no use for, each a few ms of start-up (docs/caching.md): dataclasses (and inspect),
#: hmac, platformdirs (and tempfile, shutil, random), shlex, threads and their pools, base64 and copy.
#: The standard library's own answers do load, as any Python program's: typing (with contextlib) for the
#: value classes' ``dataclass_transform`` (_base/record.py), hashlib (OpenSSL) for every digest, datetime
#: for a waiver's expiry and a decision's time.
STD_COLD = ("dataclasses", "inspect", "hmac", "platformdirs", "tempfile", "shutil", "random", "shlex",
            "threading", "queue", "concurrent.futures", "base64", "copy")

PROBE = """
import json, sys
from atip_trust.cli.main import main
rc = main(json.loads(sys.argv[1]))
heavy = sorted({m.split('.')[0] for m in sys.modules} & set(json.loads(sys.argv[2])))
own = sorted(set(sys.modules) & set(json.loads(sys.argv[3])))
std = sorted(set(sys.modules) & set(json.loads(sys.argv[4])))
sys.stderr.write(json.dumps({"rc": rc, "heavy": heavy, "own": own, "std": std}) + chr(10))
"""


#: What a cache-hit admission needs of the standard library is checked in a bare interpreter (``-S``: no
#: site-packages, whose editable-install hook imports pathlib, re and urllib at start-up, and no
#: third-party package at all): pathlib (with urllib.parse and ipaddress) is not among it (docs/caching.md);
#: typing, contextlib, hashlib and datetime are (STD_COLD says why).
BARE_COLD = ("pathlib", "urllib.parse", "ipaddress")


def probe(argv: list[str], env: dict[str, str] | None = None, *, bare: bool = False,
          cold: tuple[str, ...] = STD_COLD) -> dict[str, object]:
    """Run the CLI's ``main(argv)`` in a fresh interpreter; its exit code and the heavy packages it
    loaded (top-level names of HEAVY found in ``sys.modules`` afterwards), and which of OWN_COLD and
    ``cold``. ``bare``: without site-packages (``-S``; the package from this checkout)."""
    p = subprocess.run([sys.executable, *(["-S"] if bare else []), "-c", PROBE, json.dumps(argv),
                        json.dumps(HEAVY), json.dumps(OWN_COLD), json.dumps(cold)], cwd=REPO,
                       capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL, env=env)
    out: dict[str, object] = json.loads(p.stderr.strip().splitlines()[-1])
    out["stdout"] = p.stdout
    return out


@pytest.mark.parametrize("argv", [["--version"], ["hash", "./README.md"], ["hash", "--format", "json",
                                                                            "./pyproject.toml"]])
def test_version_and_hash_load_no_verification_stack(argv: list[str]) -> None:
    out = probe(argv)
    assert (out["rc"], out["heavy"]) == (0, []), out
    # One file: no thread pool (concurrent.futures imports logging), no dataclasses, no platformdirs.
    assert not {"dataclasses", "concurrent.futures", "platformdirs", "shutil"} & set(out["std"]), out  # type: ignore[arg-type]
    bare = probe(argv, bare=True, cold=BARE_COLD)  # nor pathlib (a bare interpreter)
    assert (bare["rc"], bare["heavy"], bare["std"]) == (0, [], []), bare


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


@pytest.mark.parametrize("root", ["file", "embedded"])
def test_a_cache_hit_admit_loads_no_verifier_schema_validator_http_or_terminal_library(
        tmp_path: Path, root: str) -> None:
    """The warm path: the same keyless-signed tool, bundle, policy and root a second time. The first
    (a miss) really verifies, so it loads sigstore and cryptography and validates the policy with
    jsonschema; the second reuses the trust report and the policy's validation and loads none of
    them, nor httpx or rich, and decides the same. With the embedded root (no --trusted-root), the
    root is found and digested without importing sigstore."""
    ts = testsigstore.TestSigstore(seed=7)
    body = b"#!/bin/sh\necho tool\n"
    tool = tmp_path / "tool"
    tool.write_bytes(body)
    tool.chmod(0o755)
    bundle = tmp_path / "tool.sigstore.json"
    bundle.write_text(json.dumps(ts.sign_artifact(body, identity=ID, issuer=ISS)))
    trust: dict[str, object] = {"signers": [{"identity": ID, "issuer": ISS}]}
    argv = ["admit", str(tool), "--command", "status", "--bundle", str(bundle), "--no-audit",
            "--format", "json", "--policy", str(tmp_path / "policy.json")]
    if root == "file":
        trust["trustedRoots"] = [{"path": str(ts.write_trusted_root(tmp_path / "trusted_root.json"))}]
        argv += ["--trusted-root", str(tmp_path / "trusted_root.json")]
    (tmp_path / "policy.json").write_text(json.dumps({
        "version": 1, "trust": trust,
        "permissions": {"allow": [{"rule": "tool *", "minTrustLevel": "VERIFIED"}]}}))
    env = {**os.environ, "ATIP_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("ATIP_TRUST_ORG_POLICY", None)

    cold, warm = probe(argv, env), probe(argv, env)
    cold_out, warm_out = json.loads(str(cold["stdout"])), json.loads(str(warm["stdout"]))
    assert cold_out["cache"] == "miss" and warm_out["cache"] == "hit", (cold, warm)
    # The probe sees what a verification loads (so the empty list below is not for want of looking).
    assert {"sigstore", "cryptography", "jsonschema"} <= set(cold["heavy"])  # type: ignore[arg-type]
    assert warm["heavy"] == [], warm["heavy"]
    assert warm["own"] == [], warm["own"]
    assert warm["std"] == [], warm["std"]
    assert "dataclasses" in cold["std"]  # type: ignore[operator]
    assert cold["rc"] == warm["rc"] == (0 if root == "file" else 1)
    if root == "file":  # (the embedded root is found through the sigstore package: not in a bare run)
        bare = probe(argv, env, bare=True, cold=BARE_COLD)
        assert json.loads(str(bare["stdout"]))["decision"] == warm_out["decision"], bare
        assert (bare["rc"], bare["heavy"], bare["std"]) == (0, [], []), bare
        # ... and it does look: a miss in the same bare interpreter loads them (through the verifier,
        # which is not there to load: the run stops with exit 2, having imported pathlib first).
        assert "pathlib" in probe([*argv, "--no-cache"], env, bare=True, cold=BARE_COLD)["std"]
        # As run by default: no ATIP_CACHE_DIR, an audit line. The folders are platformdirs' (XDG here),
        # found without importing it (state/dirs.py): the bare interpreter has no platformdirs at all.
        home = {k: v for k, v in env.items() if k != "ATIP_CACHE_DIR"}
        home.update(XDG_CACHE_HOME=str(tmp_path / "xdg-cache"), XDG_STATE_HOME=str(tmp_path / "xdg-state"))
        audited = [a for a in argv if a != "--no-audit"]
        assert json.loads(str(probe(audited, home)["stdout"]))["cache"] == "miss"
        default = probe(audited, home, bare=True, cold=(*BARE_COLD, "platformdirs"))
        assert json.loads(str(default["stdout"]))["cache"] == "hit", default
        assert (default["rc"], default["heavy"], default["std"]) == (0, [], []), default
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


def test_a_cache_hit_verify_loads_no_verifier_http_client_or_metadata_model(tmp_path: Path) -> None:
    """``verify`` has the same warm path as ``admit``: the second identical run takes the report from the
    verdict cache and loads no verifier, HTTP client (``--fetch`` only), metadata model or dataclasses."""
    ts = testsigstore.TestSigstore(seed=7)
    body = b"#!/bin/sh\necho tool\n"
    tool = tmp_path / "tool"
    tool.write_bytes(body)
    bundle = tmp_path / "tool.sigstore.json"
    bundle.write_text(json.dumps(ts.sign_artifact(body, identity=ID, issuer=ISS)))
    root = ts.write_trusted_root(tmp_path / "trusted_root.json")
    argv = ["verify", str(tool), "--bundle", str(bundle), "--trusted-root", str(root),
            "--certificate-identity", ID, "--certificate-oidc-issuer", ISS, "--format", "json"]
    env = {**os.environ, "ATIP_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("ATIP_TRUST_ORG_POLICY", None)
    cold, warm = probe(argv, env), probe(argv, env)
    assert (json.loads(str(cold["stdout"]))["cache"], json.loads(str(warm["stdout"]))["cache"]) == ("miss", "hit")
    assert cold["rc"] == warm["rc"] == 0
    assert "sigstore" in cold["heavy"]  # type: ignore[operator]
    assert (warm["heavy"], warm["own"], warm["std"]) == ([], [], []), warm
    bare = probe(argv, env, bare=True, cold=BARE_COLD)  # nor pathlib
    assert json.loads(str(bare["stdout"]))["cache"] == "hit", bare
    assert (bare["rc"], bare["heavy"], bare["std"]) == (0, [], []), bare


#: What the agent hook may load that an admission does not: bash's grammar (tree-sitter-bash's package imports importlib.resources, which brings tempfile, shutil and random).
HOOK_COLD = tuple(m for m in STD_COLD if m not in ("tempfile", "shutil", "random"))


def test_an_agent_hook_answering_for_a_command_loads_no_verifier_or_dataclasses(tmp_path: Path) -> None:
    """The pre-tool hook runs before every shell command an agent runs: for a command whose program has
    no evidence it answers (here denied: the policy denies programs it does not name); the first time it
    evaluates the program (and validates the policy), from then on it answers from the verdict cache
    without loading a verifier, dataclasses or platformdirs."""
    # A program (``true`` would be a shell builtin: nothing to admit, no answer), on a standard input
    # with bytes under it, as the agent gives it (the hook reads ``sys.stdin.buffer``).
    request = json.dumps({"session_id": "s", "hook_event_name": "PreToolUse", "tool_name": "Bash",
                          "tool_input": {"command": "ls -l"}})
    probe_hook = PROBE.replace("rc = main(", "sys.stdin = __import__('io').TextIOWrapper(__import__('io')"
                               ".BytesIO(REQUEST.encode())); rc = main(")
    env = {**os.environ, "ATIP_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("ATIP_TRUST_ORG_POLICY", None)
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps({"version": 1, "hooks": {"unlisted": "deny"}}))
    root = str(REPO / "fixtures" / "sigstore" / "trusted_root.json")
    for run in range(2):
        p = subprocess.run([sys.executable, "-c", f"REQUEST = {request!r}\n" + probe_hook,
                            json.dumps(["hook", "claude-code", "--no-audit", "--trusted-root", root, "--policy",
                                        str(policy)]),
                            json.dumps(HEAVY), json.dumps(OWN_COLD), json.dumps(HOOK_COLD)], cwd=REPO,
                           capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL, env=env)
        out = json.loads(p.stderr.strip().splitlines()[-1])
        answer = json.loads(p.stdout)["hookSpecificOutput"]
        # ls has no evidence: UNSIGNED, which this policy denies — a decision, not an error (an internal
        # error denies too, and must not pass for one).
        assert answer["permissionDecision"] == "deny", answer
        reason = answer["permissionDecisionReason"]
        assert "ls -l" in reason and "UNSIGNED" in reason and "error" not in reason, answer
        if run == 0:
            assert "jsonschema" in out["heavy"], out  # the probe sees what a first answer loads
            continue
        assert (out["heavy"], out["std"]) == ([], []), out
