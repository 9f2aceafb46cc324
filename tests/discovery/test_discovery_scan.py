"""Discovery end to end through `atip-trust scan` as a user runs it (in-process as a fresh child
would run it, verify_helpers.py): real scripts, real bundles from
the local test Sigstore, real processes. Tools that must never run leave a sentinel file if they do."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from atip_trust.discovery.scan import scan_directories

from discovery_world import ORG_ID, World, agent_json, agent_script, process_alive, sentinel_script
from verify_helpers import cli


def _env(tmp: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["ATIP_CACHE_DIR"] = str(tmp / "cache")
    env["XDG_CACHE_HOME"] = str(tmp / "xdg-cache")
    env["XDG_STATE_HOME"] = str(tmp / "xdg-state")
    env.pop("ATIP_TRUST_ORG_POLICY", None)
    return env


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("discovery")
    w = World(root)
    b = root / "bin"
    w.tool(b, "good", agent_script(agent_json("good")), identity=ORG_ID)
    # Unsigned bait: its --help advertises --agent.
    w.tool(b, "unsigned", sentinel_script(w.sentinel("unsigned")))
    orig = agent_script(agent_json("tampered"))
    w.tool(b, "tampered", sentinel_script(w.sentinel("tampered")) + orig, identity=ORG_ID,
           signed_data=orig)
    pidfile = w.sentinel("hostile.pid")
    # Signed, so it is probed: a lingering child, 10 MB of bytes that are not UTF-8, and it never exits.
    w.tool(b, "hostile", (
        f"#!/bin/sh\nsleep 300 &\necho $! > '{pidfile}'\n"
        "head -c 10000000 /dev/zero | tr '\\000' '\\377'\nexec sleep 300\n").encode(), identity=ORG_ID)
    hang_pid = w.sentinel("hang.pid")
    w.tool(b, "hang", f"#!/bin/sh\nsleep 300 &\necho $! > '{hang_pid}'\nexec sleep 300\n".encode(),
           identity=ORG_ID)
    w.tool(b, "badutf8", b"#!/bin/sh\nprintf '{\"atip\": \"0.6\", \"name\": \"\\377\\376\"}'\n",
           identity=ORG_ID)
    ww = root / "ww"
    w.tool(ww, "wwtool", sentinel_script(w.sentinel("ww")))
    ww.chmod(0o777)
    os.symlink(ww / "wwtool", b / "linked")
    return {"w": w, "root": root, "bin": b, "ww": ww, "policy": w.policy(), "pidfiles": [pidfile, hang_pid]}


def _scan(world: dict[str, Any], tmp: Path, *args: str) -> tuple[Any, float]:
    start = time.monotonic()
    r = cli("scan", "--bundle-dir", str(world["w"].bundles), str(world["bin"]), str(world["ww"]), "--policy", str(world["policy"]),
                       "--format", "json", "--surface", *args, env=_env(tmp))
    return r, time.monotonic() - start


def test_scan_gives_each_tool_its_honest_row_in_bounded_time_and_leaves_nothing_running(
        world: dict[str, Any], tmp_path: Path) -> None:
    r, took = _scan(world, tmp_path, "--fail-on", "deny")
    assert r.code == 1, r.out + r.err  # tampered and hostile are blocked, ww is unsafe
    out = r.json
    rows = {t["name"]: t for t in out["surface"]["tools"]}
    assert set(rows) == {"good", "unsigned", "tampered", "hostile", "hang", "badutf8"}

    good = rows["good"]
    assert (good["trust"], good["probe"]["status"], good["surface"]["placement"]) == \
        ("verified", "probed", "loaded")
    assert good["metadata"]["from"] == "probe" and good["signer"]["identity"] == ORG_ID

    uns = rows["unsigned"]
    assert (uns["trust"], uns["probe"]["status"], uns["probe"]["reason"]) == \
        ("unverified", "not_probed", "not_verified")
    assert uns["surface"]["placement"] == "not_probed"

    tam = rows["tampered"]
    assert (tam["trust"], tam["trust_level"], tam["decision"]["behavior"]) == ("failed", "COMPROMISED", "deny")
    assert tam["probe"]["status"] == "not_probed" and tam["surface"]["reason"] == "tampered"

    for name, reason in (("hostile", "output_too_large"), ("hang", "timeout"), ("badutf8", "invalid_metadata")):
        row = rows[name]
        assert row["trust"] == "verified", row  # verified, so probed; the probe itself failed
        assert (row["probe"]["status"], row["probe"]["reason"]) == ("failed", reason), row
        assert row["surface"] == {"placement": "blocked", "reason": f"probe_{reason}"}

    skipped = {s["path"]: s for s in out["surface"]["skipped"]}
    assert skipped[str(world["ww"])]["reason"] == "directory_writable"
    link = skipped[str(world["bin"] / "linked")]
    assert link["reason"] == "symlink_into_unsafe_directory"
    assert link["resolved"] == str(world["ww"] / "wwtool")
    blocked = {b["name"]: b["reason"] for b in out["surface"]["blocked_tools"]}
    assert blocked["ww"] == "directory_writable" and blocked["hostile"] == "probe_output_too_large"

    # Bounded: two timeouts of 1.5 s on two workers, plus start-up, far below the hostile's 300 s.
    assert took < 60, took
    never_ran = [p.name for p in world["w"].sentinels.iterdir() if not p.name.endswith(".pid")]
    assert never_ran == [], never_ran
    for pidfile in world["pidfiles"]:
        pid = int(pidfile.read_text())
        assert not process_alive(pid), f"lingering child {pid} of {pidfile.name} is still running"


def test_unverified_tool_advertising_agent_and_tool_in_world_writable_dir_are_never_executed(
        world: dict[str, Any], tmp_path: Path) -> None:
    r, _ = _scan(world, tmp_path)
    assert r.code == 0, r.out + r.err  # without --fail-on the scan reports and exits 0
    assert not world["w"].sentinel("unsigned").exists()
    assert not world["w"].sentinel("ww").exists()
    assert not world["w"].sentinel("tampered").exists()


def test_a_second_scan_reuses_the_cached_verdicts_and_probe_outcomes(world: dict[str, Any],
                                                                     tmp_path: Path) -> None:
    _scan(world, tmp_path)
    r, took = _scan(world, tmp_path)
    rows = {t["name"]: t for t in r.json["surface"]["tools"]}
    assert all(t["cache"] == "hit" for t in rows.values()), {n: t["cache"] for n, t in rows.items()}
    # The hang's 1.5 s timeout is not paid again: its outcome is cached by digest.
    assert rows["hang"]["probe"]["reason"] == "timeout"


def test_scan_text_on_a_pipe_is_plain_lines_and_sarif_names_each_finding(world: dict[str, Any],
                                                                         tmp_path: Path) -> None:
    r = cli("scan", "--bundle-dir", str(world["w"].bundles), str(world["bin"]), "--policy", str(world["policy"]), env=_env(tmp_path))
    assert r.code == 0, r.err
    assert "\x1b[" not in r.out
    line = next(ln for ln in r.out.splitlines() if ln.startswith("unsigned "))
    assert "UNSIGNED" in line and "not_probed (not_verified)" in line  # the state as JSON names it
    s = cli("scan", "--bundle-dir", str(world["w"].bundles), str(world["bin"]), str(world["ww"]), "--policy", str(world["policy"]),
                       "--format", "sarif", env=_env(tmp_path))
    results = json.loads(s.out)["runs"][0]["results"]
    ids = {(x["ruleId"], x["message"]["text"].split(":")[0]) for x in results}
    assert ("atip-trust/scan/blocked", "tampered") in ids
    assert ("atip-trust/scan/not-verified", "unsigned") in ids
    assert any(rid == "atip-trust/scan/unsafe-location" for rid, _ in ids)


def test_policy_probe_never_runs_not_even_a_verified_tool(world: dict[str, Any], tmp_path: Path) -> None:
    pol = world["w"].policy("never", discovery={"probe": "never"})
    r = cli("scan", "--bundle-dir", str(world["w"].bundles), str(world["bin"]), "--policy", str(pol), "--format", "json", "--surface", "--no-cache")
    rows = {t["name"]: t for t in r.json["surface"]["tools"]}
    assert rows["good"]["trust"] == "verified"
    assert (rows["good"]["probe"]["status"], rows["good"]["probe"]["reason"]) == ("not_probed", "probe_disabled")


def test_path_scan_skips_relative_empty_unsafe_and_foreign_entries(world: dict[str, Any],
                                                                   tmp_path: Path) -> None:
    sticky = tmp_path / "sticky"
    sticky.mkdir()
    sticky.chmod(0o1777)  # /tmp-style: others can still plant new names, so never scanned
    group = tmp_path / "group"
    group.mkdir()
    group.chmod(0o775)
    under = tmp_path / "open" / "bin"
    under.mkdir(parents=True)
    (tmp_path / "open").chmod(0o777)  # a parent others can write can swap the directory
    path_env = os.pathsep.join(["", ".", "rel/bin", str(sticky), str(group), str(under), str(world["bin"]),
                                str(world["bin"])])
    res = scan_directories(path_env=path_env)
    reasons = [(s.path, s.reason) for s in res.skipped if not s.path.startswith(str(world["bin"]) + "/")]
    assert reasons == [("", "path_entry_empty"), (".", "path_entry_relative"),
                       ("rel/bin", "path_entry_relative"), (str(sticky), "directory_writable"),
                       (str(group), "directory_writable"), (str(under), "ancestor_writable"),
                       (str(world["bin"]), "duplicate_directory")]
    assert res.directories == [str(world["bin"])]
    assert "good" in {c.name for c in res.candidates}


def test_a_verified_script_whose_interpreter_is_not_admitted_is_never_probed(tmp_path: Path) -> None:
    """Probing a #! tool runs its interpreter: the signed script alone does not vouch for it. Without the
    interpreter's evidence (no --bundle-dir), the kernel would load an unchecked /bin/sh, so the tool is
    listed as not probed and never runs (its sentinel stays absent)."""
    w = World(tmp_path)
    b = tmp_path / "bin"
    w.tool(b, "signedscript", sentinel_script(w.sentinel("script")), identity=ORG_ID)
    pol = w.policy()
    r = cli("scan", str(b), "--policy", str(pol), "--format", "json", "--surface", "--no-cache", env=_env(tmp_path))
    assert not w.sentinel("script").exists(), "the script ran on an interpreter nobody admitted"
    assert "script_refused" in r.out, r.out
    # With the interpreter's evidence it is probed (the control: the refusal is about the interpreter).
    r = cli("scan", "--bundle-dir", str(w.bundles), str(b), "--policy", str(pol), "--format", "json", "--surface",
                       "--no-cache", env=_env(tmp_path))
    assert w.sentinel("script").exists(), r.out + r.err


def test_scan_json_is_the_contracts_list_of_verification_objects(world: dict[str, Any], tmp_path: Path) -> None:
    """docs/contract.md: `scan --format json` prints a list of the verification objects `admit` prints (artifact
    path and sha256, trust level, signature, provenance, checks, decision), each with the tool's name."""
    r = cli("scan", "--bundle-dir", str(world["w"].bundles), str(world["bin"]), "--policy",
                       str(world["policy"]), "--format", "json", env=_env(tmp_path))
    items = json.loads(r.out)
    assert isinstance(items, list) and items, r.out
    by_tool = {i["tool"]: i for i in items}
    assert {"good", "unsigned", "tampered"} <= set(by_tool)
    for item in items:
        assert {"artifact", "trust_level", "signature", "provenance", "checks", "decision", "tool"} <= set(item)
        assert item["decision"]["behavior"] in ("allow", "ask", "deny")
    good, tampered = by_tool["good"], by_tool["tampered"]
    assert good["trust_level"] == "VERIFIED" and good["signature"]["status"] == "valid"
    assert len(good["artifact"]["digest"]["sha256"].removeprefix("sha256:")) == 64
    assert tampered["trust_level"] == "COMPROMISED" and tampered["decision"]["behavior"] == "deny"
    assert by_tool["unsigned"]["trust_level"] == "UNSIGNED"


def test_a_verified_tools_own_agent_claims_of_safety_and_trust_do_not_relax_its_decision(tmp_path: Path) -> None:
    """The tool's own metadata: a signed binary's `--agent` answer says every command is safe and that its
    metadata is verified by an org. That answer is not signed metadata bound to the tool, so its safe
    claims cannot relax gating (the policy allows only verified read-only tools)."""
    w = World(tmp_path)
    b = tmp_path / "bin"
    doc = json.loads(agent_json("claimer"))
    doc["trust"] = {"source": "org", "verified": True}
    w.tool(b, "claimer", agent_script(json.dumps(doc)), identity=ORG_ID)
    r = cli("scan", "--bundle-dir", str(w.bundles), str(b), "--policy", str(w.policy()),
                       "--format", "json", "--no-cache", env=_env(tmp_path))
    [item] = json.loads(r.out)
    assert item["scan"]["probe"]["status"] == "probed", r.out
    assert item["scan"]["metadata"]["from"] == "probe"
    assert item["scan"]["metadata"]["effects_verified"] is False
    assert item["effects_verified"] is False
    assert item["decision"]["behavior"] != "allow", item["decision"]
