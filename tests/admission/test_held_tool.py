"""A held tool (admission/held.py): admitted once, decided for on every call. Each attack changes one thing
the held trust report stands on between two calls in one process — the tool's bytes, what its path
names, its bundle, the trusted root, a waiver's clock — and the next call must see it exactly as a
fresh ``admit`` would; each promise is checked against ``admit`` itself.

Files are first let age past the same-timestamp window (2 s: a file changed within it is never taken
as unchanged; conftest.py ``settle``), and each test checks the held report is in use
(``cache == "held"``) before it attacks.
"""

from __future__ import annotations

import json
import os
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from atip_trust.admission.admit import Admission, admit, load_admission_policy
from atip_trust.admission.held import HeldTool
from atip_trust.errors import AtipTrustError, UsageError

import testsigstore
from test_verdict_memo import ISSUER, OTHER_ID, SIGNED, rewrite_same_size, world  # noqa: F401


def hold(w: dict[str, Any], policy: Any = None, **extra: Any) -> HeldTool:
    return HeldTool.open(w["tool"], policy=policy or w["loaded"], bundles=[w["bundle"]],
                         trusted_root=w["root"], **extra)


def fresh(w: dict[str, Any], command: str, policy: Any = None) -> Admission:
    return admit(w["tool"], policy=policy or w["loaded"], command=command, bundles=[w["bundle"]],
                 trusted_root=w["root"], audit=False)


def same(a: Admission, b: Admission) -> None:
    """``a`` decided as ``b``: behavior, reasons, digests, report facts."""
    assert a.decision.to_json() == b.decision.to_json()
    assert a.report.to_json(full=True) == b.report.to_json(full=True)
    assert (a.tool, a.command, a.path, a.effects_verified) == (b.tool, b.command, b.path, b.effects_verified)


def admitted_again(w: dict[str, Any], held: HeldTool, level: str) -> Admission:
    """The next call admits the tool again, sees ``level`` and denies, exactly as a fresh ``admit``."""
    after = held.admit("status", audit=False)
    assert after.cache != "held"
    assert (after.report.trust_level.name, after.behavior) == (level, "deny")
    same(after, fresh(w, "status"))
    return after


def steady(w: dict[str, Any], policy: Any = None) -> HeldTool:
    """A held tool whose files have aged past the window, with its report in use."""
    w["settle"]()
    held = hold(w, policy)
    assert held.admit("status", audit=False).cache in ("hit", "miss")  # the admission that made it
    assert held.admit("status", audit=False).cache == "held"
    return held


def test_a_held_tool_decides_each_command_exactly_as_admit_does(world) -> None:
    with steady(world) as held:
        for command in ("status", "deploy prod", "status --verbose"):
            got = held.admit(command, audit=False)
            assert got.cache == "held"
            same(got, fresh(world, command))
        # The ask rule is asked anew on each call: answered with someone there, denied without.
        assert held.admit("deploy prod", audit=False).behavior == "deny"
        assert held.admit("deploy prod", interactive=True, audit=False).behavior == "ask"


def test_each_call_gets_its_own_report_so_a_caller_cannot_change_the_next_decision(world) -> None:
    with steady(world) as held:
        first = held.admit("status", audit=False)
        first.report.checks.clear()
        first.report.signature.extensions.clear()
        again = held.admit("status", audit=False)
        assert again.report.checks and again.report.to_json(full=True) == fresh(world, "status").report.to_json(
            full=True)


def test_a_held_tool_rewritten_in_place_with_its_old_mtime_is_verified_again_and_denied(world) -> None:
    with steady(world) as held:
        rewrite_same_size(world["tool"], SIGNED.replace(b"signed", b"SIGNED"))
        admitted_again(world, held, "COMPROMISED")


def test_a_held_tool_whose_path_now_names_another_file_decides_for_that_file(world) -> None:
    """A rename over the path leaves the held descriptor's file untouched: only the path tells."""
    with steady(world) as held:
        held_fd_file = os.fstat(held.artifact.fd)
        impostor = world["dir"] / "impostor"
        impostor.write_bytes(b"#!/bin/sh\necho impostor\n")
        os.replace(impostor, world["tool"])
        assert os.fstat(held.artifact.fd).st_ino == held_fd_file.st_ino  # the old file, still held
        after = held.admit("status", audit=False)
        assert after.cache != "held" and after.behavior == "deny"
        assert after.report.trust_level.name != "VERIFIED"
        assert os.fstat(held.artifact.fd).st_ino == os.stat(world["tool"]).st_ino  # now holds the new one


def test_a_held_tool_reached_through_a_directory_swapped_for_a_symlink_decides_for_the_new_file(
        world, tmp_path: Path) -> None:
    real = tmp_path / "bin"
    real.mkdir()
    tool = real / "signed"
    tool.write_bytes(SIGNED)
    tool.chmod(0o755)
    w = {**world, "tool": tool}
    with steady(w) as held:
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        (elsewhere / "signed").write_bytes(b"#!/bin/sh\necho other\n")
        real.rename(tmp_path / "old-bin")
        real.symlink_to(elsewhere)
        after = held.admit("status", audit=False)
        assert after.cache != "held" and after.behavior == "deny"
        assert after.path == str(elsewhere / "signed")


def test_a_held_tool_whose_bundle_was_replaced_by_another_signers_is_decided_on_the_new_bundle(
        world) -> None:
    with steady(world) as held:
        other = world["ts"].sign_artifact(SIGNED, identity=OTHER_ID, issuer=ISSUER)
        rewrite_same_size(world["bundle"], json.dumps(other, separators=(",", ":")).encode())
        admitted_again(world, held, "UNVERIFIED")


def test_a_held_tool_whose_bundle_was_removed_fails_as_admit_does(world) -> None:
    with steady(world) as held:
        world["bundle"].unlink()
        with pytest.raises(AtipTrustError) as from_admit:
            fresh(world, "status")
        with pytest.raises(type(from_admit.value)):
            held.admit("status", audit=False)


def test_a_held_tool_whose_pinned_trusted_root_was_replaced_is_verified_against_the_new_root(world) -> None:
    with steady(world) as held:
        compact = json.dumps(json.loads(world["other_root"].read_text()), separators=(",", ":")).encode()
        rewrite_same_size(world["root"], compact)
        after = held.admit("status", audit=False)
        assert after.cache != "held" and after.behavior == "deny"
        assert after.report.trust_level.name != "VERIFIED"
        same(after, fresh(world, "status"))


@pytest.mark.slow
def test_an_expired_waiver_takes_effect_on_a_held_tool(world, tmp_path: Path) -> None:
    """The report is held, the decision is not: a waiver stops lifting the minimum at its expiry."""
    ts = testsigstore.TestSigstore(seed=31)
    other = tmp_path / "other.sigstore.json"
    other.write_text(json.dumps(ts.sign_artifact(SIGNED, identity=OTHER_ID, issuer=ISSUER)))
    expires = (datetime.now(UTC) + timedelta(seconds=5)).replace(microsecond=0)
    doc = json.loads(world["policy"].read_text())
    doc = {**doc, "requirements": {"minTrustLevel": "VERIFIED"}, "permissions": {"allow": ["Bash(signed *)"]},
           "waivers": [{"tool": "signed", "reason": "vendor re-signs next week",
                        "expires": expires.isoformat().replace("+00:00", "Z")}]}
    pol = tmp_path / "waived.json"
    pol.write_text(json.dumps(doc))
    world["settle"]()
    with HeldTool.open(world["tool"], policy=load_admission_policy(pol), bundles=[other],
                       trusted_root=world["root"]) as held:
        held.admit("status", audit=False)
        live = held.admit("status", audit=False)
        assert (live.cache, live.behavior, live.report.trust_level.name) == ("held", "allow", "UNVERIFIED")
        assert "WAIVED" in [r.code for r in live.decision.reasons]
        time.sleep(max(0.0, (expires - datetime.now(UTC)).total_seconds()) + 1.0)
        dead = held.admit("status", audit=False)
        assert (dead.cache, dead.behavior) == ("held", "deny")
        codes = [r.code for r in dead.decision.reasons]
        assert "WAIVER_EXPIRED" in codes and "WAIVED" not in codes


def test_files_changed_within_the_same_timestamp_window_are_never_taken_as_unchanged(world) -> None:
    """Just written: a coarse file-system clock could hide a second write, so each call admits again."""
    for name in ("tool", "bundle"):
        world[name].write_bytes(world[name].read_bytes())
    held = hold(world)
    try:
        assert "held" not in [held.admit("status", audit=False).cache for _ in range(3)]
        world["settle"]()
        assert held.admit("status", audit=False).cache in ("hit", "miss")  # held anew, now settled
        assert held.admit("status", audit=False).cache == "held"
    finally:
        held.close()


def test_a_tool_found_through_a_shim_folder_is_admitted_in_full_on_every_call(world, tmp_path: Path) -> None:
    shims = tmp_path / "shims"
    shims.mkdir()
    world["settle"]()
    with hold(world, shim_dir=shims) as held:
        got = [held.admit("status", audit=False) for _ in range(3)]
        assert {a.cache for a in got} <= {"hit", "miss"}
        same(got[-1], fresh(world, "status"))


def test_every_held_call_leaves_its_audit_line_with_its_command(world, tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    with steady(world) as held:
        held.admit("status", audit_log=log)
        held.admit("deploy prod", audit_log=log)
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(line["command"], line["decision"]) for line in lines] == [
        (["status"], "allow"), (["deploy", "prod"], "deny")]


def test_a_held_tool_whose_re_verification_fails_leaves_a_deny_line(world, tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    with steady(world) as held:
        world["bundle"].write_text("{not json")
        with pytest.raises(AtipTrustError):
            held.admit("status", audit_log=log)
    (line,) = [json.loads(x) for x in log.read_text().splitlines()]
    assert line["decision"] == "deny" and line["tool"] == "signed"


def test_a_closed_held_tool_refuses_its_descriptor(world) -> None:
    held = hold(world)
    held.close()
    with pytest.raises(UsageError):
        held.artifact  # noqa: B018


@pytest.mark.parametrize("command", [
    ["--verbose", "deploy", "prod"],  # a leading option before the sub-command the ask rule names
    "deploy  prod",                    # extra blanks in a command line
    "'deploy' prod",                   # shell quoting around the sub-command
    ["deploy", "prod", "--force"],
])
def test_a_crafted_command_line_is_asked_on_a_held_tool_as_admit_asks(world, command: Any) -> None:
    """The ask rule ``Bash(signed deploy *)`` must match however the command is spelled: a held call
    decides the words anew through admit's own decision step, never from an earlier call's answer."""
    with steady(world) as held:
        assert held.admit("status", audit=False).behavior == "allow"  # an allow just before
        got = held.admit(command, audit=False)
        assert got.cache == "held" and got.behavior == "deny"
        assert "COMMAND_ASK" in [r.code for r in got.decision.reasons]
        same(got, admit(world["tool"], policy=world["loaded"], command=command, bundles=[world["bundle"]],
                        trusted_root=world["root"], audit=False))


def test_the_tools_own_unsigned_metadata_claiming_read_only_never_allows_and_a_swap_is_seen(
        world, tmp_path: Path) -> None:
    """A tool's own metadata says every command is read-only. Unsigned, it relaxes nothing, on the first
    call or any later one; rewritten meanwhile (another claim), the next call reads the new file."""
    def claim(description: str) -> bytes:
        return json.dumps({
            "atip": {"version": "0.6"}, "name": "signed", "version": "1.0.0", "description": description,
            "commands": {"status": {"description": "Show status", "effects": {
                "destructive": False, "reversible": True, "idempotent": True, "network": False,
                "filesystem": {"write": False, "delete": False}, "cost": {"billable": False}}}},
        }, indent=2).encode()

    meta = tmp_path / "signed.atip.json"
    meta.write_bytes(claim("read-only, honestly"))
    doc = json.loads(world["policy"].read_text())
    doc = {**doc, "permissions": {}, "defaults": {"allowVerifiedReadOnly": True, "noMatch": "deny"}}
    pol_file = tmp_path / "read-only.json"
    pol_file.write_text(json.dumps(doc))
    pol = load_admission_policy(pol_file)

    def fresh_meta() -> Admission:
        return admit(world["tool"], policy=pol, command="status", metadata=meta, bundles=[world["bundle"]],
                     trusted_root=world["root"], audit=False)

    world["settle"]()
    with HeldTool.open(world["tool"], policy=pol, metadata=meta, bundles=[world["bundle"]],
                       trusted_root=world["root"]) as held:
        calls = [held.admit("status", audit=False) for _ in range(3)]
        assert [c.cache for c in calls][1:] == ["held", "held"]
        for c in calls:
            assert c.behavior == "deny" and c.effects_verified is False
            same(c, fresh_meta())
        rewrite_same_size(meta, claim("read-only, trust me").replace(b"  ", b" "))
        after = held.admit("status", audit=False)
        assert after.cache != "held" and after.behavior == "deny"
        assert after.metadata_sha256 == fresh_meta().metadata_sha256 != calls[0].metadata_sha256


def test_a_registry_json_pin_written_while_a_tool_is_held_denies_at_the_next_call(
        world, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """RFC §4.3: the agent-tools tree may change with any file in it, so while it exists every call
    admits again (admission/agent_tools.py): a pin naming other bytes denies at once."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    with steady(world) as held:
        index = tmp_path / "xdg-data" / "agent-tools" / "registry.json"
        index.parent.mkdir(parents=True)
        index.write_text(json.dumps({"version": "2", "tools": {"signed": {
            "path": str(world["tool"]), "hash": "sha256:" + "0" * 64}}}))
        index.chmod(0o600)
        after = held.admit("status", audit=False)
        assert after.cache != "held" and after.behavior == "deny"
        assert after.decision.reasons[0].code == "LOCAL_REGISTRY_DIGEST_MISMATCH"
