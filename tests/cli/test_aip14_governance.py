"""AIP-14 governance fields honoured, through ``atip-trust admit``/``exec`` as a user runs them (issue 36
item 4): ``implements`` inheritance with widening refused, ``driver_constraints``, the 30 s default
``timeout_ms`` ceiling, the field limits, ``id@major`` in the audit line, the ``execute`` migration
warning. The contracts are signed with the test Sigstore by the signer the policy trusts, so each
refusal is the contract's, not a missing signature's."""

from __future__ import annotations

import hashlib
import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from atip_trust.facts.aip14 import DEFAULT_TIMEOUT_MS, parse_tool_md

from test_aip14_cli import PURE_READ, _contract, _flags
from test_effects_model import ISSUER, ORG_ID, Signed, _codes, signed  # noqa: F401 - fixture
from verify_helpers import cli_subprocess


def _inline(action: str) -> str:
    return f"implements: {{inline: {{id: storage.commit, {action}}}}}\n"


def test_aip14_implements_a_tool_saying_auto_0_under_an_always_3_action_is_refused(signed: Signed) -> None:
    path, bundle = _contract(signed, "risk_level: 0\napproval: auto\n"
                             + _inline("risk_level: 3, approval: always"))
    out = signed.admit("status", _flags(path, bundle))
    assert out["exit"] == 2 and out["decision"]["behavior"] == "deny", out
    assert "widens risk_level" in json.dumps(out)


def test_aip14_implements_an_approval_laxer_than_the_action_is_refused(signed: Signed) -> None:
    path, bundle = _contract(signed, "risk_level: 3\napproval: auto\n" + _inline("risk_level: 3, approval: always"))
    out = signed.admit("status", _flags(path, bundle))
    assert out["exit"] == 2 and "relaxes approval" in json.dumps(out), out


def test_aip14_implements_dropping_an_action_mutates_is_refused(signed: Signed) -> None:
    path, bundle = _contract(signed, "mutates: []\n" + _inline('mutates: ["database:orders"]'))
    out = signed.admit("status", _flags(path, bundle))
    assert out["exit"] == 2 and "drops mutates" in json.dumps(out), out


def test_aip14_implements_the_tool_inherits_the_action_floor(signed: Signed) -> None:
    """A pure read that says nothing of approval, under an action that always asks: it asks."""
    path, bundle = _contract(signed, "idempotent: true\ncost_class: trivial\nmutates: []\n"
                             + _inline("risk_level: 0, approval: always"))
    out = signed.admit("status", _flags(path, bundle))
    assert out["exit"] == 1 and "APPROVAL_REQUIRED" in _codes(out), out
    assert any(c["name"] == "contract.implements" and c["status"] == "pass" for c in out["checks"])


def test_aip14_implements_an_action_md_beside_the_contract(signed: Signed) -> None:
    folder = signed.d / "with-action"
    (folder / "actions").mkdir(parents=True)
    (folder / "actions" / "ACTION.md").write_text("---\nid: storage.commit\nrisk_level: 3\napproval: always\n---\n")
    path, bundle = _contract(signed, "risk_level: 1\nimplements: ./actions/ACTION.md\n", folder=folder)
    out = signed.admit("status", _flags(path, bundle))
    assert out["exit"] == 2 and "widens risk_level: action storage.commit 3, tool 1" in json.dumps(out), out


def test_aip14_implements_an_action_nobody_can_resolve_is_refused(signed: Signed) -> None:
    path, bundle = _contract(signed, PURE_READ + "implements: storage:commit\n")
    out = signed.admit("status", _flags(path, bundle))
    assert out["exit"] == 2 and "unknown action 'storage:commit'" in json.dumps(out), out


@pytest.mark.parametrize("constraint", ["driver_constraints: {forbid: [cli]}\n",
                                        "driver_constraints: {require_kind: [http, sdk]}\n"])
def test_aip14_driver_constraints_that_exclude_cli_deny_a_command_line_tool(signed: Signed, constraint: str) -> None:
    path, bundle = _contract(signed, PURE_READ + constraint)
    out = signed.admit("status", _flags(path, bundle))
    assert out["exit"] == 1 and "AIP14_DRIVER_FORBIDDEN" in _codes(out), out
    # Unsigned, it denies too: a contract only tightens.
    path, _ = _contract(signed, PURE_READ + constraint, sign_as=None)
    assert "AIP14_DRIVER_FORBIDDEN" in _codes(signed.admit("status", _flags(path, None)))


def test_aip14_driver_constraints_that_allow_cli_change_nothing(signed: Signed) -> None:
    path, bundle = _contract(signed, PURE_READ + "driver_constraints: {forbid: [http], require_kind: [cli]}\n")
    out = signed.admit("status", _flags(path, bundle))
    assert out["exit"] == 0 and "AIP14_DRIVER_FORBIDDEN" not in _codes(out), out


@pytest.mark.parametrize(("field", "value", "message"), [
    ("name", "x" * 81, "name: expected 1-80 characters, got 81"),
    ("description", "d" * 2001, "description: expected at most 2000 characters, got 2001"),
    ("version", "banana", "version: expected a semver string"),
    ("version", "1.0", "version: expected a semver string"),
])
def test_aip14_field_limits(signed: Signed, field: str, value: str, message: str) -> None:
    path, bundle = _contract(signed, PURE_READ)
    text = path.read_text()
    old = {"name": "name: gh\n", "description": "description: the tool\n", "version": "version: 1.0.0\n"}[field]
    path.write_text(text.replace(old, f"{field}: '{value}'\n", 1))
    out = signed.admit("status", ["--contract", str(path)])
    assert out["exit"] == 2 and message in json.dumps(out), out


def test_aip14_field_limits_at_the_boundary_are_accepted() -> None:
    front = (f"---\nname: '{'n' * 80}'\nid: gh\ndescription: '{'d' * 2000}'\nversion: 2.1.0-rc.1+build.5\n"
             "inputs: {}\noutputs: {}\n---\n")
    contract = parse_tool_md(front.encode())
    assert contract.identity == "gh@2"


def test_aip14_stable_identity_id_at_major_is_in_the_audit_line(signed: Signed, tmp_path: Path) -> None:
    path, bundle = _contract(signed, PURE_READ)
    log = tmp_path / "audit.jsonl"
    r = cli_subprocess("admit", str(signed.tool), "--command=status", *_flags(path, bundle), "--trusted-root",
                       str(signed.d / "trusted_root.json"), "--bundle", str(signed.bundle),
                       "--certificate-identity", ORG_ID, "--certificate-oidc-issuer", ISSUER,
                       "--non-interactive", "--no-cache", "--audit-log", str(log), "--format", "json")
    assert r.code == 0, r.out + r.err
    [line] = [json.loads(x) for x in log.read_text().splitlines()]
    assert line["contract"]["id"] == "gh@1" and line["contract"]["mutates"] == []


def test_aip14_execute_field_gets_a_migration_warning(signed: Signed) -> None:
    path, bundle = _contract(signed, PURE_READ + "execute: './run.ts'\n")
    out = signed.admit("status", _flags(path, bundle))
    [check] = [c for c in out["checks"] if c["name"] == "contract.migration"]
    assert "AIP-30 DRIVER" in check["message"]
    assert out["exit"] == 0  # a warning, not a refusal: the contract's governance still holds


def test_aip14_timeout_ms_defaults_to_30_seconds() -> None:
    front = "---\nname: gh\nid: gh\ndescription: d\nversion: 1.0.0\ninputs: {}\noutputs: {}\n---\n"
    assert parse_tool_md(front.encode()).timeout_ms == DEFAULT_TIMEOUT_MS == 30000


@pytest.mark.slow
def test_aip14_default_timeout_ms_ceiling_stops_a_real_slow_tool(signed: Signed, tmp_path: Path) -> None:
    """A contract that declares no timeout_ms still has AIP-14's 30 s ceiling: a tool that would run
    45 s is stopped by SIGALRM (``exec sleep``: the interval timer survives execve, no busy loop)."""
    body = b"#!/bin/sh\nexec sleep 45\n"
    slow = tmp_path / "bin" / "gh"
    slow.parent.mkdir()
    slow.write_bytes(body)
    slow.chmod(0o755)
    bundles = tmp_path / "bundles" / "sha256"
    bundles.mkdir(parents=True)
    for data in (Path("/bin/sh").read_bytes(), body):
        (bundles / f"{hashlib.sha256(data).hexdigest()}.sigstore.json").write_text(
            json.dumps(signed.ts.sign_artifact(data, identity=ORG_ID, issuer=ISSUER)))
    policy = tmp_path / "allow.json"
    doc = json.loads((Path(__file__).resolve().parents[2] / "policies" / "default.json").read_text())
    doc["permissions"] = {"allow": ["gh *", "sh"]}
    policy.write_text(json.dumps(doc))
    path, bundle = _contract(signed, PURE_READ)
    r = subprocess.run(
        [sys.executable, "-m", "atip_trust", "exec", "--policy", str(policy), "--trusted-root",
         str(signed.d / "trusted_root.json"), "--certificate-identity", ORG_ID, "--certificate-oidc-issuer",
         ISSUER, "--bundle-dir", str(tmp_path / "bundles"), *_flags(path, bundle), "--no-audit",
         "--non-interactive", "--", str(slow), "status"],
        capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)
    # Killed by the ceiling's SIGALRM (the tool itself would have ended with 0 after 45 s): the signal
    # is the proof, not the clock.
    assert r.returncode == -signal.SIGALRM, (r.returncode, r.stdout, r.stderr)
