"""Attacks on discovery, the lock and the probe: a PATH entry that is another user's symbolic link, a
locked tool made group-writable and rewritten, an unsigned locked tool replaced by bytes another trusted
signer signed, a cached probe answer for a script whose interpreter is no longer admitted.

Real files, real symbolic links, real modes and owners (the tests run as root, so another user's link
is made with ``os.lchown`` to uid 65534, ``nobody``), real subprocesses.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from atip_trust.discovery.scan import scan_directories

import test_discovery_lock
from discovery_world import (
    ORG_ID,
    OTHER_ID,
    World,
    agent_json,
    agent_script,
    sentinel_script,
)
from test_discovery_lock import _lock, _scan_locked
from test_discovery_scan import _env
from verify_helpers import cli

NOBODY = 65534
#: A directory with one signed tool, locked (test_discovery_lock.py), by name.
locked = test_discovery_lock.locked

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="making another user's link needs root")


@pytest.fixture
def safe_bin(tmp_path: Path) -> Path:
    b = tmp_path / "safe" / "bin"
    b.mkdir(parents=True)
    tool = b / "tool"
    tool.write_bytes(b"#!/bin/sh\necho tool\n")
    tool.chmod(0o755)
    return b


def _sticky(tmp_path: Path) -> Path:
    d = tmp_path / "sticky"
    d.mkdir()
    d.chmod(0o1777)  # /tmp-style
    return d


def _foreign_link(target: Path, link: Path) -> Path:
    os.symlink(target, link)
    os.lchown(link, NOBODY, NOBODY)
    return link


@needs_root
def test_a_path_entry_that_is_another_users_link_in_a_sticky_directory_is_not_scanned(
        tmp_path: Path, safe_bin: Path) -> None:
    link = _foreign_link(safe_bin, _sticky(tmp_path) / "bin")
    res = scan_directories(path_env=str(link))
    assert res.candidates == [] and res.directories == []
    [skip] = res.skipped
    assert (skip.path, skip.reason) == (str(link), "symlink_foreign_owner"), skip
    assert "uid 65534" in skip.message and skip.resolved == str(safe_bin)
    # The same directory named directly is fine: the link, not the directory, is the hole.
    assert [c.name for c in scan_directories(path_env=str(safe_bin)).candidates] == ["tool"]


@needs_root
def test_a_foreign_link_among_a_path_entrys_parents_is_not_scanned_either(
        tmp_path: Path, safe_bin: Path) -> None:
    link = _foreign_link(safe_bin.parent, _sticky(tmp_path) / "opt")  # /sticky/opt -> safe; entry opt/bin
    res = scan_directories(path_env=str(link / "bin"))
    assert res.candidates == []
    assert [s.reason for s in res.skipped] == ["symlink_foreign_owner"]


def test_our_own_link_in_a_directory_others_can_write_is_not_scanned(tmp_path: Path, safe_bin: Path) -> None:
    group = tmp_path / "group"
    group.mkdir()
    group.chmod(0o777)  # not sticky: anyone can replace the link
    link = group / "bin"
    os.symlink(safe_bin, link)
    res = scan_directories(path_env=str(link))
    assert res.candidates == []
    assert [s.reason for s in res.skipped] == ["symlink_in_unsafe_directory"]


def test_our_own_link_in_a_sticky_directory_is_scanned(tmp_path: Path, safe_bin: Path) -> None:
    # The sticky bit stops others from renaming or removing a link they do not own.
    link = _sticky(tmp_path) / "bin"
    os.symlink(safe_bin, link)
    assert [c.name for c in scan_directories(path_env=str(link)).candidates] == ["tool"]


@needs_root
def test_a_tool_link_that_passes_through_another_users_link_is_not_a_candidate(
        tmp_path: Path, safe_bin: Path) -> None:
    hop = _foreign_link(safe_bin, _sticky(tmp_path) / "hop")
    mine = tmp_path / "mine"
    mine.mkdir()
    os.symlink(hop / "tool", mine / "tool")   # mine/tool -> /sticky/hop/tool -> safe/bin/tool
    res = scan_directories(path_env=str(mine))
    assert res.candidates == []
    assert [(os.path.basename(s.path), s.reason) for s in res.skipped] == [("tool", "symlink_foreign_owner")]


@needs_root
def test_scan_fail_on_deny_fails_for_a_foreign_link_path_entry(tmp_path: Path, safe_bin: Path) -> None:
    (tmp_path / "w").mkdir()
    w = World(tmp_path / "w")
    link = _foreign_link(safe_bin, _sticky(tmp_path) / "bin")
    r = cli("scan", str(link), "--policy", str(w.policy()), "--fail-on", "deny", "--format", "json",
                       "--surface", "--no-cache", env=_env(tmp_path))
    assert r.code == 1, r.out + r.err
    assert "symlink_foreign_owner" in r.out


# ------------------------------------------------------------------------------------------------
# The lock


def test_scan_locked_fails_when_a_locked_tool_is_made_group_writable_and_rewritten(
        locked: dict[str, Any]) -> None:
    tool = locked["bin"] / "t"
    tool.write_bytes(agent_script(agent_json("t", destructive=True), "rewritten by the group"))
    tool.chmod(0o775)  # the scan skips it as unsafe; the shell still runs it from PATH
    r = _scan_locked(locked)
    assert r.code == 1, r.out + r.err
    [change] = r.json["lock"]["changes"]
    assert change["kind"] == "not_scanned" and change["needs_approval"] == ["not_scanned:file_writable"]
    assert _lock(locked).code == 1                          # re-locking needs the approval too


def test_scan_locked_fails_when_the_locked_tools_directory_becomes_unsafe(locked: dict[str, Any]) -> None:
    locked["bin"].chmod(0o777)
    try:
        r = _scan_locked(locked)
    finally:
        locked["bin"].chmod(0o755)
    assert r.code == 1, r.out + r.err
    assert [c["kind"] for c in r.json["lock"]["changes"]] == ["not_scanned"]


def test_a_locked_unsigned_tool_replaced_by_bytes_another_trusted_signer_signed_needs_approval(
        tmp_path: Path) -> None:
    w = World(tmp_path)
    b = tmp_path / "bin"
    w.tool(b, "t", agent_script(agent_json("t"), "unsigned v1"))
    env = {"w": w, "bin": b, "lock": tmp_path / "atip-trust.lock", "policy": w.policy()}
    assert _lock(env).code == 0
    # Any signer policy trusts, with no source repository in its certificate.
    w.tool(b, "t", agent_script(agent_json("t"), "someone else's build"), identity=OTHER_ID, repo="")
    r = _scan_locked(env)
    assert r.code == 1, r.out + r.err
    assert "signer_changed" in r.json["lock"]["changes"][0]["needs_approval"]


# ------------------------------------------------------------------------------------------------
# The probe cache


def test_a_cached_probe_answer_is_not_used_once_the_scripts_interpreter_is_no_longer_admitted(
        tmp_path: Path) -> None:
    w = World(tmp_path)
    b = tmp_path / "bin"
    w.tool(b, "signedscript", sentinel_script(w.sentinel("script"), "echo '" + agent_json("signedscript")
                                              + "'"), identity=ORG_ID)
    pol = w.policy()
    env = _env(tmp_path)
    first = cli("scan", "--bundle-dir", str(w.bundles), str(b), "--policy", str(pol), "--format",
                           "json", "--surface", env=env)
    assert '"probed"' in first.out and w.sentinel("script").exists(), first.out + first.err
    # Same cache, but the interpreter's evidence is gone: a run would be refused, so must the cache be.
    again = cli("scan", str(b), "--policy", str(pol), "--format", "json", "--surface", env=env)
    assert "script_refused" in again.out, again.out
    assert '"status": "probed"' not in again.out


def test_a_locked_tool_whose_directory_is_no_longer_scanned_is_removed_not_drift(tmp_path: Path) -> None:
    # The control for not_scanned: nothing refused it, the scanned path simply no longer holds it.
    w = World(tmp_path)
    a, b = tmp_path / "a", tmp_path / "b"
    w.tool(a, "ta", agent_script(agent_json("ta")), identity=ORG_ID)
    w.tool(b, "tb", agent_script(agent_json("tb")), identity=ORG_ID)
    lock, pol = tmp_path / "atip-trust.lock", w.policy()
    common = ["--bundle-dir", str(w.bundles), "--policy", str(pol), "--lock", str(lock)]
    assert cli("lock", *common, str(a), str(b), env=_env(tmp_path)).code == 0
    r = cli("scan", *common, str(a), "--locked", "--format", "json", "--surface", env=_env(tmp_path))
    assert r.code == 0, r.out + r.err
    assert [(c["tool"], c["kind"]) for c in r.json["lock"]["changes"]] == [("tb", "removed")]


def test_a_locked_tool_made_unsafe_is_not_replaced_by_a_same_named_tool_later_on_path(tmp_path: Path) -> None:
    # PATH a:c. The shell runs a/t, whatever the scan thinks of it; the old scan skipped the now
    # group-writable a/t and scanned c/t in its place, so the lock saw a harmless path change.
    w = World(tmp_path)
    a, c = tmp_path / "a", tmp_path / "c"
    body = agent_script(agent_json("t"), "v1")
    w.tool(a, "t", body, identity=ORG_ID)
    w.tool(c, "t", body, identity=ORG_ID)
    lock, pol = tmp_path / "atip-trust.lock", w.policy()
    common = ["--bundle-dir", str(w.bundles), "--policy", str(pol), "--lock", str(lock), str(a), str(c)]
    assert cli("lock", *common, env=_env(tmp_path)).code == 0
    (a / "t").write_bytes(agent_script(agent_json("t", destructive=True), "rewritten by the group"))
    (a / "t").chmod(0o775)
    r = cli("scan", *common, "--locked", "--format", "json", "--surface", env=_env(tmp_path))
    assert r.code == 1, r.out + r.err
    assert [(c["tool"], c["kind"]) for c in r.json["lock"]["changes"]] == [("t", "not_scanned")]
    skipped = {(Path(s["path"]).parent.name, s["reason"]) for s in r.json["surface"]["skipped"]}
    assert {("a", "file_writable"), ("c", "shadowed")} <= skipped
