"""RFC §3.1.1 and §3.6 through the agent hooks (``atip-trust hook claude-code``), which admit each
program through the one admission path: a command a partial shim leaves out is asked about even when an
allow rule (``gh pr *``) matches it, unless the verified shim says omitted commands are known-safe; a
verified command that declares a deletion is never allowed as read-only."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from gate_world import GH, ISSUER, ORG_ID, World, make_world
from test_hooks import decision, hook_input

REGISTRY_ID = "https://github.com/example-org/shims/.github/workflows/sign.yml@refs/heads/main"
READ_ONLY = {"destructive": False, "reversible": True, "idempotent": True, "network": False,
             "filesystem": {"read": True, "write": False, "delete": False}, "cost": {"billable": False},
             "interactive": {"stdin": "none", "prompts": False, "tty": False}}


@pytest.fixture
def world(tmp_path: Path) -> World:
    return make_world(tmp_path)


def _shim(world: World, **root: Any) -> Path:
    """A registry-signed shim for the signed ``gh`` in a shim folder; the policy naming the registry."""
    hexd = hashlib.sha256(GH).hexdigest()
    shim_dir = world.dir / "shims"
    (shim_dir / "sha256").mkdir(parents=True, exist_ok=True)
    doc = {"atip": {"version": "0.6"}, "binary": {"hash": f"sha256:{hexd}", "name": "gh", "version": "2"},
           "description": "GitHub CLI", "trust": {"source": "community", "verified": True}, **root}
    path = shim_dir / "sha256" / f"{hexd}.json"
    path.write_text(json.dumps(doc))
    Path(f"{path}.bundle").write_text(json.dumps(
        world.ts.sign_artifact(path.read_bytes(), identity=REGISTRY_ID, issuer=ISSUER)))
    return shim_dir


def _hook(world: World, shim_dir: Path, line: str, **policy_extra: Any) -> tuple[str | None, str]:
    policy = world.write_policy("p", trust={
        "trustedRoots": [{"path": str(world.root)}], "signers": [{"identity": ORG_ID, "issuer": ISSUER}],
        "registries": [{"url": "file:///srv/shims", "signers": [{"identity": REGISTRY_ID, "issuer": ISSUER}]}]},
        defaults={"noMatch": "deny", "allowVerifiedReadOnly": True}, **policy_extra)
    r = world.run("hook", "claude-code", "--policy", str(policy), "--bundle-dir", str(world.bundles),
                  "--shim-dir", str(shim_dir), "--no-audit", env=world.env(),
                  stdin=hook_input("claude-code", line, str(world.dir)))
    assert r.returncode == 0, r.stderr
    return decision("claude-code", r.stdout)


@pytest.mark.parametrize(("assumption", "behavior"), [
    ("unknown", "ask"), ("known-unsafe", "ask"), (None, "ask"), ("known-safe", "allow"),
    ("same-as-included", "allow"),
])
def test_rfc_3_1_1_hook_asks_for_a_command_the_partial_shim_leaves_out(
        world: World, assumption: str | None, behavior: str) -> None:
    omitted = {"reason": "filtered"} | ({} if assumption is None else {"safetyAssumption": assumption})
    shim_dir = _shim(world, partial=True, omitted=omitted, commands={"pr": {"description": "PRs", "commands": {
        "list": {"description": "List", "effects": READ_ONLY}}}})
    got, reason = _hook(world, shim_dir, "gh pr merge 7")  # the policy allows gh pr * when VERIFIED
    assert got == behavior, reason
    if behavior == "ask":
        assert "partial metadata" in reason


def test_rfc_3_6_hook_never_allows_a_declared_deletion_as_read_only(world: World) -> None:
    shim_dir = _shim(world, commands={"issue": {"description": "Issues", "commands": {
        "view": {"description": "View", "effects": READ_ONLY},
        "delete": {"description": "Delete", "effects": {**READ_ONLY, "deletes": ["issue"]}}}}})
    assert _hook(world, shim_dir, "gh issue view 1")[0] == "allow"  # the read-only default, verified
    got, reason = _hook(world, shim_dir, "gh issue delete 1")
    assert got == "deny", reason  # no rule allows it, and it is not read-only
