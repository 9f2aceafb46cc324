"""What a CI engineer needs from one run (issue 26, item 4): a readable log on standard output and the
JSON and SARIF reports in files (``--json-output``/``--sarif-output``, semgrep's spelling), every
artifact of a release in one ``verify`` (a result each, the worst exit code), option values that start
with ``-`` taken as values, a command line that does not parse audited like any other refusal, and a
hint for the flags of gh, cosign and slsa-verifier that atip-trust spells differently or does not need.
Subprocesses of the real CLI, the shipped fixture, real audit logs."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from verify_helpers import run_cli

ROOT = Path(__file__).resolve().parents[2]
FX = ROOT / "fixtures" / "sigstore"
TOOL = FX / "artifacts" / "hello-tool"
BUNDLE = FX / "good" / "hello-tool.dsse.sigstore.json"
GENERATOR = ("https://github.com/slsa-framework/slsa-github-generator/.github/workflows/"
             "generator_generic_slsa3.yml@refs/tags/v2.1.0")
ISSUER = "https://token.actions.githubusercontent.com"
SIGNER = ("--trusted-root", str(FX / "trusted_root.json"), "--certificate-identity", GENERATOR,
          "--certificate-oidc-issuer", ISSUER)


def run(*argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATIP_TRUST_")}
    return run_cli(argv, timeout=120, cwd=cwd, env={**env, "CI": "true"})


def lines(log: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in log.read_text().splitlines()]


def test_one_verify_run_prints_text_and_writes_the_json_and_sarif_reports(tmp_path: Path) -> None:
    js, sarif = tmp_path / "out" / "report.json", tmp_path / "out" / "report.sarif"
    js.parent.mkdir()
    r = run("verify", str(TOOL), "--bundle", str(BUNDLE), *SIGNER, "--json-output", str(js),
            "--sarif-output", str(sarif), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"{TOOL}: VERIFIED -> allow")      # the readable log
    report = json.loads(js.read_text())
    assert report["trust_level"] == "VERIFIED" and report["decision"]["behavior"] == "allow"
    alone = run("verify", str(TOOL), "--bundle", str(BUNDLE), *SIGNER, "--format", "json", cwd=tmp_path)
    assert {k: v for k, v in json.loads(alone.stdout).items() if k != "cache"} == \
        {k: v for k, v in report.items() if k != "cache"}       # the same report as --format json
    log = json.loads(sarif.read_text())
    assert log["version"] == "2.1.0" and log["runs"][0]["results"] == []


def test_a_failed_run_writes_its_failure_into_the_report_files(tmp_path: Path) -> None:
    js, sarif = tmp_path / "r.json", tmp_path / "r.sarif"
    r = run("verify", str(tmp_path / "missing"), "--bundle", str(BUNDLE), *SIGNER, "--json-output", str(js),
            "--sarif-output", str(sarif), cwd=tmp_path)
    assert r.returncode == 2 and r.stdout == ""
    assert json.loads(js.read_text())["error"]["code"] == "ENVIRONMENT_ERROR"
    (result,) = json.loads(sarif.read_text())["runs"][0]["results"]
    assert result["ruleId"] == "atip-trust/error/environment_error"


def test_admit_and_scan_write_report_files_beside_their_text(tmp_path: Path) -> None:
    js = tmp_path / "admit.json"
    r = run("admit", str(TOOL), "--bundle", str(BUNDLE), *SIGNER, "--no-audit", "--json-output", str(js))
    assert r.stdout.startswith("deny: hello-tool (VERIFIED")     # default policy, no rule: ask -> deny in CI
    assert json.loads(js.read_text())["trust_level"] == "VERIFIED"
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "t").write_bytes(b"#!/bin/sh\n")
    (tools / "t").chmod(0o755)
    sarif = tmp_path / "scan.sarif"
    s = run("scan", str(tools), "--no-cache", "--sarif-output", str(sarif), cwd=tmp_path)
    assert s.returncode == 0 and "1 tools" in s.stdout, s.stderr
    assert json.loads(sarif.read_text())["runs"][0]["results"]


def test_several_artifacts_in_one_verify_get_a_result_each_and_the_worst_exit_code(tmp_path: Path) -> None:
    other = tmp_path / "other-tool"
    other.write_bytes(b"not the released bytes\n")
    r = run("verify", str(TOOL), str(other), "--bundle", str(BUNDLE), *SIGNER, "--format", "json")
    assert r.returncode == 1
    doc = json.loads(r.stdout)
    assert [x["trust_level"] for x in doc["results"]] == ["VERIFIED", "UNSIGNED"] and doc["exit_code"] == 1
    text = run("verify", str(TOOL), str(other), "--bundle", str(BUNDLE), *SIGNER, "-q")
    assert [ln.split(":")[1].split()[0] for ln in text.stdout.splitlines()] == ["VERIFIED", "UNSIGNED"]
    # An artifact that cannot be read is its own error result; the others are still verified.
    sarif = tmp_path / "all.sarif"
    worst = run("verify", str(TOOL), str(tmp_path / "gone"), "--bundle", str(BUNDLE), *SIGNER,
                "--format", "json", "--sarif-output", str(sarif))
    assert worst.returncode == 2
    first, second = json.loads(worst.stdout)["results"]
    assert first["trust_level"] == "VERIFIED" and second["error"]["code"] == "ENVIRONMENT_ERROR"
    rules = [x["ruleId"] for x in json.loads(sarif.read_text())["runs"][0]["results"]]
    assert "atip-trust/error/environment_error" in rules


def test_an_option_value_that_starts_with_a_dash_is_the_value(tmp_path: Path) -> None:
    log = tmp_path / "a.jsonl"
    r = run("admit", "/bin/ls", "--command", "-la", "--format", "json", "--audit-log", str(log))
    assert r.returncode in (1, 3), r.stderr  # decided (the default policy denies), not a usage error
    assert json.loads(r.stdout)["command"] == ["-la"] and lines(log)[-1]["command"] == ["-la"]


@pytest.mark.parametrize("argv, tool", [
    (["admit", "/bin/ls", "--no-such-flag", "--command", "status"], "ls"),
    (["exec", "--no-such-flag", "--", "/bin/ls", "-l"], "ls"),
    (["hook", "claude-code", "--no-such-flag"], None),
], ids=["admit", "exec", "hook"])
def test_a_command_line_that_does_not_parse_is_audited_as_a_denial(tmp_path: Path, argv: list[str],
                                                                    tool: str | None) -> None:
    log = tmp_path / "audit.jsonl"
    r = run(*argv[:1], "--audit-log", str(log), *argv[1:])
    assert r.returncode == 2 and "unrecognized arguments: --no-such-flag" in r.stderr
    (line,) = lines(log)
    assert line["decision"] == "deny" and line["error"]["code"] == "USAGE_ERROR" and line["tool"] == tool
    assert not run(*argv[:1], "--no-audit", "--audit-log", str(log), *argv[1:]).returncode == 0
    assert len(lines(log)) == 1  # --no-audit is honoured even when the line does not parse


@pytest.mark.parametrize("flag, hint", [
    ("-t", "--format json"),
    ("--new-bundle-format", "v0.1-v0.3"),
    ("--source-versioned-tag", "--source-tag"),
    ("--ca-roots", "--trusted-root"),
    ("--use-signed-timestamps", "timestamp authorities"),
])
def test_another_tools_flag_gets_a_hint(flag: str, hint: str) -> None:
    r = run("verify", str(TOOL), "--bundle", str(BUNDLE), *SIGNER, flag, "x")
    assert r.returncode == 2 and f"{flag}: " in r.stderr and hint in r.stderr, r.stderr


@pytest.mark.parametrize("argv", [["-b", str(BUNDLE)], ["-R", "atip-test/hello-tool"], ["-o", "atip-test"],
                                  ["--source-ref", "refs/tags/v1.0.0"], ["--signer-digest", "f" * 40]],
                         ids=lambda a: a[0])
def test_ghs_flags_are_taken_not_hinted(argv: list[str]) -> None:
    r = run("verify", str(TOOL), "--bundle", str(BUNDLE), *SIGNER, *argv)
    assert "unrecognized" not in r.stderr and r.returncode in (0, 1), r.stderr
    hinted = run("scan", "/nonexistent-dir", argv[0], argv[1])  # scan takes none of them: a hint names who does
    assert hinted.returncode == 2 and "take" in hinted.stderr, hinted.stderr
