"""The verdict cache (state/cache.py, README "Verdict cache"): a second identical admission reuses the
trust report instead of verifying signatures again, while the decision is made fresh every time; any
change to what the report depends on misses; an entry that is not the user's own, untouched work is
ignored and rebuilt. Through the CLI in real subprocesses, on tools signed by the local test Sigstore."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
import testsigstore
from verify_helpers import Run, cli_subprocess

ISSUER = "https://token.actions.githubusercontent.com"
ORG_ID = "https://github.com/example-org/tools/.github/workflows/release.yml@refs/tags/v1.0.0"
SIGNED = b"#!/bin/sh\necho signed\n"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    ts = testsigstore.TestSigstore(seed=31)
    d = tmp_path_factory.mktemp("vc")
    root = ts.write_trusted_root(d / "trusted_root.json")
    other_root = testsigstore.TestSigstore(seed=32).write_trusted_root(d / "other_root.json")
    tool = d / "signed"
    tool.write_bytes(SIGNED)
    tool.chmod(0o755)
    bundle = d / "signed.sigstore.json"
    bundle.write_text(json.dumps(ts.sign_artifact(SIGNED, identity=ORG_ID, issuer=ISSUER)))
    bundle2 = d / "again.sigstore.json"
    bundle2.write_text(json.dumps(ts.sign_artifact(SIGNED, identity=ORG_ID, issuer=ISSUER)))
    policy = {
        "version": 1,
        "trust": {"trustedRoots": [{"path": str(root)}, {"path": str(other_root)}],
                  "signers": [{"identity": ORG_ID, "issuer": ISSUER}]},
        "permissions": {"ask": ["Bash(signed deploy *)"],
                        "allow": [{"rule": "signed *", "minTrustLevel": "VERIFIED"}]},
        "defaults": {"noMatch": "deny"},
    }
    pol = d / "policy.json"
    pol.write_text(json.dumps(policy))
    pol2 = d / "policy2.json"
    pol2.write_text(json.dumps({**policy, "permissions": {**policy["permissions"],
                                                         "deny": ["Bash(signed rm *)"]}}))
    return {"dir": d, "root": root, "other_root": other_root, "tool": tool, "bundle": bundle,
            "bundle2": bundle2, "policy": pol, "policy2": pol2}


@pytest.fixture()
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("ATIP_TRUST_ORG_POLICY", raising=False)
    d = tmp_path / "cache"
    monkeypatch.setenv("ATIP_CACHE_DIR", str(d))
    return d


def admit(world: dict[str, Any], *extra: str, tool: Path | None = None, command: str = "status",
          bundle: Path | None = None, policy: Path | None = None, root: Path | None = None) -> Run:
    return cli_subprocess(
        "admit", str(tool or world["tool"]), "--command", command, "--format", "json",
        "--policy", str(policy or world["policy"]), "--bundle", str(bundle or world["bundle"]),
        "--trusted-root", str(root or world["root"]), "--no-audit", *extra, env=dict(os.environ))


def without_cache(doc: dict[str, Any]) -> dict[str, Any]:
    """The output less the cache field and the decision's timestamp (two calls, two times)."""
    out = {k: v for k, v in doc.items() if k != "cache"}
    if "agent_tool_decision" in out:
        out["agent_tool_decision"] = {k: v for k, v in out["agent_tool_decision"].items()
                                      if k != "decided_at"}
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
                                                                         tmp_path: Path) -> None:
    tool = tmp_path / "signed"
    tool.write_bytes(SIGNED)
    tool.chmod(0o755)
    time.sleep(2.2)  # past the window in which a same-timestamp edit could go unseen
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
    first, second = cli_subprocess(*args, env=dict(os.environ)), cli_subprocess(*args, env=dict(os.environ))
    assert (first.code, second.code) == (0, 0)
    assert (first.json["cache"], second.json["cache"]) == ("miss", "hit")
    assert without_cache(first.json) == without_cache(second.json)
    flagged = cli_subprocess(*args, "--source-uri", "github.com/example-org/other", env=dict(os.environ))
    assert flagged.json["cache"] == "miss" and flagged.code == 1
    off = cli_subprocess(*args, "--no-cache", env=dict(os.environ))
    assert (off.code, off.json["cache"]) == (0, "off")


def test_cache_stats_counts_and_clear_empties(world, cache_dir: Path) -> None:
    admit(world)
    admit(world, command="deploy prod")  # same report: no new entry
    stats = cli_subprocess("cache", "stats", "--format", "json", env=dict(os.environ))
    assert stats.code == 0
    assert stats.json["path"] == str(cache_dir)
    assert stats.json["entries"] == len(list(cache_dir.glob("*.json"))) >= 1
    assert stats.json["bytes"] == sum(p.stat().st_size for p in cache_dir.glob("*.json"))
    cleared = cli_subprocess("cache", "clear", env=dict(os.environ))
    assert cleared.code == 0 and "removed" in cleared.out
    after = cli_subprocess("cache", "stats", "--format", "json", env=dict(os.environ))
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
