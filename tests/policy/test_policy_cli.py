"""`atip-trust policy check|explain` as users call it: shipped policies pass, malformed ones exit 2
naming the JSON path, unsafe org policy files are refused."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BAD = ROOT / "fixtures" / "policy" / "bad"
INDEX: dict[str, str] = json.loads((BAD / "index.json").read_text())


def cli_subprocess(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "atip_trust", *args], capture_output=True, text=True,
                          check=False, timeout=60, env={**os.environ, "CI": "true"}, stdin=subprocess.DEVNULL)


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """In-process through the same parser and catch point (fast); a few tests use the subprocess."""
    from verify_helpers import cli as run_in_process

    r = run_in_process(*args)
    return subprocess.CompletedProcess(list(args), r.code, r.out, r.err)


@pytest.mark.parametrize("path", sorted((ROOT / "policies").glob("*.json")), ids=lambda p: p.name)
def test_policy_check_passes_every_shipped_policy(path: Path) -> None:
    r = cli("policy", "check", str(path))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"ok: {path}")


def test_there_are_at_least_twenty_malformed_policies() -> None:
    assert len(INDEX) >= 20


@pytest.mark.parametrize("name", sorted(INDEX))
def test_malformed_policy_exits_2_naming_the_json_path(name: str) -> None:
    r = cli("policy", "check", str(BAD / name))
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert r.stdout == ""
    assert "Traceback" not in r.stderr
    assert r.stderr.startswith(f"atip-trust: error: {INDEX[name]}: {name}: "), r.stderr


def test_malformed_policy_json_output_names_the_path() -> None:
    r = cli_subprocess("policy", "check", str(BAD / "builder-level-5.json"), "--format", "json")
    assert r.returncode == 2
    out = json.loads(r.stdout)
    assert out["error"]["path"] == "$.trust.trustedBuilders[0].level"
    assert out["decision"]["behavior"] == "deny"


def test_unknown_key_message_names_the_key() -> None:
    r = cli("policy", "check", str(BAD / "unknown-top-key.json"))
    assert "allowEverything" in r.stderr


def test_explain_says_what_the_policy_allows_in_plain_words() -> None:
    r = cli("policy", "explain", str(ROOT / "policies" / "enterprise-strict.json"))
    assert r.returncode == 0, r.stderr
    text = r.stdout
    assert "Tools whose bytes show tampering (COMPROMISED) are always denied." in text
    assert "Every tool must be at least VERIFIED." in text
    assert "gh pr view * — only when the tool is at least VERIFIED" in text
    assert "destructive: needs VERIFIED, otherwise deny" in text
    assert "Anything else: deny." in text


def test_explain_empty_signer_list() -> None:
    r = cli("policy", "explain", str(ROOT / "fixtures" / "policy" / "empty-signers.json"))
    assert r.returncode == 0, r.stderr
    assert "Trusted signers: none — no signature can make a tool VERIFIED." in r.stdout


def _org_policy(tmp_path: Path, mode: int) -> Path:
    p = tmp_path / "managed.json"
    p.write_text(json.dumps({"version": 1, "permissions": {"deny": ["gh repo delete *"]}}))
    os.chmod(p, mode)
    return p


def test_group_writable_org_policy_is_refused(tmp_path: Path) -> None:
    p = _org_policy(tmp_path, 0o664)
    r = cli("policy", "check", "--org", str(p))
    assert r.returncode == 2
    assert "writable by group or others (mode 0664" in r.stderr


def test_world_writable_org_policy_is_refused_by_admit(tmp_path: Path) -> None:
    p = _org_policy(tmp_path, 0o646)
    tool = tmp_path / "tool"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    r = cli_subprocess("admit", str(tool), "--org-policy", str(p), "--no-audit")
    assert r.returncode == 2
    assert "org policy refused" in r.stderr


def test_org_policy_owned_by_someone_else_is_refused(tmp_path: Path) -> None:
    if os.getuid() != 0:
        pytest.skip("changing a file's owner needs root")
    p = _org_policy(tmp_path, 0o644)
    os.chown(p, 65534, 65534)
    r = cli("policy", "check", "--org", str(p))
    assert r.returncode == 2
    assert "owned by uid 65534, expected root (0) or the current user" in r.stderr


def test_org_policy_symlink_is_refused(tmp_path: Path) -> None:
    real = _org_policy(tmp_path, 0o644)
    link = tmp_path / "link.json"
    link.symlink_to(real)
    r = cli("policy", "check", "--org", str(link))
    assert r.returncode == 2
    assert "without following links" in r.stderr


def test_safe_org_policy_is_accepted(tmp_path: Path) -> None:
    p = _org_policy(tmp_path, 0o644)
    r = cli("policy", "check", "--org", str(p))
    assert r.returncode == 0, r.stderr
