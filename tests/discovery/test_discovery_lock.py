"""`atip-trust lock` and `scan --locked`: an update from the same signer and source passes; a signer
change, a source change, unsigned new bytes and a new destructive effect each need --accept-change,
and the diff names the field, old -> new."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from discovery_world import (
    ORG_ID,
    ORG_ID_V2,
    ORG_REPO,
    OTHER_ID,
    OTHER_REPO,
    World,
    agent_json,
    agent_script,
)
from verify_helpers import cli


@pytest.fixture
def locked(tmp_path: Path) -> dict[str, Any]:
    w = World(tmp_path)
    b = tmp_path / "bin"
    w.tool(b, "t", agent_script(agent_json("t"), "v1"), identity=ORG_ID)
    lock = tmp_path / "atip-trust.lock"
    pol = w.policy()
    r = cli("lock", "--bundle-dir", str(w.bundles), str(b), "--policy", str(pol), "--lock", str(lock))
    assert r.code == 0, r.out + r.err
    return {"w": w, "bin": b, "lock": lock, "policy": pol}


def _update(env: dict[str, Any], tag: str, **kw: Any) -> None:
    destructive = kw.pop("destructive", False)
    env["w"].tool(env["bin"], "t", agent_script(agent_json("t", destructive=destructive), tag), **kw)


def _scan_locked(env: dict[str, Any]) -> Any:
    return cli("scan", "--bundle-dir", str(env["w"].bundles), str(env["bin"]), "--policy", str(env["policy"]), "--lock", str(env["lock"]),
               "--locked", "--format", "json", "--surface")


def _lock(env: dict[str, Any], *extra: str) -> Any:
    return cli("lock", "--bundle-dir", str(env["w"].bundles), str(env["bin"]), "--policy", str(env["policy"]), "--lock", str(env["lock"]), *extra)


def test_lock_file_is_canonical_json_with_each_tools_pins(locked: dict[str, Any]) -> None:
    text = locked["lock"].read_text()
    doc = json.loads(text)
    assert text == json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    entry = doc["tools"]["t"]
    assert entry["signer"] == ORG_ID and entry["sourceRepo"] == ORG_REPO
    assert entry["digest"].startswith("sha256:") and entry["metadataDigest"].startswith("sha256:")
    assert "destructive" not in entry["effects"]


def test_update_signed_by_the_same_signer_from_the_same_repo_passes(locked: dict[str, Any]) -> None:
    _update(locked, "v2", identity=ORG_ID_V2, ref="refs/tags/v2.0.0")
    r = _scan_locked(locked)
    assert r.code == 0, r.out + r.err
    (change,) = r.json["lock"]["changes"]
    assert change["kind"] == "updated" and change["needs_approval"] == []
    assert change["fields"]["signer"] == {"old": ORG_ID, "new": ORG_ID_V2}
    assert _lock(locked).code == 0
    assert json.loads(locked["lock"].read_text())["tools"]["t"]["sourceRef"] == "refs/tags/v2.0.0"


@pytest.mark.parametrize("case, kwargs, need, field, old, new", [
    ("signer change", dict(identity=OTHER_ID), "signer_changed", "signer", ORG_ID, OTHER_ID),
    ("source change", dict(identity=ORG_ID, repo=OTHER_REPO), "source_changed", "sourceRepo", ORG_REPO,
     OTHER_REPO),
    ("new destructive effect", dict(identity=ORG_ID, destructive=True), "effects_gained:destructive",
     "effects", None, None),
    ("unsigned update", dict(), "unsigned_update", "signer", ORG_ID, None),
])
def test_change_needing_approval_fails_scan_locked_and_lock_with_a_diff(
        locked: dict[str, Any], case: str, kwargs: dict[str, Any], need: str, field: str, old: Any,
        new: Any) -> None:
    before = locked["lock"].read_text()
    _update(locked, case, **kwargs)
    r = _scan_locked(locked)
    assert r.code == 1, (case, r.out + r.err)
    lock = r.json["lock"]
    assert lock["drift"] is True
    (change,) = lock["changes"]
    assert need in change["needs_approval"], change
    diff = change["fields"][field]
    if field == "effects":
        assert "destructive" in diff["new"] and "destructive" not in diff["old"]
    else:
        assert diff == {"old": old, "new": new}

    text = _lock(locked)
    assert text.code == 1 and locked["lock"].read_text() == before
    assert f"needs --accept-change t ({need}" in text.out or f"{need}" in text.out, text.out
    shown = f"  {field}: {old if old is not None else '(none)'} -> {new if new is not None else '(none)'}"
    if field != "effects":
        assert shown in text.out.splitlines(), text.out

    accepted = _lock(locked, "--accept-change", "t")
    assert accepted.code == 0, accepted.out
    assert _scan_locked(locked).code == 0


def test_a_new_tool_needs_approval_and_a_removed_one_does_not(locked: dict[str, Any]) -> None:
    locked["w"].tool(locked["bin"], "extra", agent_script(agent_json("extra")), identity=ORG_ID)
    r = _scan_locked(locked)
    assert r.code == 1 and r.json["lock"]["changes"][0]["needs_approval"] == ["new_tool"]
    (locked["bin"] / "extra").unlink()
    (locked["bin"] / "t").unlink()
    r = _scan_locked(locked)
    assert r.code == 0 and r.json["lock"]["changes"][0]["kind"] == "removed"


def test_a_malformed_lock_file_is_exit_2_not_a_pass(locked: dict[str, Any]) -> None:
    locked["lock"].write_text('{"lockVersion": 1, "tools": {"t": {"path": 1}}}')
    r = _scan_locked(locked)
    assert r.code == 2, r.out
