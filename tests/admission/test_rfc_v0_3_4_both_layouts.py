"""RFC v0.3 §4 (the seed's file locations) beside RFC §4.2's content-addressed tree: the name-keyed
``tools/<name>.json``, ``shims/<name>.json`` and ``overrides/<name>.json``, and the system-wide
``$XDG_DATA_DIRS`` ``agent-tools`` trees, read by ``atip-trust admit`` and ``scan`` as users call them
(a real XDG tree in this test's folders). The rule is the content-addressed one: a file is evidence only
when a signer the policy names signed its bytes and it binds this binary's digest; otherwise it is a
claim, reported as such; a file about another build or in a folder others can write does not count,
with the reason."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from gate_world import ISSUER, ORG_ID
from test_agent_tools_tree import OTHER, Tree, _check, _codes, tree  # noqa: F401 - tree: the fixture
from test_effects_model import READ_ONLY


def _with_system(tree: Tree, *roots: Path) -> dict[str, str]:
    env = tree.env()
    env["XDG_DATA_DIRS"] = ":".join(str(r) for r in roots)
    return env


def _admit(tree: Tree, env: dict[str, str]) -> tuple[int, dict[str, Any]]:
    p = tree.w.run("admit", "gh", "--command=issue list", "--trusted-root", str(tree.root), "--bundle",
                   str(tree.bundle), "--certificate-identity", ORG_ID, "--certificate-oidc-issuer", ISSUER,
                   "--non-interactive", "--no-audit", "--format", "json", env=env)
    return p.returncode, json.loads(p.stdout)


def test_rfc_v0_3_4_name_keyed_tools_file_signed_and_bound_is_evidence(tree: Tree) -> None:
    path = tree.place(tree.data / "tools" / "gh.json", tree.doc(READ_ONLY))
    r, out = tree.admit()
    assert r.code == 0 and out["effects_verified"] is True and _codes(out)[0] == "READ_ONLY_VERIFIED", out
    assert _check(out, "metadata.binding")["evidence"] == str(path)


def test_rfc_v0_3_4_name_keyed_tools_file_unsigned_is_a_claim_reported_as_such(tree: Tree) -> None:
    tree.place(tree.data / "tools" / "gh.json", tree.doc(READ_ONLY), signer=None)
    r, out = tree.admit()
    assert r.code == 1 and out["effects_verified"] is False, out
    sig = _check(out, "metadata.signature")
    assert sig["status"] == "skip" and "claims only" in sig["message"]


def test_rfc_v0_3_4_name_keyed_file_for_another_build_does_not_count_and_is_not_tampering(tree: Tree) -> None:
    """``tools/gh.json`` written for the gh before an update: stale, so it is not used (and the binary
    is not called COMPROMISED, as a content-addressed file naming another digest would be)."""
    other = hashlib.sha256(OTHER).hexdigest()
    tree.place(tree.data / "tools" / "gh.json", tree.doc(READ_ONLY, digest=other))
    r, out = tree.admit()
    stale = _check(out, "agent_tools.stale")
    assert stale["status"] == "fail" and stale["actual"] == f"sha256:{other}", stale
    assert out["trust_level"] == "VERIFIED" and out["metadata_source"] is None, out
    assert not any(c["name"] == "metadata.binding" for c in out["checks"])


def test_rfc_v0_3_4_content_addressed_file_wins_over_the_name_keyed_one(tree: Tree) -> None:
    tree.place(tree.data / "tools" / "gh.json", tree.doc({**READ_ONLY, "deletes": ["issue"]}))
    path = tree.place(tree.data / "tools" / f"sha256-{tree.hex}.json", tree.doc(READ_ONLY))
    _, out = tree.admit()
    assert _check(out, "metadata.binding")["evidence"] == str(path)


def test_rfc_v0_3_4_readme_shim_layout_shims_curl_json_is_read(tree: Tree) -> None:
    """The README's ``~/.local/share/agent-tools/shims/<tool>.json``: read, and (the default policy
    naming no registry) reported as a claim nobody in policy can vouch for."""
    path = tree.place(tree.data / "shims" / "gh.json", tree.doc(READ_ONLY, shim=True))
    r, out = tree.admit()
    assert _check(out, "metadata.binding")["evidence"] == str(path)
    assert out["effects_verified"] is False and r.code == 1
    assert "registry" in _check(out, "metadata.signature")["message"]


def test_rfc_v0_3_4_name_keyed_shim_for_another_build_is_stale_not_an_error(tree: Tree) -> None:
    other = hashlib.sha256(OTHER).hexdigest()
    tree.place(tree.data / "shims" / "gh.json", tree.doc(READ_ONLY, digest=other, shim=True))
    r, out = tree.admit()
    assert r.code in (0, 1) and _check(out, "agent_tools.stale")["status"] == "fail", out


@pytest.mark.parametrize(("signer", "applied"), [("org", True), (None, False)])
def test_rfc_v0_3_4_name_keyed_override_takes_effect_only_when_signed(tree: Tree, signer: str | None,
                                                                      applied: bool) -> None:
    tree.place(tree.data / "tools" / f"sha256-{tree.hex}.json", tree.doc({**READ_ONLY, "deletes": ["issue"]}))
    tree.place(tree.config / "overrides" / "gh.json", tree.doc(READ_ONLY), signer=ORG_ID if signer else None)
    r, out = tree.admit()
    check = _check(out, "agent_tools.override")
    assert check["status"] == ("pass" if applied else "fail"), check
    assert (r.code == 0) == applied and ("READ_ONLY_VERIFIED" in _codes(out)) == applied, out


def test_xdg_data_dirs_system_wide_tree_is_read_after_the_users(tree: Tree) -> None:
    system = tree.d / "usr-share" / "agent-tools"
    path = tree.place(system / "tools" / "gh.json", tree.doc(READ_ONLY))
    code, out = _admit(tree, _with_system(tree, system.parent))
    assert code == 0 and _check(out, "metadata.binding")["evidence"] == str(path), out
    mine = tree.place(tree.data / "tools" / "gh.json", tree.doc(READ_ONLY))
    _, out = _admit(tree, _with_system(tree, system.parent))
    assert _check(out, "metadata.binding")["evidence"] == str(mine)


def test_xdg_data_dirs_a_system_file_others_can_write_does_not_count(tree: Tree) -> None:
    """The attack: a group-writable system-wide tree; whoever can write it would decide what the tool
    is said to do. The file is skipped, with the reason, as an org policy file would be refused."""
    system = tree.d / "opt-share" / "agent-tools"
    tree.place(system / "tools" / "gh.json", tree.doc(READ_ONLY))
    os.chmod(system / "tools", 0o775)
    code, out = _admit(tree, _with_system(tree, system.parent))
    note = _check(out, "agent_tools.system")
    assert note["status"] == "fail" and "writable by group or others" in note["message"], note
    assert code == 1 and out["effects_verified"] is False and out["metadata_source"] is None, out


def test_xdg_data_dirs_scan_reports_why_a_present_file_does_not_count(tree: Tree) -> None:
    other = hashlib.sha256(OTHER).hexdigest()
    tree.place(tree.data / "tools" / "gh.json", tree.doc(READ_ONLY, digest=other))
    policy = tree.w.write_policy("scan")
    p = tree.w.run("scan", str(tree.gh.parent), "--bundle-dir", str(tree.w.bundles), "--policy", str(policy),
                   "--format", "json", env=tree.env())
    row = next(x for x in json.loads(p.stdout) if x["tool"] == "gh")
    assert any(c["name"] == "agent_tools.stale" for c in row["checks"]), row


def test_xdg_data_dirs_doctor_says_which_present_files_cannot_count(tree: Tree) -> None:
    system = tree.d / "sys-share" / "agent-tools"
    planted = tree.place(system / "shims" / "curl.json", tree.doc(READ_ONLY, shim=True))
    os.chmod(system / "shims", 0o777)
    unsigned = tree.place(tree.data / "tools" / "gh.json", tree.doc(READ_ONLY), signer=None)
    p = tree.w.run("doctor", "--format", "json", env=_with_system(tree, system.parent))
    found = {f["path"]: f for f in json.loads(p.stdout)["findings"] if f["area"] == "agent-tools"}
    assert found[str(planted)]["status"] == "warning" and "writable by group or others" in found[str(planted)]["message"]
    assert found[str(unsigned)]["status"] == "none" and "claim" in found[str(unsigned)]["message"]


def test_rfc_v0_3_4_admit_text_says_why_a_present_file_does_not_count(tree: Tree) -> None:
    other = hashlib.sha256(OTHER).hexdigest()
    path = tree.place(tree.data / "tools" / "gh.json", tree.doc(READ_ONLY, digest=other))
    p = tree.w.run("admit", "gh", "--command=issue list", "--trusted-root", str(tree.root), "--bundle",
                   str(tree.bundle), "--certificate-identity", ORG_ID, "--certificate-oidc-issuer", ISSUER,
                   "--non-interactive", "--no-audit", "-v", env=tree.env())
    line = next((x for x in p.stdout.splitlines() if "agent_tools.stale" in x), p.stdout + p.stderr)
    assert str(path) in line and "another build" in line, p.stdout
