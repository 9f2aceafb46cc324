"""`atip-trust metadata check` as users call it: exit 0 for the RFC's examples, exit 2 naming the JSON
path of the first error for every malformed document, in text, JSON and SARIF."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from atip_trust.cli.main import main

import verify_helpers
from make_metadata_fixtures import CURL_HASH, EMPTY_HASH, VALID, Case, malformed_cases

CLI = [sys.executable, "-m", "atip_trust"]
INCOMPLETE = [
    "gh-rfc-v0.6.json",
    "gh-rfc-v0.3-atip-0.1.json",
    "minimal-hello.json",
    "curl-legacy-shim-atip-0.1.json",
    "curl-shim-rfc-v0.6.json",
]


def run_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return verify_helpers.run_cli(args, timeout=timeout)


def assert_refused(res: subprocess.CompletedProcess[str], where: str) -> None:
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert "Traceback" not in res.stderr
    lines = res.stderr.splitlines()
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith(f"atip-trust: error: {where}: "), lines[0]


@pytest.mark.parametrize("path", sorted(VALID.glob("*.json")), ids=lambda p: p.name)
def test_rfc_examples_pass_metadata_check(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["metadata", "check", str(path)]) == 0
    cap = capsys.readouterr()
    assert "valid ATIP" in cap.out
    assert "not verified" in cap.out  # claims are labelled as claims
    assert cap.err == ""


def test_metadata_check_in_a_real_process() -> None:
    res = run_cli("metadata", "check", str(VALID / "gh-rfc-v0.6.json"))
    assert res.returncode == 0, res.stderr
    assert "valid ATIP 0.6 metadata for gh" in res.stdout
    assert "signature.identity: https://github.com/cli/cli/.github/workflows/release.yml@refs/tags/v2.45.0" in res.stdout
    assert res.stderr == ""


@pytest.mark.parametrize("name", INCOMPLETE)
def test_strict_refuses_the_examples_that_omit_descriptions(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["metadata", "check", str(VALID / name)]) == 0
    out = capsys.readouterr().out
    assert "warning: $." in out and "'description' is a required property" in out
    assert main(["metadata", "check", "--strict", str(VALID / name)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("atip-trust: error: $.commands")
    assert "'description' is a required property" in err


def test_the_issue_example_message(tmp_path: Path) -> None:
    bad = json.loads((VALID / "gh-rfc-v0.6.json").read_text())
    bad["commands"]["pr"]["effects"] = {"destructive": "yes"}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    res = run_cli("metadata", "check", str(path))
    assert res.returncode == 2
    assert res.stderr == "atip-trust: error: $.commands.pr.effects.destructive: 'yes' is not of type 'boolean'\n"


@pytest.mark.parametrize("case", malformed_cases(), ids=lambda c: c.name)
def test_malformed_file_exits_2_naming_the_path(
    case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / f"{case.name}.json"
    f.write_bytes(case.data)
    argv = ["metadata", "check", str(f)]
    if case.lookup:
        argv += ["--digest", case.lookup]
    assert main(argv) == 2
    cap = capsys.readouterr()
    assert cap.out == ""
    lines = cap.err.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"atip-trust: error: {case.path}: "), lines[0]
    assert case.says in lines[0]


def test_json_output_of_a_valid_shim() -> None:
    res = run_cli("metadata", "check", "--format", "json", "--digest", CURL_HASH, str(VALID / "curl-shim-rfc-v0.6.json"))
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["valid"] is True
    assert out["kind"] == "shim"
    assert out["version"] == "0.6"
    assert out["path"] == str(VALID / "curl-shim-rfc-v0.6.json")
    assert out["claims"]["binary"] == {
        "hash": CURL_HASH,
        "name": "curl",
        "version": "8.4.0",
        "platform": "darwin-arm64",
    }
    assert out["claims"]["shim_signature"]["identity"] == "shim-maintainers@atip.dev"
    assert len(out["warnings"]) == 6


def test_json_output_of_a_failure_is_one_object(tmp_path: Path) -> None:
    res = run_cli("metadata", "check", "--format", "json", "--digest", EMPTY_HASH, str(VALID / "curl-shim-rfc-v0.6.json"))
    assert res.returncode == 2
    out = json.loads(res.stdout)
    assert out["valid"] is False
    assert out["error"]["location"] == "$.binary.hash"
    assert EMPTY_HASH in out["error"]["message"] and CURL_HASH in out["error"]["message"]
    assert len(res.stderr.splitlines()) == 1


def test_sarif_output_of_a_failure_has_one_result() -> None:
    res = run_cli("metadata", "check", "--format", "sarif", "--strict", str(VALID / "minimal-hello.json"))
    assert res.returncode == 2
    log = json.loads(res.stdout)
    assert log["version"] == "2.1.0"
    (result,) = log["runs"][0]["results"]
    assert result["ruleId"] == "atip-trust/metadata/invalid"
    assert result["properties"]["location"] == '$.commands[""].arguments[0]'
    assert [r["id"] for r in log["runs"][0]["tool"]["driver"]["rules"]] == ["atip-trust/metadata/invalid"]


def test_sarif_output_of_a_valid_document_has_no_errors() -> None:
    res = run_cli("metadata", "check", "--format", "sarif", str(VALID / "minimal-mytool-atip-0.1.json"))
    assert res.returncode == 0
    assert json.loads(res.stdout)["runs"][0]["results"] == []


def test_100_mb_metadata_file_is_refused(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    with big.open("wb") as f:
        f.truncate(100 * 1024 * 1024)
    res = run_cli("metadata", "check", str(big), timeout=20)
    assert_refused(res, str(big))
    assert "over the cap" in res.stderr


def test_10000_deep_metadata_is_refused(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_bytes(b"[" * 10_000 + b"]" * 10_000)
    res = run_cli("metadata", "check", str(deep), timeout=20)
    assert_refused(res, "$")
    assert "deeper than" in res.stderr


def test_fifo_metadata_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    res = run_cli("metadata", "check", str(fifo), timeout=20)
    assert_refused(res, str(fifo))


@pytest.mark.parametrize("bad", ["sha256:ABC", "md5:00", EMPTY_HASH.upper(), ""])
def test_bad_digest_flag_is_a_usage_error(bad: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["metadata", "check", str(VALID / "curl-shim-rfc-v0.6.json"), "--digest", bad]) == 2
    err = capsys.readouterr().err
    assert err.startswith("atip-trust: error: --digest: ")


def test_metadata_without_subcommand_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["metadata"]) == 2
    assert "Traceback" not in capsys.readouterr().err
