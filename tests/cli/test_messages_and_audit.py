"""Messages and audit lines a new user can act on (issue 34, item 6): the deciding reason first and each
failure once; a wrong trusted root named as a root mismatch (not ``CHECK_TIME_FAIL … candidates
exhausted``); a hint to pass ``--bundle`` when nothing was given; the audit line of a program the hook
passed to the agent says ``passthrough`` and why (not the admission's deny it did not enforce); and a
new audit record never glued onto a torn last line. The real CLI as a subprocess, the shipped fixture
and the project's test Sigstore."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest

import testsigstore
from gate_world import make_world
from verify_helpers import run_cli

ROOT = Path(__file__).resolve().parents[2]
FX = ROOT / "fixtures" / "sigstore"
TOOL = FX / "artifacts" / "hello-tool"
GENERATOR = ("https://github.com/slsa-framework/slsa-github-generator/.github/workflows/"
             "generator_generic_slsa3.yml@refs/tags/v2.1.0")
SIGNER = ("--certificate-identity", GENERATOR, "--certificate-oidc-issuer",
          "https://token.actions.githubusercontent.com")


def run(*argv: str, cwd: Path, stdin: str | None = None, env: dict[str, str] | None = None
        ) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("ATIP_TRUST_")}
    return run_cli(argv, timeout=120, cwd=cwd, input=stdin, env={**base, "CI": "true", **(env or {})})


def lines(log: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in log.read_text().splitlines()]


@pytest.fixture(scope="module")
def other_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Another instance's trusted root: the fixture's bundles do not chain to it."""
    return testsigstore.TestSigstore(seed=3406).write_trusted_root(tmp_path_factory.mktemp("root") / "root.json")


@pytest.mark.parametrize("bundle", ["v0.3", "dsse", "v0.1", "intoto"])
def test_a_wrong_trusted_root_is_a_root_mismatch_said_once_and_first(tmp_path: Path, other_root: Path,
                                                                      bundle: str) -> None:
    r = run("verify", str(TOOL), "--bundle", str(FX / "good" / f"hello-tool.{bundle}.sigstore.json"), *SIGNER,
            "--trusted-root", str(other_root), "--no-cache", cwd=tmp_path)
    assert r.returncode == 1
    out = r.stdout.splitlines()
    assert ": UNVERIFIED -> deny" in out[0]
    assert out[1].startswith("  deny: CHECK_CERTIFICATE_CHAIN_FAIL: root mismatch:"), r.stdout  # the cause first
    assert "--trusted-root FILE" in out[1] and "--staging" in out[1]  # the flags that pick the right root
    assert r.stdout.count("root mismatch") == 1, r.stdout  # each failure once
    assert "CHECK_TIME_FAIL" not in r.stdout
    doc = json.loads(run("verify", str(TOOL), "--bundle", str(FX / "good" / f"hello-tool.{bundle}.sigstore.json"),
                         *SIGNER, "--trusted-root", str(other_root), "--no-cache", "--format", "json",
                         cwd=tmp_path).stdout)
    assert doc["decision"]["reasons"][0]["code"] == "CHECK_CERTIFICATE_CHAIN_FAIL"


def test_every_failed_check_is_printed_once_with_its_evidence(tmp_path: Path) -> None:
    evil = tmp_path / "evil.json"
    w = testsigstore.TestSigstore(seed=3407)
    evil.write_text(json.dumps(w.sign_artifact(TOOL.read_bytes(), identity=GENERATOR,
                                               issuer="https://token.actions.githubusercontent.com")))
    r = run("verify", str(TOOL), "--bundle", str(evil), *SIGNER, "--trusted-root", str(FX / "trusted_root.json"),
            "--no-cache", cwd=tmp_path)
    assert r.returncode == 1
    failures = [ln for ln in r.stdout.splitlines() if "FAIL" in ln]
    assert failures and all(ln.startswith("  deny: ") and ln.endswith("[evil.json]") for ln in failures), r.stdout
    messages = [ln.split(": ", 2)[2] for ln in failures]
    assert len(messages) == len(set(messages))


@pytest.mark.parametrize("argv", [["admit", str(TOOL), "--no-audit"], ["exec", "--no-audit", "--", str(TOOL)],
                                  ["verify", str(TOOL), *SIGNER]], ids=lambda a: a[0])
def test_nothing_given_gets_a_hint_to_pass_the_bundle(tmp_path: Path, argv: list[str]) -> None:
    r = run(*argv, cwd=tmp_path)
    assert r.returncode == 1
    assert "hint: no signature or attestation was given" in r.stdout + r.stderr and "--bundle FILE" in r.stdout + r.stderr
    signed = run(*argv[:2], "--bundle", str(FX / "good" / "hello-tool.dsse.sigstore.json"), *argv[2:],
                 "--trusted-root", str(FX / "trusted_root.json"), cwd=tmp_path) if argv[0] == "verify" else None
    assert signed is None or "hint:" not in signed.stdout


def readme_hook(home: Path) -> list[str]:
    """The Claude Code hook with the flags the README's table installs it with (``~`` is ``home``)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.search(r"`atip-trust hook install claude-code([^`]*)`", text)
    assert found, "the README installs no Claude Code hook"
    words = [w.replace("~", str(home), 1) if w.startswith("~") else w for w in shlex.split(found.group(1))]
    return ["hook", "claude-code", *words]


def test_the_audit_line_of_a_passed_through_program_says_passthrough_and_why(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    line = json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash",
                       "tool_input": {"command": "ls -la | head -2"}, "cwd": str(tmp_path)})
    r = run(*readme_hook(tmp_path), "--audit-log", str(log), cwd=tmp_path, stdin=line, env={"HOME": str(tmp_path)})
    assert r.returncode == 0 and '"deny"' not in r.stdout, r.stdout + r.stderr
    got = lines(log)
    assert [x["tool"] for x in got] == ["ls", "head"]
    for x in got:
        assert x["decision"] == "passthrough", x
        assert x["hook"]["answer"] == "passthrough" and x["hook"]["admission"] == "deny"
        assert "hooks.unlisted is passthrough" in x["hook"]["why"]


def test_a_program_the_hook_denies_is_still_audited_as_a_denial(tmp_path: Path) -> None:
    """The attack on the change: a denial must never be logged as passthrough."""
    w = make_world(tmp_path)
    line = json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash",
                       "tool_input": {"command": "gh pr list"}, "cwd": str(tmp_path)})
    r = run("hook", "claude-code", "--policy", str(w.policy), "--bundle-dir", str(w.bundles), "--audit-log",
            str(w.audit), cwd=tmp_path, stdin=line, env=w.env(signed=False))
    assert json.loads(r.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    (x,) = lines(w.audit)
    assert x["decision"] == "deny" and "hook" not in x


def test_a_new_audit_record_never_joins_a_torn_last_line(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    fragment = '{"time":"2026-11-28T06:00:00Z","tool":"gh","decision":"al'  # a writer killed mid-line
    log.write_text(json.dumps({"tool": "before", "decision": "deny"}) + "\n" + fragment)
    r = run("admit", str(TOOL), "--audit-log", str(log), cwd=tmp_path)
    assert r.returncode == 1
    text = log.read_text().splitlines()
    assert text[1] == fragment  # kept, visible, on its own line
    assert json.loads(text[0])["tool"] == "before" and json.loads(text[2])["tool"] == "hello-tool"
    assert len(text) == 3
    run("admit", str(TOOL), "--audit-log", str(log), cwd=tmp_path)  # an intact log gets no empty line
    assert len(log.read_text().splitlines()) == 4 and json.loads(log.read_text().splitlines()[3])
