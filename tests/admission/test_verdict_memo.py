"""The verdict cache's memory inside one process (admission/verdict_key.py, _base/statmemo.py): a runtime that
calls the library ``admit()`` before every tool call is served from memory, and every change that
misses on disk misses in memory too, between two calls in ONE process: the tool, the bundle, the
trusted root, the policy, a key file the policy names, the entry itself (edited, made writable by
others, removed), atip-trust's version and the entry's age. The decision is still made on every call.

Each test first lets its files and the entry age past the same-timestamp window (2 s: a file changed
within it is never remembered; conftest.py ``settle``), then checks that the memory is in use before it
changes one input.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from atip_trust.admission import verdict_key as gate_cached
from atip_trust.admission.admit import Admission, admit, load_admission_policy

import testsigstore
from world import ISSUER, ORG_ID, World

OTHER_ID = "https://github.com/someone-else/tools/.github/workflows/release.yml@refs/tags/v1.0.0"
SIGNED = b"#!/bin/sh\necho signed\n"


@pytest.fixture()
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settle: Callable[[], None]) -> dict[str, Any]:
    monkeypatch.delenv("ATIP_TRUST_ORG_POLICY", raising=False)
    monkeypatch.delenv("ATIP_TRUST_POLICY", raising=False)
    cache = tmp_path / "cache"
    monkeypatch.setenv("ATIP_CACHE_DIR", str(cache))
    w = World(tmp_path, seed=41)
    # Pretty-printed, so that a replacement written compactly can be padded to the very same size.
    w.file(w.root.name, json.loads(w.root.read_text()), indent=2)
    other_root = testsigstore.TestSigstore(seed=42).write_trusted_root(tmp_path / "other_root.json")
    tool = w.tool("signed", SIGNED)
    bundle = w.bundle("signed.sigstore.json", SIGNED, identity=ORG_ID, indent=2)
    policy = w.policy_file(signers=(ORG_ID,), permissions={"ask": ["Bash(signed deploy *)"],
                                                           "allow": [{"rule": "signed *", "minTrustLevel": "VERIFIED"}]},
                           defaults={"noMatch": "deny"})
    return {"dir": tmp_path, "cache": cache, "ts": w.ts, "root": w.root, "other_root": other_root,
            "tool": tool, "bundle": bundle, "policy": policy,
            "loaded": load_admission_policy(policy), "settle": settle}


def once(w: dict[str, Any], command: str = "status", interactive: bool = False) -> Admission:
    return admit(w["tool"], policy=w["loaded"], command=command, bundles=[w["bundle"]],
                 trusted_root=w["root"], interactive=interactive, audit=False)


def remembered(w: dict[str, Any]) -> int:
    """How many reports this process remembers for the world's cache directory."""
    return sum(1 for slot in gate_cached._REPORTS if slot[0] == str(w["cache"]))


def warm(w: dict[str, Any]) -> None:
    """Miss, then (past the same-timestamp window) a hit from disk that is remembered, then a hit from
    memory: the state every test below changes one input in."""
    first = once(w)
    assert (first.cache, first.report.trust_level.name) == ("miss", "VERIFIED")
    w["settle"]()
    assert once(w).cache == "hit"
    assert remembered(w) == 1
    assert once(w).cache == "hit"


def rewrite_same_size(path: Path, data: bytes) -> None:
    """Replace ``path``'s bytes in place with ``data`` padded (JSON whitespace) to the old size, and
    set the old mtime back: only the ctime, which nobody can set back, tells the change."""
    before = path.stat()
    assert len(data) <= before.st_size, "the replacement must not be longer"
    path.write_bytes(data + b" " * (before.st_size - len(data)))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (before.st_ino, before.st_size,
                                                               before.st_mtime_ns)


def entry_of(w: dict[str, Any]) -> Path:
    (entry,) = sorted(w["cache"].glob("r-*.json"))
    return entry


def test_a_repeated_call_in_one_process_is_served_from_memory_with_the_same_answer(world) -> None:
    first = once(world)
    world["settle"]()
    from_disk, from_memory = once(world), once(world)
    assert (first.cache, from_disk.cache, from_memory.cache) == ("miss", "hit", "hit")
    assert remembered(world) == 1
    for a in (from_disk, from_memory):
        assert a.report.to_json(full=True) == first.report.to_json(full=True)
        assert a.decision.to_json() == first.decision.to_json()
    # Each call gets its own report: changing one does not change what the next call is given.
    from_memory.report.checks.clear()
    from_memory.report.signature.extensions.clear()
    assert once(world).report.to_json(full=True) == first.report.to_json(full=True)


def test_a_tool_rewritten_in_place_between_two_calls_in_one_process_is_hashed_again(world) -> None:
    warm(world)
    rewrite_same_size(world["tool"], SIGNED.replace(b"signed", b"SIGNED"))
    after = once(world)
    assert after.cache == "miss"
    assert after.report.trust_level.name == "COMPROMISED" and after.behavior == "deny"


def test_a_bundle_replaced_between_two_calls_in_one_process_is_read_again(world) -> None:
    warm(world)
    other = world["ts"].sign_artifact(SIGNED, identity=OTHER_ID, issuer=ISSUER)
    rewrite_same_size(world["bundle"], json.dumps(other, separators=(",", ":")).encode())
    after = once(world)
    assert after.cache == "miss"
    assert after.report.trust_level.name == "UNVERIFIED" and after.behavior == "deny"


def test_a_trusted_root_replaced_between_two_calls_in_one_process_is_read_again(world) -> None:
    warm(world)
    other = json.loads(world["other_root"].read_text())
    rewrite_same_size(world["root"], json.dumps(other, separators=(",", ":")).encode())
    after = once(world)
    assert after.cache == "miss"
    assert after.report.trust_level.name != "VERIFIED" and after.behavior == "deny"


def test_a_policy_changed_between_two_calls_in_one_process_misses(world) -> None:
    warm(world)
    doc = json.loads(world["policy"].read_text())
    doc["trust"]["signers"] = [{"identity": OTHER_ID, "issuer": ISSUER}]
    world["policy"].write_text(json.dumps(doc))
    world["loaded"] = load_admission_policy(world["policy"])
    after = once(world)
    assert after.cache == "miss"
    assert after.report.trust_level.name == "UNVERIFIED" and after.behavior == "deny"


def test_a_key_file_the_policy_names_rewritten_between_two_calls_in_one_process_misses(world) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    def pem() -> bytes:
        return ec.generate_private_key(ec.SECP256R1()).public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)

    key = world["dir"] / "anchor.pem"
    key.write_bytes(pem())
    doc = json.loads(world["policy"].read_text())
    doc["trust"]["publicKeys"] = [{"path": str(key)}]
    world["policy"].write_text(json.dumps(doc))
    world["loaded"] = load_admission_policy(world["policy"])
    warm(world)
    rewrite_same_size(key, pem())
    assert once(world).cache == "miss"


def test_a_cache_entry_edited_between_two_calls_in_one_process_is_not_trusted(world) -> None:
    warm(world)
    entry = entry_of(world)
    data = entry.read_bytes()
    forged = data.replace(b'"status":"pass"', b'"status":"fail"', 1)
    assert forged != data
    rewrite_same_size(entry, forged)
    after = once(world)
    assert after.cache == "miss"  # the edit broke the integrity hash: verified again, and kept again
    assert after.report.trust_level.name == "VERIFIED"


def test_a_cache_entry_made_writable_by_others_between_two_calls_in_one_process_is_not_trusted(
        world) -> None:
    warm(world)
    entry_of(world).chmod(0o622)
    assert once(world).cache == "miss"


def test_a_cache_entry_removed_between_two_calls_in_one_process_is_not_used(world) -> None:
    warm(world)
    entry_of(world).unlink()
    assert once(world).cache == "miss"
    assert entry_of(world).is_file()


def test_another_version_between_two_calls_in_one_process_misses(world,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    warm(world)
    monkeypatch.setattr(gate_cached, "__version__", "999.0.0")
    assert once(world).cache == "miss"


def test_an_entry_past_its_age_between_two_calls_in_one_process_is_not_used(
        world, monkeypatch: pytest.MonkeyPatch) -> None:
    from atip_trust.state import verdict_cache as state_cache

    warm(world)
    monkeypatch.setattr(state_cache, "MAX_AGE", 0)  # any age is past it now
    assert once(world).cache == "miss"


def test_the_decision_is_made_on_every_call_served_from_memory(world) -> None:
    warm(world)
    asked = once(world, command="deploy prod", interactive=True)
    refused = once(world, command="deploy prod", interactive=False)
    allowed = once(world)
    assert [a.cache for a in (asked, refused, allowed)] == ["hit", "hit", "hit"]
    assert [a.behavior for a in (asked, refused, allowed)] == ["ask", "deny", "allow"]
    # The decisions are the admissions' own; the reports served from memory hold none (facts only).
    assert not hasattr(allowed.report, "decision") and not hasattr(asked.report, "decision")
    assert allowed.to_json()["decision"] == allowed.decision.to_json() != asked.to_json()["decision"]


def test_a_deny_rule_added_to_the_policy_between_two_calls_in_one_process_denies_at_once(world) -> None:
    """A hostile timing: the tool is allowed and served from memory, then the admin adds a deny rule for
    it. The next call in the same process must deny — the trust report may come from memory, the
    decision (and the per-policy rule index decide() keeps) must follow the new policy object."""
    warm(world)
    assert once(world).behavior == "allow"
    doc = json.loads(world["policy"].read_text())
    doc["permissions"]["deny"] = ["Bash(signed status)"]
    world["policy"].write_text(json.dumps(doc))
    world["loaded"] = load_admission_policy(world["policy"])
    after = once(world)
    assert after.behavior == "deny", after.decision.reasons
    assert "COMMAND_DENIED" in [r.code for r in after.decision.reasons]


@pytest.mark.parametrize("line", ["deploy\tprod", "deploy\nprod", "  deploy   prod  ", "deploy \t\r\n prod"])
def test_a_command_whose_words_are_split_by_tabs_or_newlines_still_meets_its_ask_rule(
        world, line: str) -> None:
    """A crafted --command: blanks other than one space between the words (the plain-line split skips
    shlex) must reach the same words shlex gives, so ``signed deploy *`` (ask) still applies; in a
    non-interactive call an ask is not an allow."""
    got = once(world, command=line)
    assert got.command == ("deploy", "prod"), got.command
    assert got.behavior != "allow", got.decision.reasons


def test_a_no_break_space_is_one_word_as_the_shell_reads_it_not_two(world) -> None:
    """``deploy\\u00a0prod`` is one word for shlex and for a POSIX shell (only space, tab and newline
    split), so it is decided as that one word: the fast split must not invent a ``deploy`` the shell
    would never pass (nor hide one it would)."""
    got = once(world, command="deploy\u00a0prod")
    assert got.command == ("deploy\u00a0prod",)
