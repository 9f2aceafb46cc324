"""The verdict cache (state/verdict_cache.py, docs/caching.md): a second identical admission reuses the
trust report instead of verifying signatures again, while the decision is made fresh every time; any
change to what the report depends on misses; an entry that is not the user's own, untouched work is
ignored and rebuilt. Through the CLI, each call as a fresh process would make it (in-process with no
memo left over, verify_helpers.py; the many-writer test in real subprocesses), on tools signed by the
local test Sigstore."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

import testsigstore
from verify_helpers import Run, cli
from world import ISSUER, ORG_ID, World

SIGNED = b"#!/bin/sh\necho signed\n"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    w = World(tmp_path_factory.mktemp("vc"), seed=31)
    other_root = testsigstore.TestSigstore(seed=32).write_trusted_root(w.dir / "other_root.json")
    policy = w.policy_doc(roots=(w.root, other_root),
                          permissions={"ask": ["Bash(signed deploy *)"],
                                       "allow": [{"rule": "signed *", "minTrustLevel": "VERIFIED"}]},
                          defaults={"noMatch": "deny"})
    return {"dir": w.dir, "root": w.root, "other_root": other_root, "tool": w.tool("signed", SIGNED),
            "bundle": w.bundle("signed.sigstore.json", SIGNED), "bundle2": w.bundle("again.sigstore.json", SIGNED),
            "policy": w.file("policy.json", policy),
            "policy2": w.file("policy2.json", {**policy, "permissions": {**policy["permissions"],
                                                                         "deny": ["Bash(signed rm *)"]}})}


@pytest.fixture()
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("ATIP_TRUST_ORG_POLICY", raising=False)
    d = tmp_path / "cache"
    monkeypatch.setenv("ATIP_CACHE_DIR", str(d))
    return d


def admit(world: dict[str, Any], *extra: str, tool: Path | None = None, command: str = "status",
          bundle: Path | None = None, policy: Path | None = None, root: Path | None = None) -> Run:
    return cli(
        "admit", str(tool or world["tool"]), "--command", command, "--format", "json",
        "--policy", str(policy or world["policy"]), "--bundle", str(bundle or world["bundle"]),
        "--trusted-root", str(root or world["root"]), "--no-audit", *extra, env=dict(os.environ))


def without_cache(doc: dict[str, Any]) -> dict[str, Any]:
    """The output less the cache field and the decision's timestamp and id (two calls, two decisions)."""
    out = {k: v for k, v in doc.items() if k != "cache"}
    if "agent_tool_decision" in out:
        out["agent_tool_decision"] = {k: v for k, v in out["agent_tool_decision"].items()
                                      if k not in ("decided_at", "decision_id")}
    return out


def entries(cache_dir: Path, prefix: str = "r-") -> list[Path]:
    return sorted(cache_dir.glob(f"{prefix}*.json"))


def test_second_identical_admission_is_a_hit_with_the_same_output(world, cache_dir: Path) -> None:
    first, second = admit(world), admit(world)
    assert (first.code, second.code) == (0, 0), first.err + second.err
    assert first.json["cache"] == "miss" and second.json["cache"] == "hit"
    assert first.json["trust_level"] == "VERIFIED"
    assert without_cache(second.json) == without_cache(first.json)
    assert len(entries(cache_dir)) == 1


@pytest.mark.parametrize("change", ["artifact", "bundle", "policy", "trusted_root", "flag"])
def test_a_change_to_anything_the_report_depends_on_misses(world, cache_dir: Path, tmp_path: Path,
                                                          change: str) -> None:
    tool = tmp_path / "signed"
    tool.write_bytes(SIGNED)
    tool.chmod(0o755)
    assert admit(world, tool=tool).json["cache"] == "miss"
    assert admit(world, tool=tool).json["cache"] == "hit"
    kwargs: dict[str, Any] = {"tool": tool}
    extra: tuple[str, ...] = ()
    if change == "artifact":
        tool.write_bytes(SIGNED.replace(b"signed", b"SIGNED"))  # same size, other bytes
    elif change == "bundle":
        kwargs["bundle"] = world["bundle2"]
    elif change == "policy":
        kwargs["policy"] = world["policy2"]
    elif change == "trusted_root":
        kwargs["root"] = world["other_root"]
    else:
        extra = ("--min-trust-level", "VERIFIED")
    after = admit(world, *extra, **kwargs)
    assert after.json["cache"] == "miss", after.out + after.err
    if change == "artifact":
        # The new bytes were hashed and judged: the old VERIFIED report was not reused for them.
        assert after.json["trust_level"] != "VERIFIED" and after.code == 1


def test_the_decision_is_made_fresh_on_a_hit(world, cache_dir: Path) -> None:
    """An ask rule: whether someone can answer is not part of the cached report."""
    asked = admit(world, "--interactive", "always", command="deploy prod")
    refused = admit(world, "--interactive", "never", command="deploy prod")
    assert (asked.code, asked.json["decision"]["behavior"], asked.json["cache"]) == (3, "ask", "miss")
    assert (refused.code, refused.json["decision"]["behavior"], refused.json["cache"]) == \
        (1, "deny", "hit")
    allowed = admit(world, command="status")
    assert (allowed.code, allowed.json["cache"]) == (0, "hit")


def _compromised_entry(world: dict[str, Any], cache_dir: Path, tmp_path: Path) -> tuple[Path, Path]:
    tool = tmp_path / "signed"
    tool.write_bytes(b"#!/bin/sh\necho not what was signed\n")
    tool.chmod(0o755)
    first = admit(world, tool=tool)
    assert (first.code, first.json["trust_level"], first.json["cache"]) == (1, "COMPROMISED", "miss")
    (entry,) = entries(cache_dir)
    return tool, entry


def test_forged_verified_entry_without_its_integrity_hash_is_ignored(world, cache_dir: Path,
                                                                     tmp_path: Path) -> None:
    tool, entry = _compromised_entry(world, cache_dir, tmp_path)
    text = entry.read_text()
    assert '"trust_level":"COMPROMISED"' in text
    entry.write_text(text.replace('"trust_level":"COMPROMISED"', '"trust_level":"VERIFIED"'))
    again = admit(world, tool=tool)
    assert (again.code, again.json["trust_level"], again.json["cache"]) == (1, "COMPROMISED", "miss")
    assert '"trust_level":"COMPROMISED"' in entry.read_text()  # rebuilt


def test_entry_with_a_flipped_byte_is_ignored(world, cache_dir: Path, tmp_path: Path) -> None:
    tool, entry = _compromised_entry(world, cache_dir, tmp_path)
    data = bytearray(entry.read_bytes())
    data[len(data) // 2] ^= 0x01
    entry.write_bytes(bytes(data))
    again = admit(world, tool=tool)
    assert (again.json["trust_level"], again.json["cache"]) == ("COMPROMISED", "miss")


def test_world_writable_entry_is_ignored(world, cache_dir: Path, tmp_path: Path) -> None:
    tool, entry = _compromised_entry(world, cache_dir, tmp_path)
    entry.chmod(0o666)
    again = admit(world, tool=tool)
    assert again.json["cache"] == "miss"
    assert entry.stat().st_mode & 0o777 == 0o600  # rewritten by the user, private again


@pytest.mark.skipif(os.getuid() != 0, reason="handing a file to another user needs root")
def test_entry_owned_by_another_user_is_ignored(world, cache_dir: Path, tmp_path: Path) -> None:
    tool, entry = _compromised_entry(world, cache_dir, tmp_path)
    os.chown(entry, 65534, -1)
    assert admit(world, tool=tool).json["cache"] == "miss"


def test_cache_files_are_private(world, cache_dir: Path) -> None:
    admit(world)
    assert cache_dir.stat().st_mode & 0o777 == 0o700
    assert all(p.stat().st_mode & 0o777 == 0o600 for p in cache_dir.iterdir())


def test_no_cache_neither_reads_nor_writes(world, cache_dir: Path) -> None:
    off = admit(world, "--no-cache")
    assert (off.code, off.json["cache"]) == (0, "off")
    assert not cache_dir.exists() or not list(cache_dir.iterdir())
    assert admit(world).json["cache"] == "miss"
    assert admit(world, "--no-cache").json["cache"] == "off"


def test_unchanged_file_is_not_hashed_again_but_an_edit_in_place_is_seen(world, cache_dir: Path,
                                                                         tmp_path: Path, settle) -> None:
    tool = tmp_path / "signed"
    tool.write_bytes(SIGNED)
    tool.chmod(0o755)
    settle()  # past the window in which a same-timestamp edit could go unseen
    assert admit(world, tool=tool).json["cache"] == "miss"
    assert len(entries(cache_dir, "s-")) == 1  # the stat fast path remembered this file
    assert admit(world, tool=tool).json["cache"] == "hit"
    tool.write_bytes(SIGNED.replace(b"signed", b"SIGNED"))
    edited = admit(world, tool=tool)
    assert edited.json["cache"] == "miss" and edited.code == 1
    assert edited.json["artifact"]["digest"]["sha256"] != admit(world).json["artifact"]["digest"]["sha256"]


def test_verify_hit_gives_the_same_output_and_a_changed_flag_misses(world, cache_dir: Path) -> None:
    args = ("verify", str(world["tool"]), "--bundle", str(world["bundle"]), "--trusted-root",
            str(world["root"]), "--certificate-identity", ORG_ID, "--certificate-oidc-issuer", ISSUER,
            "--format", "json")
    first, second = cli(*args, env=dict(os.environ)), cli(*args, env=dict(os.environ))
    assert (first.code, second.code) == (0, 0)
    assert (first.json["cache"], second.json["cache"]) == ("miss", "hit")
    assert without_cache(first.json) == without_cache(second.json)
    flagged = cli(*args, "--source-uri", "github.com/example-org/other", env=dict(os.environ))
    assert flagged.json["cache"] == "miss" and flagged.code == 1
    off = cli(*args, "--no-cache", env=dict(os.environ))
    assert (off.code, off.json["cache"]) == (0, "off")


def test_cache_stats_counts_and_clear_empties(world, cache_dir: Path) -> None:
    admit(world)
    admit(world, command="deploy prod")  # same report: no new entry
    stats = cli("cache", "stats", "--format", "json", env=dict(os.environ))
    assert stats.code == 0
    assert stats.json["path"] == str(cache_dir)
    assert stats.json["entries"] == len(list(cache_dir.glob("*.json"))) >= 1
    assert stats.json["bytes"] == sum(p.stat().st_size for p in cache_dir.glob("*.json"))
    cleared = cli("cache", "clear", env=dict(os.environ))
    assert cleared.code == 0 and "removed" in cleared.out
    after = cli("cache", "stats", "--format", "json", env=dict(os.environ))
    assert after.json["entries"] == 0 and after.json["bytes"] == 0
    assert admit(world).json["cache"] == "miss"


def test_a_policy_validated_once_is_remembered_and_an_invalid_edit_is_still_refused(
        world, cache_dir: Path, tmp_path: Path) -> None:
    """The schema's verdict on a policy is kept by the document's digest: the same document is not
    validated again, an edited one is (an unknown key stays an error on every call), and an invalid
    document is never remembered."""
    pol = tmp_path / "policy.json"
    doc = json.loads(world["policy"].read_text())
    pol.write_text(json.dumps(doc))
    assert admit(world, policy=pol).code == 0
    assert len(entries(cache_dir, "v-")) == 1
    assert admit(world, policy=pol).json["cache"] == "hit"
    assert len(entries(cache_dir, "v-")) == 1
    for _ in range(2):
        pol.write_text(json.dumps({**doc, "permissions": {**doc["permissions"], "alow": ["x"]}}))
        bad = admit(world, policy=pol)
        assert bad.code == 2 and "unknown key" in bad.err, bad.err
    assert len(entries(cache_dir, "v-")) == 1
    off = admit(world, "--no-cache", policy=world["policy2"])
    assert off.code == 0 and len(entries(cache_dir, "v-")) == 1  # --no-cache remembers nothing


# -- must-show: every input misses, nothing but the user's own untouched entries is trusted -------------

OTHER_ID = "https://github.com/someone-else/tools/.github/workflows/release.yml@refs/tags/v1.0.0"


def test_a_change_of_an_org_policy_layer_misses(world, cache_dir: Path, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    org = tmp_path / "org.json"
    org.write_text(json.dumps({"version": 1, "permissions": {"deny": ["Bash(signed wipe *)"]}}))
    org.chmod(0o644)
    monkeypatch.setenv("ATIP_TRUST_ORG_POLICY", str(org))
    assert admit(world).json["cache"] == "miss"
    assert admit(world).json["cache"] == "hit"
    org.write_text(json.dumps({"version": 1, "permissions": {"deny": ["Bash(signed status *)"]}}))
    after = admit(world)
    assert after.json["cache"] == "miss" and after.code == 1  # and the new org rule decides


def test_a_change_of_a_public_key_the_policy_names_misses(world, cache_dir: Path, tmp_path: Path) -> None:
    """The policy digest names the key file's path; the key in it is a trust anchor too."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    def pem() -> bytes:
        return ec.generate_private_key(ec.SECP256R1()).public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)

    key = tmp_path / "anchor.pem"
    key.write_bytes(pem())
    doc = json.loads(world["policy"].read_text())
    doc["trust"]["publicKeys"] = [{"path": str(key)}]
    pol = tmp_path / "keyed.json"
    pol.write_text(json.dumps(doc))
    assert admit(world, policy=pol).json["cache"] == "miss"
    assert admit(world, policy=pol).json["cache"] == "hit"
    key.write_bytes(pem())
    assert admit(world, policy=pol).json["cache"] == "miss"


def test_another_atip_trust_version_misses(world, cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The version is part of every key: a report computed by another release is never reused."""
    from atip_trust.admission import verdict_key as gate_cached
    from atip_trust.admission.admit import admit as library_admit
    from atip_trust.admission.admit import load_admission_policy

    policy = load_admission_policy(world["policy"])

    def once() -> str:
        return library_admit(world["tool"], policy=policy, command="status", bundles=[world["bundle"]],
                             trusted_root=world["root"], audit=False).cache

    assert (once(), once()) == ("miss", "hit")
    monkeypatch.setattr(gate_cached, "__version__", "999.0.0")
    assert (once(), once()) == ("miss", "hit")


def test_same_size_rewrite_that_restores_the_old_mtime_misses(world, cache_dir: Path,
                                                              tmp_path: Path, settle) -> None:
    """The stat fast path keys on ctime too, which no user can set back: restoring the size and the
    mtime after swapping the bytes does not make the old digest (and its VERIFIED report) apply."""
    tool = tmp_path / "signed"
    tool.write_bytes(SIGNED)
    tool.chmod(0o755)
    settle()  # outside the same-timestamp window, so the stat fast path remembers the file
    first = admit(world, tool=tool)
    assert (first.json["cache"], first.json["trust_level"]) == ("miss", "VERIFIED")
    assert len(entries(cache_dir, "s-")) == 1
    before = tool.stat()
    tool.write_bytes(SIGNED.replace(b"signed", b"SIGNED"))
    os.utime(tool, ns=(before.st_atime_ns, before.st_mtime_ns))
    after_stat = tool.stat()
    assert (after_stat.st_size, after_stat.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    again = admit(world, tool=tool)
    assert again.json["cache"] == "miss" and again.json["trust_level"] != "VERIFIED" and again.code == 1


@pytest.mark.slow
def test_an_expired_waiver_takes_effect_on_a_cache_hit(world, cache_dir: Path, tmp_path: Path) -> None:
    """The report is cached, the decision is not: a waiver that lifted the policy's minimum trust
    level stops doing so the moment it expires, although the next call reuses the report."""
    from datetime import UTC, datetime, timedelta

    ts = testsigstore.TestSigstore(seed=31)
    other = tmp_path / "other.sigstore.json"
    other.write_text(json.dumps(ts.sign_artifact(SIGNED, identity=OTHER_ID, issuer=ISSUER)))
    expires = (datetime.now(UTC) + timedelta(seconds=6)).replace(microsecond=0)
    doc = json.loads(world["policy"].read_text())
    doc = {**doc, "requirements": {"minTrustLevel": "VERIFIED"},
           "permissions": {"allow": ["Bash(signed *)"]},
           "waivers": [{"tool": "signed", "reason": "vendor re-signs next week",
                        "expires": expires.isoformat().replace("+00:00", "Z")}]}
    pol = tmp_path / "waived.json"
    pol.write_text(json.dumps(doc))
    live = admit(world, policy=pol, bundle=other)
    assert (live.code, live.json["trust_level"], live.json["cache"]) == (0, "UNVERIFIED", "miss")
    assert "WAIVED" in [r["code"] for r in live.json["decision"]["reasons"]]
    time.sleep(max(0.0, (expires - datetime.now(UTC)).total_seconds()) + 1.5)
    dead = admit(world, policy=pol, bundle=other)
    assert (dead.code, dead.json["cache"]) == (1, "hit"), dead.out
    codes = [r["code"] for r in dead.json["decision"]["reasons"]]
    assert "WAIVER_EXPIRED" in codes and "WAIVED" not in codes


def test_a_cache_entry_replaced_by_a_symlink_is_not_followed(world, cache_dir: Path,
                                                            tmp_path: Path) -> None:
    """A VERIFIED entry planted elsewhere and linked in place of the real one is ignored."""
    tool, entry = _compromised_entry(world, cache_dir, tmp_path)
    good = admit(world)  # a genuine VERIFIED entry, the user's own, to copy
    assert good.json["trust_level"] == "VERIFIED"
    planted = tmp_path / "planted.json"
    planted.write_bytes(entry.read_bytes())
    entry.unlink()
    entry.symlink_to(planted)
    again = admit(world, tool=tool)
    assert (again.json["cache"], again.json["trust_level"]) == ("miss", "COMPROMISED")
    assert not entry.is_symlink()  # replaced by a real file


@pytest.mark.slow
def test_sixteen_processes_deciding_and_writing_at_once_leave_no_corrupt_entry(
        world, cache_dir: Path) -> None:
    import subprocess
    import sys

    def argv(command: str) -> list[str]:
        return [sys.executable, "-m", "atip_trust", "admit", str(world["tool"]), "--command", command,
                "--format", "json", "--policy", str(world["policy"]), "--bundle", str(world["bundle"]),
                "--trusted-root", str(world["root"]), "--no-audit", "--interactive", "never"]

    commands = ["status", "deploy prod"] * 8  # an allow and an ask-turned-deny, same report
    procs = [subprocess.Popen(argv(c), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              stdin=subprocess.DEVNULL, env=dict(os.environ)) for c in commands]
    outs = [p.communicate(timeout=300) for p in procs]
    codes = [p.returncode for p in procs]
    assert codes == [0, 1] * 8, [o[1] for o in outs]
    docs = [json.loads(o[0]) for o in outs]
    assert {d["trust_level"] for d in docs} == {"VERIFIED"}
    assert [d["decision"]["behavior"] for d in docs] == ["allow", "deny"] * 8
    # Every file left is whole: it parses and carries its integrity hash; no temporary file remains.
    from atip_trust.state.verdict_cache import VerdictCache

    names = sorted(p.name for p in cache_dir.iterdir())
    assert names and not [n for n in names if n.startswith(".tmp-")]
    cache = VerdictCache(cache_dir)
    for name in names:
        assert cache._read(name) is not None, name
    assert admit(world, "--interactive", "never").json["cache"] == "hit"


def test_a_hit_decides_with_the_digest_of_the_report_it_read_back(world, cache_dir: Path) -> None:
    """The cache keeps ``report.digest()`` with the report so a hit need not serialise it again; the
    decision (and the audit line, which copies it) names the digest of exactly the facts it printed."""
    from atip_trust.facts.report import TrustReport

    first, second = admit(world), admit(world)
    assert (first.json["cache"], second.json["cache"]) == ("miss", "hit")
    digest = second.json["decision"]["report_digest"]
    assert digest == first.json["decision"]["report_digest"]
    assert digest == TrustReport.from_json(second.json).digest()
    # Another command or interactivity: the same facts, the same digest, a fresh decision.
    third = admit(world, "--interactive", "never", command="deploy prod")
    assert (third.json["cache"], third.json["decision"]["report_digest"]) == ("hit", digest)
