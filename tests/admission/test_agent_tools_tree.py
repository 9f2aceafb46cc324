"""RFC §4.2 / §4.3 / §10.1: the XDG ``agent-tools`` tree every agent shares, read by ``admit`` and
``scan`` as users call them (``python -m atip_trust`` in a subprocess, with ``XDG_DATA_HOME`` and
``XDG_CONFIG_HOME`` pointing at this test's folders, never the real home): ``registry.json`` pins a
name's digest (a mismatch denies, in every mode), ``tools/`` and ``shims/sha256/`` are metadata sources,
and ``overrides/`` takes effect only when signed by a signer policy names (admission/agent_tools.py).

Each attack has its test: a registry.json naming another binary's digest, an override planted unsigned,
one signed by a key policy does not trust, one signed for another binary, a shim filed under a digest
that is not its own. The tool and its metadata are signed with the local test Sigstore
(fixtures/testsigstore.py, through tests/gate_world.py); the policy is the shipped default with the signer
given as identity flags.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from atip_trust.registry import LocalRegistry

from gate_world import GH, ISSUER, ORG_ID, World, make_world
from test_effects_model import READ_ONLY
from verify_helpers import Run

#: The unsigned build gate_world puts in another PATH folder: "another binary" named gh.
OTHER = GH + b"# another build, never signed\n"
EVIL_ID = "https://github.com/evil/tools/.github/workflows/release.yml@refs/tags/v1.0.0"


class Tree:
    """gate_world's signed ``gh`` (and its unsigned twin), and this test's own RFC §4.2 tree. The policy
    is the shipped default with the signer given as identity flags, unless a test sets one."""

    def __init__(self, world: World) -> None:
        self.w = world
        self.d, self.ts, self.root = world.dir, world.ts, world.root
        self.gh = world.signed_bin / "gh"
        self.hex = hashlib.sha256(GH).hexdigest()
        self.bundle = world.bundles / "sha256" / f"{self.hex}.sigstore.json"
        self.data = world.dir / "xdg-data" / "agent-tools"
        self.config = world.dir / "xdg-config" / "agent-tools"
        self.policy: Path | None = None  # None: the shipped default

    def env(self, *, signed: bool = True) -> dict[str, str]:
        env = self.w.env(signed=signed, XDG_DATA_HOME=str(self.data.parent),
                         XDG_CONFIG_HOME=str(self.config.parent), ATIP_CACHE_DIR=str(self.d / "cache"),
                         XDG_STATE_HOME=str(self.d / "state"))
        env.pop("ATIP_TRUST_ORG_POLICY", None)
        return env

    def doc(self, effects: dict[str, Any], *, digest: str | None = None, shim: bool = False) -> bytes:
        """Metadata for ``gh`` whose ``issue list`` has ``effects``, bound to ``digest`` (default: gh's)."""
        doc: dict[str, Any] = {
            "atip": {"version": "0.6"}, "name": "gh", "version": "2.0.0", "description": "GitHub CLI",
            "binary": {"hash": f"sha256:{digest or self.hex}", "name": "gh"},
            "commands": {"issue": {"description": "Issues", "commands": {
                "list": {"description": "List issues", "effects": effects}}}}}
        if shim:
            doc["trust"] = {"source": "community", "verified": True}
        return json.dumps(doc).encode()

    def place(self, path: Path, data: bytes, *, signer: str | None = ORG_ID) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        if signer is not None:
            Path(f"{path}.bundle").write_text(json.dumps(self.ts.sign_artifact(data, identity=signer,
                                                                               issuer=ISSUER)))
        return path

    def admit(self, command: str = "issue list", *more: str, signed: bool = True) -> tuple[Run, dict[str, Any]]:
        """``atip-trust admit gh`` in a subprocess, as CI runs it (no one to answer an ask)."""
        pol = ["--policy", str(self.policy)] if self.policy is not None else []
        p = self.w.run("admit", "gh", f"--command={command}", *pol, "--trusted-root", str(self.root),
                       "--bundle", str(self.bundle), "--certificate-identity", ORG_ID,
                       "--certificate-oidc-issuer", ISSUER, "--non-interactive", "--no-audit",
                       "--format", "json", *more, env=self.env(signed=signed))
        r = Run(p.returncode, p.stdout, p.stderr)
        assert r.code in (0, 1, 2, 3), r.out + r.err
        return r, json.loads(r.out) if r.out.strip() else {}


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    return Tree(make_world(tmp_path))


def _codes(out: dict[str, Any]) -> list[str]:
    return [r["code"] for r in out["decision"]["reasons"]]


def _check(out: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in out["checks"] if c["name"] == name)


def _index(tree: Tree, tools: dict[str, Any]) -> Path:
    index = tree.data / "registry.json"
    index.parent.mkdir(parents=True, exist_ok=True)
    index.write_text(json.dumps({"version": "2", "tools": tools}))
    index.chmod(0o600)
    return index


# -- §4.3 registry.json: name -> digest ----------------------------------------------------------------

def test_rfc_4_3_registry_json_recording_these_bytes_is_checked_and_passes(tree: Tree) -> None:
    LocalRegistry(tree.data / "registry.json").put("gh", tree.gh)
    _, out = tree.admit("--version")
    assert _check(out, "agent_tools.registry")["status"] == "pass", out
    assert _check(out, "agent_tools.registry")["actual"] == f"sha256:{tree.hex}"
    assert "LOCAL_REGISTRY_DIGEST_MISMATCH" not in _codes(out)


def test_rfc_4_3_registry_json_digest_mismatch_denies(tree: Tree) -> None:
    """The attack: registry.json names the digest of another binary for ``gh``. The index never adds
    trust, and the signed ``gh`` whose bytes it does not name is denied, naming both digests."""
    other = hashlib.sha256(OTHER).hexdigest()
    tree.place(tree.data / "tools" / f"sha256-{tree.hex}.json", tree.doc(READ_ONLY))
    ok, before = tree.admit()
    assert ok.code == 0 and _codes(before)[0] == "READ_ONLY_VERIFIED", before  # allowed without the pin
    _index(tree, {"gh": {"path": str(tree.gh), "hash": f"sha256:{other}", "source": "native"}})
    r, out = tree.admit()
    assert r.code == 1 and out["decision"]["behavior"] == "deny", out
    first = out["decision"]["reasons"][0]
    assert first["code"] == "LOCAL_REGISTRY_DIGEST_MISMATCH"
    assert first["expected"] == f"sha256:{other}" and first["actual"] == f"sha256:{tree.hex}"
    assert out["trust_level"] == "VERIFIED"  # the signature is fine: the pin is what fails


def test_rfc_4_3_registry_json_mismatch_denies_in_audit_mode_too(tree: Tree) -> None:
    tree.policy = tree.d / "audit-policy.json"
    tree.policy.write_text(json.dumps({"version": 1, "mode": "audit", "defaults": {"noMatch": "deny"}}))
    _index(tree, {"gh": {"path": str(tree.gh), "hash": "sha256:" + "0" * 64}})
    r, out = tree.admit()
    assert r.code == 1 and _codes(out)[0] == "LOCAL_REGISTRY_DIGEST_MISMATCH", out
    assert not any(c.startswith("MODE_") for c in _codes(out))


def test_rfc_4_3_a_tool_found_elsewhere_on_path_than_registry_json_records_is_denied(tree: Tree) -> None:
    """Another file answers to the name (PATH names the unsigned build first): not the recorded bytes."""
    LocalRegistry(tree.data / "registry.json").put("gh", tree.gh)
    r, out = tree.admit(signed=False)
    assert r.code == 1 and _codes(out)[0] == "LOCAL_REGISTRY_DIGEST_MISMATCH", out
    first = out["decision"]["reasons"][0]
    assert str(tree.gh) in first["message"] and str(tree.w.unsigned_bin / "gh") in first["message"]
    assert first["expected"] == f"sha256:{tree.hex}" and first["actual"] == f"sha256:{hashlib.sha256(OTHER).hexdigest()}"


def test_rfc_4_3_a_malformed_or_foreign_registry_json_is_an_error_never_read_as_empty(tree: Tree) -> None:
    index = _index(tree, {})
    index.write_text('{"version": "2", "tools": {"gh": {"path": 1}}}')
    r, _ = tree.admit()
    assert r.code == 2 and "registry.json" in r.err, r.err
    index.write_text(json.dumps({"version": "2", "tools": {}}))
    index.chmod(0o666)  # another user could have written the pin
    r, _ = tree.admit()
    assert r.code == 2 and "registry" in r.err, r.err


def test_rfc_4_3_scan_reads_registry_json_and_update_registry_pins_again(tree: Tree) -> None:
    tree.place(tree.data / "tools" / f"sha256-{tree.hex}.json", tree.doc(READ_ONLY))
    _index(tree, {"gh": {"path": str(tree.gh), "hash": "sha256:" + "0" * 64}})
    policy = tree.w.write_policy("scan")  # scan takes no identity flags: the signer is the policy's
    args = ("scan", str(tree.gh.parent), "--bundle-dir", str(tree.w.bundles), "--policy", str(policy),
            "--format", "json")
    p = tree.w.run(*args, env=tree.env())
    rows = json.loads(p.stdout)
    assert isinstance(rows, list), p.stdout + p.stderr
    row = next(x for x in rows if x["tool"] == "gh")
    assert row["decision"]["behavior"] == "deny", row
    assert row["decision"]["reasons"][0]["code"] == "LOCAL_REGISTRY_DIGEST_MISMATCH"
    p = tree.w.run(*args, "--update-registry", env=tree.env())
    assert "LOCAL_REGISTRY_DIGEST_MISMATCH" not in p.stdout and "indexed 1 tool" in p.stderr, p.stdout + p.stderr
    entry = LocalRegistry(tree.data / "registry.json").get("gh")
    assert entry is not None and entry.digest.hex == tree.hex and not entry.changed
    _, out = tree.admit()
    assert _check(out, "agent_tools.registry")["status"] == "pass"


# -- §4.2 tools/ and shims/sha256/: metadata by digest ------------------------------------------------

def test_rfc_4_2_tools_dir_metadata_is_read_and_verified_like_metadata(tree: Tree) -> None:
    path = tree.place(tree.data / "tools" / f"gh-{tree.hex}.json", tree.doc(READ_ONLY))
    r, out = tree.admit()
    assert r.code == 0 and out["effects_verified"] is True and _codes(out)[0] == "READ_ONLY_VERIFIED", out
    assert _check(out, "metadata.signature")["evidence"] == f"{path}.bundle"
    assert _check(out, "metadata.binding")["evidence"] == str(path)


def test_rfc_4_2_unsigned_tools_dir_metadata_is_a_claim_only(tree: Tree) -> None:
    tree.place(tree.data / "tools" / f"sha256-{tree.hex}.json", tree.doc(READ_ONLY), signer=None)
    r, out = tree.admit()
    assert r.code == 1 and out["effects_verified"] is False, out
    assert _check(out, "metadata.signature")["status"] == "skip"


def test_rfc_4_2_shims_dir_shim_by_digest_needs_a_registry_signer(tree: Tree) -> None:
    tree.place(tree.data / "shims" / "sha256" / f"{tree.hex}.json", tree.doc(READ_ONLY, shim=True))
    r, out = tree.admit()
    # The default policy names no registry: nobody can vouch for a shim, so its effects are claims.
    assert out["effects_verified"] is False and r.code == 1, out
    assert _check(out, "metadata.signature")["status"] == "fail"
    assert "registry" in _check(out, "metadata.signature")["message"]


def test_rfc_4_5_a_shim_filed_under_a_digest_that_is_not_its_own_is_refused(tree: Tree) -> None:
    """The attack: a shim describing another binary, saved under this binary's digest name."""
    other = hashlib.sha256(OTHER).hexdigest()
    tree.place(tree.data / "shims" / "sha256" / f"{tree.hex}.json", tree.doc(READ_ONLY, digest=other, shim=True))
    r, _ = tree.admit()
    assert r.code == 2, r.out + r.err
    assert other in r.err and tree.hex in r.err, r.err


# -- §4.2 overrides/: only when signed ---------------------------------------------------------------

#: (case, who signs the override, the digest it names, admitted?, the override check's status).
OVERRIDES = [
    ("signed by the policy's signer", ORG_ID, None, True, "pass"),
    ("planted unsigned", None, None, False, "fail"),
    ("signed by a key policy does not trust", EVIL_ID, None, False, "fail"),
    ("signed, for another binary", ORG_ID, hashlib.sha256(OTHER).hexdigest(), False, "fail"),
]


@pytest.mark.parametrize(("case", "signer", "digest", "admitted", "status"), OVERRIDES,
                         ids=[c[0] for c in OVERRIDES])
def test_rfc_4_2_overrides_take_effect_only_when_signed(
        tree: Tree, case: str, signer: str | None, digest: str | None, admitted: bool, status: str) -> None:
    # The tool's own metadata (verified) says `issue list` deletes issues: never read-only.
    tree.place(tree.data / "tools" / f"sha256-{tree.hex}.json", tree.doc({**READ_ONLY, "deletes": ["issue"]}))
    tree.place(tree.config / "overrides" / "sha256" / f"{tree.hex}.json", tree.doc(READ_ONLY, digest=digest),
               signer=signer)
    r, out = tree.admit()
    check = _check(out, "agent_tools.override")
    assert check["status"] == status, check
    if admitted:
        assert r.code == 0 and _codes(out)[0] == "READ_ONLY_VERIFIED", out
    else:
        # Ignored, never applied: the tool's own verified metadata decides (a declared deletion).
        assert r.code == 1 and "READ_ONLY_VERIFIED" not in _codes(out), out
        assert out["effects_verified"] is True  # the tools/ document, not the override
        assert "ignored" in check["message"]


def test_rfc_4_2_an_unsigned_override_cannot_deny_either(tree: Tree) -> None:
    """Never applied means never applied: a planted override naming another digest (which, read as
    the tool's metadata, would make it COMPROMISED) changes nothing."""
    tree.place(tree.data / "tools" / f"sha256-{tree.hex}.json", tree.doc(READ_ONLY))
    bad = tree.doc(READ_ONLY, digest="1" * 64)
    tree.place(tree.config / "overrides" / "sha256" / f"{tree.hex}.json", bad, signer=None)
    r, out = tree.admit()
    assert r.code == 0 and out["trust_level"] == "VERIFIED" and _codes(out)[0] == "READ_ONLY_VERIFIED", out
    assert _check(out, "agent_tools.override")["status"] == "fail"


def test_rfc_4_3_the_library_reads_the_tree_unless_told_not_to(tree: Tree, monkeypatch: pytest.MonkeyPatch) -> None:
    """``admit(..., agent_tools=False)``: a runtime with its own pins reads no tree (a held tool's every
    call reads it: tests/admission/test_held_tool.py)."""
    from atip_trust import admit, load_admission_policy

    monkeypatch.setenv("XDG_DATA_HOME", str(tree.data.parent))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tree.config.parent))
    _index(tree, {"gh": {"path": str(tree.gh), "hash": "sha256:" + "0" * 64}})
    policy = load_admission_policy(signers=[{"identity": ORG_ID, "issuer": ISSUER}])
    args: dict[str, Any] = {"policy": policy, "trusted_root": tree.root, "bundles": [tree.bundle],
                            "command": "--version", "audit": False, "interactive": True}
    assert admit(tree.gh, **args).decision.reasons[0].code == "LOCAL_REGISTRY_DIGEST_MISMATCH"
    assert all(r.code != "LOCAL_REGISTRY_DIGEST_MISMATCH" for r in
               admit(tree.gh, agent_tools=False, **args).decision.reasons)


def test_rfc_4_3_exec_never_runs_bytes_registry_json_does_not_record(tree: Tree) -> None:
    """The pin holds where it matters most: ``exec`` under a policy that allows ``gh pr *`` runs the
    signed gh, and refuses it once registry.json records other bytes for the name."""
    argv = ("exec", "--policy", str(tree.w.policy), "--bundle-dir", str(tree.w.bundles), "--no-audit",
            "--", "gh", "pr", "view", "1")
    ran = tree.w.run(*argv, env=tree.env())
    assert ran.returncode == 0 and ran.stdout == "gh pr view 1\n", ran.stdout + ran.stderr
    _index(tree, {"gh": {"path": str(tree.gh), "hash": f"sha256:{hashlib.sha256(OTHER).hexdigest()}"}})
    refused = tree.w.run(*argv, env=tree.env())
    assert refused.returncode == 1 and refused.stdout == "", refused.stdout
    assert "LOCAL_REGISTRY_DIGEST_MISMATCH" in refused.stderr and tree.hex in refused.stderr, refused.stderr


def test_rfc_4_3_an_agent_hook_denies_a_command_whose_program_registry_json_does_not_record(tree: Tree) -> None:
    from test_hooks import decision, hook_input

    stdin = hook_input("claude-code", "gh pr list --state open", str(tree.d))
    argv = ("hook", "claude-code", "--policy", str(tree.w.policy), "--bundle-dir", str(tree.w.bundles),
            "--no-audit")
    assert decision("claude-code", tree.w.run(*argv, env=tree.env(), stdin=stdin).stdout)[0] == "allow"
    _index(tree, {"gh": {"path": str(tree.gh), "hash": f"sha256:{hashlib.sha256(OTHER).hexdigest()}"}})
    r = tree.w.run(*argv, env=tree.env(), stdin=stdin)
    behavior, reason = decision("claude-code", r.stdout)
    assert behavior == "deny" and "registry.json" in reason, r.stdout + r.stderr


# -- red team: the tree's files as an attacker would plant them ---------------------------------------

def test_attack_an_override_signed_by_a_policy_signer_for_another_tool_name_is_ignored(tree: Tree) -> None:
    """A validly signed override that names this binary's digest but another tool: it lends nothing to
    ``gh`` (metadata_trust binds the document to the tool's name), so the tool's own metadata decides."""
    tree.place(tree.data / "tools" / f"sha256-{tree.hex}.json", tree.doc({**READ_ONLY, "deletes": ["issue"]}))
    doc = json.loads(tree.doc(READ_ONLY))
    doc["name"] = doc["binary"]["name"] = "jq"
    tree.place(tree.config / "overrides" / "sha256" / f"{tree.hex}.json", json.dumps(doc).encode())
    r, out = tree.admit()
    assert r.code == 1 and "READ_ONLY_VERIFIED" not in _codes(out), out
    check = _check(out, "agent_tools.override")
    assert check["status"] == "fail" and "ignored" in check["message"], check


def test_attack_registry_json_with_a_duplicate_name_is_an_error_not_the_last_entry(tree: Tree) -> None:
    """``{"gh": <another digest>, "gh": <these bytes>}``: a parser keeping the last key would read the
    pin as matching and hide the mismatch; duplicate keys are refused (exit 2, a denial)."""
    index = _index(tree, {})
    other = hashlib.sha256(OTHER).hexdigest()
    index.write_text('{"version": "2", "tools": {'
                     f'"gh": {{"path": "{tree.gh}", "hash": "sha256:{other}"}}, '
                     f'"gh": {{"path": "{tree.gh}", "hash": "sha256:{tree.hex}"}}}}}}')
    r, _ = tree.admit()
    assert r.code == 2 and "duplicate" in r.err, r.out + r.err


def test_attack_registry_json_that_is_a_symlink_is_refused_not_followed(tree: Tree) -> None:
    """registry.json a link to a file elsewhere (recording these bytes): the pin is read from the tree's
    own file only; a link is an error (exit 2), never followed."""
    elsewhere = tree.d / "elsewhere-registry.json"
    LocalRegistry(elsewhere).put("gh", tree.gh)
    tree.data.mkdir(parents=True, exist_ok=True)
    (tree.data / "registry.json").symlink_to(elsewhere)
    r, _ = tree.admit()
    assert r.code == 2 and "registry" in r.err, r.out + r.err


def test_attack_update_registry_never_re_pins_a_name_to_bytes_that_did_not_verify(tree: Tree) -> None:
    """registry.json pins ``gh`` to the signed build; the unsigned build now answers to the name (with
    metadata of its own in tools/). ``scan --update-registry`` pins "what verifies now" (docs/cli.md):
    re-pinning the unsigned bytes would silently drop the one denial that catches the swap."""
    other = hashlib.sha256(OTHER).hexdigest()
    LocalRegistry(tree.data / "registry.json").put("gh", tree.gh)
    doc = json.loads(tree.doc(READ_ONLY, digest=other))
    tree.place(tree.data / "tools" / f"sha256-{other}.json", json.dumps(doc).encode(), signer=None)
    policy = tree.w.write_policy("scan")
    p = tree.w.run("scan", str(tree.w.unsigned_bin), "--bundle-dir", str(tree.w.bundles), "--policy", str(policy),
                   "--format", "json", "--update-registry", env=tree.env())
    rows = json.loads(p.stdout)
    row = next(x for x in rows if x["tool"] == "gh")
    assert row["trust_level"] != "VERIFIED", row
    entry = LocalRegistry(tree.data / "registry.json").recorded("gh")
    assert entry is not None and entry.digest.hex == tree.hex, (entry, p.stderr)
    _, out = tree.admit(signed=False)
    assert _codes(out)[0] == "LOCAL_REGISTRY_DIGEST_MISMATCH", out


def test_rfc_4_3_a_registry_json_that_cannot_be_looked_up_is_not_read_as_absent(tree: Tree) -> None:
    """The attack: make the pin unanswerable instead of wrong (a folder on its path that cannot be
    searched; as root, where permissions do not stop a lookup, a symlink loop). ``os.path.isdir`` and
    ``lexists`` answer False for "cannot tell", which read as "no tree, no pin" and allowed bytes the
    pin would have refused. Unknown is an error, a denial (exit 2) naming the path."""
    _index(tree, {"gh": {"path": str(tree.gh), "hash": "sha256:" + "0" * 64}})
    ok, _ = tree.admit()
    assert ok.code == 1  # the pin refuses these bytes
    real = tree.data.parent.with_name("xdg-data-real")
    tree.data.parent.rename(real)
    tree.data.parent.symlink_to(tree.data.parent.name)  # xdg-data -> xdg-data: a loop
    r, _ = tree.admit()
    assert r.code == 2, (r.code, r.err)
    assert "agent-tools" in r.err and "registry.json" in r.err, r.err
