"""Attacks on the evidence a decision rests on, each through the CLI a user would meet it in.

* signature material about *another* file lending its signer to this one (headline, qualifiers, M-of-N);
* signed metadata for another tool lending its effects, and its ``trust.source`` claim;
* evidence files read more than once (the verified bytes must be the parsed bytes);
* the audit log: FIFOs, short writes, unloadable policies, output failing after the line was written;
* a bare tool name resolved from the current directory or a relative PATH entry;
* control characters in names forging output lines.

Real files, real bundles from the local test Sigstore (fixtures/testsigstore.py), real subprocesses.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import testsigstore
from verify_helpers import Run, cli, run_cli
from world import ISSUER, ORG_ID, REGISTRY_ID, World

EVIL_ID = "https://github.com/evil/hostile/.github/workflows/release.yml@refs/tags/v6.6.6"
TOOL = b"#!/bin/sh\necho tool\n"
OTHER = b"#!/bin/sh\necho some other file\n"
SAFE = {"destructive": False, "reversible": True, "idempotent": True, "network": False,
        "filesystem": {"read": True, "write": False, "delete": False}, "cost": {"billable": False},
        "interactive": {"stdin": "none", "prompts": False, "tty": False}}


def _dump(path: Path, obj: Any) -> Path:
    path.write_text(json.dumps(obj, indent=2))
    return path


def _hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture(scope="module")
def ts() -> testsigstore.TestSigstore:
    return testsigstore.TestSigstore(seed=91)


@pytest.fixture(scope="module")
def world(ts: testsigstore.TestSigstore, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    w = World(tmp_path_factory.mktemp("evidence"), ts=ts)
    tool = w.tool("bin/tool", TOOL)
    # A valid SLSA attestation by the trusted identity, about another file.
    stmt = testsigstore.slsa_v1_statement("other", _hex(OTHER))
    other_att = w.attestation("other.intoto.sigstore.json", stmt, indent=2)
    return {"dir": w.dir, "tool": tool, "other_att": other_att,
            "tool_sig": w.bundle("tool.sigstore.json", TOOL, indent=2)}


def policy(world: dict[str, Any], name: str, **doc: Any) -> Path:
    base: dict[str, Any] = {
        "version": 1,
        "trust": {
            "trustedRoots": [{"path": "trusted_root.json"}],
            "signers": [{"identity": ORG_ID, "issuer": ISSUER}],
            "registries": [{"url": "file:///srv/shims",
                            "signers": [{"identity": REGISTRY_ID, "issuer": ISSUER}]}],
        },
        "defaults": {"noMatch": "deny"},
    }
    base.update(doc)
    return _dump(world["dir"] / f"{name}.json", base)


def admit(world: dict[str, Any], tool: str | Path, *args: str) -> Run:
    return cli("admit", str(tool), *args, "--non-interactive", "--format", "json",
               "--audit-log", str(world["dir"] / "audit.jsonl"))


def codes(r: Run) -> list[str]:
    return [x["code"] for x in r.json["decision"]["reasons"]]


# -- signature material about another file ---------------------------------------------------------

SIGNED_BY_ORG = {"rule": "tool *", "signer": {"identity": ORG_ID, "issuer": ISSUER}}


def test_attestation_about_other_file_does_not_satisfy_signer_qualifier(world) -> None:
    p = policy(world, "qualified", permissions={"allow": [SIGNED_BY_ORG]})
    r = admit(world, world["tool"], "--command", "run", "--policy", str(p), "--bundle", str(world["other_att"]))
    assert r.code == 1, r.out + r.err
    out = r.json
    assert out["trust_level"] == "UNSIGNED"
    assert out["decision"]["behavior"] == "deny"
    assert "RULE_QUALIFIER_NOT_MET" in codes(r) and "COMMAND_ALLOWED" not in codes(r)
    (att,) = out["attestations"]
    assert att["valid"] is True and att["applies"] is False  # reported, but about another artifact


def test_attestation_about_other_file_is_never_the_headline_signature(world) -> None:
    p = policy(world, "qualified", permissions={"allow": [SIGNED_BY_ORG]})
    r = admit(world, world["tool"], "--command", "run", "--policy", str(p), "--bundle", str(world["other_att"]))
    sig = r.json["signature"]
    assert sig["status"] == "absent" and sig["identity"] is None and sig["issuer"] is None
    r = cli("verify", str(world["tool"]), "--bundle", str(world["other_att"]), "--format", "json",
            "--trusted-root", str(world["dir"] / "trusted_root.json"),
            "--certificate-identity", ORG_ID, "--certificate-oidc-issuer", ISSUER)
    assert r.code == 1
    assert r.json["trust_level"] == "UNSIGNED" and r.json["signature"]["status"] == "absent"
    subject = [c for c in r.json["checks"] if c["name"] == "subject"]
    assert subject and subject[0]["actual"] == [f"sha256:{_hex(OTHER)}"]


def test_attestation_about_other_file_does_not_count_towards_signature_threshold(world) -> None:
    p = policy(world, "threshold", requirements={"signatures": {"threshold": 1}},
               permissions={"allow": ["Bash"]})
    r = admit(world, world["tool"], "--command", "run", "--policy", str(p), "--bundle", str(world["other_att"]))
    assert r.code == 1, r.out + r.err
    reason = next(x for x in r.json["decision"]["reasons"] if x["code"] == "SIGNATURE_THRESHOLD")
    assert reason["expected"] == ">= 1" and reason["actual"] == 0


def test_signature_over_this_file_still_satisfies_signer_qualifier(world) -> None:
    p = policy(world, "qualified", permissions={"allow": [SIGNED_BY_ORG]})
    r = admit(world, world["tool"], "--command", "run", "--policy", str(p),
              "--bundle", str(world["tool_sig"]), "--bundle", str(world["other_att"]))
    assert r.code == 0, r.out + r.err
    assert r.json["signature"]["status"] == "valid" and r.json["signature"]["identity"] == ORG_ID
    assert codes(r)[0] == "COMMAND_ALLOWED"


# -- signed metadata must be about this tool; its source counts only when verified ------------------

SAFE_READ_POLICY = {"defaults": {"noMatch": "deny", "allowVerifiedReadOnly": True}}


def _meta(d: Path, name: str, *, tool_name: str, checksum: str | None, source: str = "vendor") -> Path:
    trust: dict[str, Any] = {"source": source, "verified": True}
    if checksum is not None:
        trust["integrity"] = {"checksum": checksum}
    return _dump(d / name, {"atip": {"version": "0.6"}, "name": tool_name, "version": "1.0.0",
                            "description": "a tool", "trust": trust,
                            "commands": {"status": {"description": "Show status", "effects": SAFE}}})


@pytest.fixture(scope="module")
def metas(ts: testsigstore.TestSigstore, world: dict[str, Any]) -> dict[str, tuple[Path, Path]]:
    """Metadata documents, each with a bundle by the policy's signer over its exact bytes."""
    d = world["dir"]
    out = {}
    for key, kwargs in {
        "bound": {"tool_name": "tool", "checksum": f"sha256:{_hex(TOOL)}"},
        "no-digest": {"tool_name": "tool", "checksum": None},
        "other-name": {"tool_name": "othertool", "checksum": f"sha256:{_hex(TOOL)}"},
        "other-digest": {"tool_name": "tool", "checksum": f"sha256:{_hex(OTHER)}"},
    }.items():
        path = _meta(d, f"meta-{key}.json", **kwargs)  # type: ignore[arg-type]
        bundle = _dump(d / f"meta-{key}.sigstore.json",
                       ts.sign_artifact(path.read_bytes(), identity=ORG_ID, issuer=ISSUER))
        out[key] = (path, bundle)
    return out


def _admit_meta(world: dict[str, Any], p: Path, meta: tuple[Path, Path], *extra: str) -> Run:
    return admit(world, world["tool"], "--command", "status", "--policy", str(p),
                 "--bundle", str(world["tool_sig"]), "--metadata", str(meta[0]),
                 "--metadata-bundle", str(meta[1]), *extra)


def _check(r: Run, name: str) -> dict[str, Any]:
    return next(c for c in r.json["checks"] if c["name"] == name)


def test_signed_metadata_bound_to_this_tool_lends_its_effects_and_source(world, metas) -> None:
    p = policy(world, "read-only", **SAFE_READ_POLICY)
    r = _admit_meta(world, p, metas["bound"])
    assert r.code == 0, r.out + r.err
    assert r.json["effects_verified"] is True and r.json["metadata_source"] == "vendor"
    assert codes(r)[0] == "READ_ONLY_VERIFIED"
    assert _check(r, "metadata.signature")["status"] == "pass"
    assert _check(r, "metadata.binding")["status"] == "pass"


def test_signed_metadata_with_no_binding_digest_does_not_lend_its_effects(world, metas) -> None:
    p = policy(world, "read-only", **SAFE_READ_POLICY)
    r = _admit_meta(world, p, metas["no-digest"])
    assert r.code == 1, r.out + r.err
    assert r.json["trust_level"] == "VERIFIED"  # the tool itself is fine; its metadata says nothing of it
    assert r.json["effects_verified"] is False and r.json["metadata_source"] is None
    assert "READ_ONLY_VERIFIED" not in codes(r)
    binding = _check(r, "metadata.binding")
    assert binding["status"] == "fail" and binding["actual"] is None
    assert binding["expected"][0] == f"sha256:{_hex(TOOL)}"


def test_signed_metadata_for_another_tool_name_does_not_lend_its_effects(world, metas) -> None:
    p = policy(world, "read-only", **SAFE_READ_POLICY)
    r = _admit_meta(world, p, metas["other-name"])
    assert r.code == 1, r.out + r.err
    assert r.json["effects_verified"] is False
    binding = _check(r, "metadata.binding")
    assert binding["status"] == "fail" and binding["expected"] == "tool" and binding["actual"] == "othertool"


def test_signed_metadata_for_another_binary_is_compromised(world, metas) -> None:
    p = policy(world, "read-only", **SAFE_READ_POLICY)
    r = _admit_meta(world, p, metas["other-digest"])
    assert r.code == 1, r.out + r.err
    assert r.json["trust_level"] == "COMPROMISED" and codes(r)[0] == "TRUST_COMPROMISED"
    assert r.json["effects_verified"] is False
    assert _check(r, "metadata.binding")["actual"] == f"sha256:{_hex(OTHER)}"


def test_unverified_metadata_source_claim_does_not_satisfy_metadata_sources(world, metas) -> None:
    p = policy(world, "sources", requirements={"metadataSources": ["vendor"]},
               permissions={"allow": ["Bash"]})
    # The same document, without its signature: "source": "vendor" is only what it says of itself.
    r = admit(world, world["tool"], "--command", "status", "--policy", str(p),
              "--bundle", str(world["tool_sig"]), "--metadata", str(metas["bound"][0]))
    assert r.code == 1, r.out + r.err
    reason = next(x for x in r.json["decision"]["reasons"] if x["code"] == "METADATA_SOURCE_NOT_ALLOWED")
    assert reason["expected"] == ["vendor"] and reason["actual"] is None
    assert "'vendor' is not evidence" in reason["message"]
    # Signed but about no binary: still not established.
    r = _admit_meta(world, p, metas["no-digest"])
    assert r.code == 1 and "METADATA_SOURCE_NOT_ALLOWED" in codes(r)
    # Signed by a policy signer and bound to this tool: the source is established.
    r = _admit_meta(world, p, metas["bound"])
    assert r.code == 0, r.out + r.err
    assert r.json["metadata_source"] == "vendor"


def test_metadata_bundle_without_metadata_is_a_usage_error(world, metas) -> None:
    p = policy(world, "read-only", **SAFE_READ_POLICY)
    r = admit(world, world["tool"], "--policy", str(p), "--metadata-bundle", str(metas["bound"][1]))
    assert r.code == 2 and "metadata_bundle (--metadata-bundle) needs metadata (--metadata)" in r.err


# -- one read per evidence file: the verified bytes are the parsed bytes ---------------------------

def test_metadata_swapped_after_reading_is_not_what_the_signature_is_checked_over(
    ts: testsigstore.TestSigstore, world: dict[str, Any], tmp_path: Path
) -> None:
    """verify_metadata takes the parsed document (its bytes), never the path: a file swapped for a
    signed one after it was read cannot lend the signed bytes' standing to the read document."""
    from atip_trust.admission.metadata_trust import verify_metadata
    from atip_trust.facts.digest import hash_bytes
    from atip_trust.facts.metadata import load_metadata
    from atip_trust.policy.model import SignerRule
    from atip_trust.signature.trustroot import default_trust_root

    path = _meta(tmp_path, "meta.json", tool_name="tool", checksum=f"sha256:{_hex(TOOL)}", source="vendor")
    doc = load_metadata(path)  # the one read: the document whose effects admit would use
    # Now the file on disk becomes a different, validly signed document.
    swapped = _meta(tmp_path, "meta.json", tool_name="tool", checksum=f"sha256:{_hex(TOOL)}", source="org")
    assert swapped.read_bytes() != doc.raw
    bundle = _dump(tmp_path / "meta.sigstore.json",
                   ts.sign_artifact(swapped.read_bytes(), identity=ORG_ID, issuer=ISSUER))
    root = default_trust_root(path=str(world["dir"] / "trusted_root.json"))
    signers = [SignerRule(identity=ORG_ID, issuer=ISSUER)]
    digests = {"sha256": hash_bytes(TOOL, "sha256")}
    trust = verify_metadata(doc, bundle, signers, root, digests=digests, tool_name="tool",  # type: ignore[arg-type]
                            signer_kind="policy")
    assert trust.verified is False and trust.source is None
    assert trust.signed_digest == doc.sha256  # checked over the bytes that were parsed
    # The bytes that were signed, parsed once, do verify: same code path, same bundle.
    good = load_metadata(swapped)
    trust = verify_metadata(good, bundle, signers, root, digests=digests, tool_name="tool",  # type: ignore[arg-type]
                            signer_kind="policy")
    assert trust.verified is True and trust.source == "org" and trust.signed_digest == good.sha256


# -- the audit log ---------------------------------------------------------------------------------

def _run(argv: list[str], *, cwd: Path | None = None, env: dict[str, str] | None = None,
         timeout: float = 60, **kw: Any) -> subprocess.CompletedProcess[str]:
    """In-process (verify_helpers.run_cli); a child when the test hands it its own stdout (``stdout=``)."""
    if not kw:
        return run_cli(argv, cwd=cwd, env={**os.environ, **(env or {})}, timeout=timeout)
    return subprocess.run([sys.executable, "-m", "atip_trust", *argv], capture_output="stdout" not in kw,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL, cwd=cwd,
                          env={**os.environ, **(env or {})}, **kw)


def _allow_all(world: dict[str, Any]) -> Path:
    return policy(world, "allow-all", permissions={"allow": ["Bash"]})


def _lines(log: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_fifo_as_audit_log_does_not_block_admit_and_is_refused(world, tmp_path: Path) -> None:
    fifo = tmp_path / "audit.fifo"
    os.mkfifo(fifo)
    p = _allow_all(world)
    # Nobody reads the FIFO: a blocking open would hang here until the timeout.
    r = _run(["admit", str(world["tool"]), "--policy", str(p), "--bundle", str(world["tool_sig"]),
              "--non-interactive", "--format", "json", "--audit-log", str(fifo)], timeout=30)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "audit log" in r.stderr and "not a regular file" in r.stderr
    assert '"behavior": "allow"' not in r.stdout  # nothing said allow before the audit failed


def test_symlink_as_audit_log_is_refused(world, tmp_path: Path) -> None:
    real = tmp_path / "elsewhere.jsonl"
    real.write_text("")
    link = tmp_path / "audit.jsonl"
    link.symlink_to(real)
    r = cli("admit", str(world["tool"]), "--policy", str(_allow_all(world)), "--bundle", str(world["tool_sig"]),
            "--non-interactive", "--audit-log", str(link))
    assert r.code == 2 and "symbolic link" in r.err
    assert real.read_text() == ""


@pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_FSIZE is POSIX")
def test_audit_write_cut_short_leaves_no_partial_line_and_is_not_an_allow(world, tmp_path: Path) -> None:
    """A file-size limit makes the line's write() short; the rest fails (EFBIG). The log must end on
    a whole line and admit must exit 2, not 0."""
    import resource

    log = tmp_path / "audit.jsonl"
    before = (json.dumps({"previous": "line", "pad": "x" * 3900}) + "\n").encode()
    log.write_bytes(before)
    limit = len(before) + 64  # room for 64 bytes of the next line, far less than a whole line

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    r = _run(["admit", str(world["tool"]), "--policy", str(_allow_all(world)),
              "--bundle", str(world["tool_sig"]), "--non-interactive", "--format", "json",
              "--audit-log", str(log)], env={"PYTHONDONTWRITEBYTECODE": "1"}, preexec_fn=cap)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "cannot write audit log" in r.stderr
    assert log.read_bytes() == before  # the partial line was truncated away
    assert '"behavior": "allow"' not in r.stdout


def test_policy_that_fails_to_load_is_audited_to_the_default_log(world, tmp_path: Path) -> None:
    bad = _dump(tmp_path / "broken.json", {"version": 1, "trust": {"signers": "everyone"}})
    state = tmp_path / "state"
    r = cli("admit", str(world["tool"]), "--policy", str(bad), "--non-interactive",
                       env={**os.environ, "XDG_STATE_HOME": str(state), "HOME": str(tmp_path)})
    assert r.code == 2
    (log,) = list(state.rglob("audit.jsonl"))
    (rec,) = _lines(log)
    assert rec["decision"] == "deny" and rec["tool"] == "tool" and rec["policy_digest"] is None
    assert rec["error"]["code"] == "MALFORMED_INPUT" and "trust.signers" in rec["error"]["message"]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX pipes")
def test_output_failing_after_the_allow_line_is_audited_as_the_final_deny(world, tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full to make writing fail")
    with open("/dev/full", "w") as full:  # every write fails with ENOSPC: the decision is lost
        r = _run(["admit", str(world["tool"]), "--policy", str(_allow_all(world)),
                  "--bundle", str(world["tool_sig"]), "--non-interactive", "--format", "json",
                  "--audit-log", str(log)], stdout=full, stderr=subprocess.PIPE)
    assert r.returncode == 2, r.stderr
    assert "cannot write the decision to standard output" in r.stderr
    first, last = _lines(log)
    assert first["decision"] == "allow"
    # The last word for this invocation is what the caller saw: exit 2, a denial.
    assert last["decision"] == "deny" and last["error"]["code"] == "ENVIRONMENT_ERROR"
    assert last["digest"] == first["digest"] and last["policy_digest"] == first["policy_digest"]


def test_reader_that_left_early_sees_the_decision_and_the_audit_agrees(world, tmp_path: Path) -> None:
    """A closed pipe (`| grep -q`, `| head -1`) is not a failure of ours (cli/main.py): the exit code is
    the decision, and the audit log's last word for the invocation is that same decision."""
    log = tmp_path / "audit.jsonl"
    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody will read the decision: writing it meets EPIPE
    try:
        r = _run(["admit", str(world["tool"]), "--policy", str(_allow_all(world)),
                  "--bundle", str(world["tool_sig"]), "--non-interactive", "--format", "json",
                  "--audit-log", str(log)], stdout=write_end, stderr=subprocess.PIPE)
    finally:
        os.close(write_end)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr and "error" not in r.stderr
    assert [line["decision"] for line in _lines(log)] == ["allow"]


# -- a bare name is looked up on PATH as the shell does, never in the current directory ------------

@pytest.fixture()
def two_tools(world: dict[str, Any], tmp_path: Path) -> dict[str, Path]:
    """``here/tool``: the signed bytes, in the current directory. ``onpath/tool``: what the shell runs."""
    here = tmp_path / "here"
    here.mkdir()
    signed = here / "tool"
    signed.write_bytes(TOOL)
    signed.chmod(0o755)
    onpath = tmp_path / "onpath"
    onpath.mkdir()
    other = onpath / "tool"
    other.write_bytes(OTHER)
    other.chmod(0o755)
    return {"here": here, "onpath": onpath, "signed": signed, "other": other}


def test_bare_name_in_current_directory_is_not_what_admit_decides_for(world, two_tools) -> None:
    p = _allow_all(world)
    r = _run(["admit", "tool", "--policy", str(p), "--bundle", str(world["tool_sig"]), "--no-audit",
              "--non-interactive", "--format", "json"], cwd=two_tools["here"],
             env={"PATH": str(two_tools["onpath"])})
    assert r.returncode == 1, r.stdout + r.stderr
    out = json.loads(r.stdout)
    assert out["artifact"]["path"] == str(two_tools["other"].resolve())  # the file the shell would run
    assert out["artifact"]["digest"]["sha256"] == _hex(OTHER)
    assert out["decision"]["behavior"] == "deny"
    # And not on PATH at all: not found, even though ./tool is right here.
    r = _run(["admit", "tool", "--policy", str(p), "--bundle", str(world["tool_sig"]), "--no-audit",
              "--non-interactive"], cwd=two_tools["here"], env={"PATH": "/nonexistent"})
    assert r.returncode == 2 and "was not found on PATH" in r.stderr


@pytest.mark.parametrize("path_env", ["", ":", ".", "::/nonexistent", "./:/nonexistent", "bin"])
def test_empty_and_dot_path_entries_are_never_the_current_directory(world, two_tools, path_env: str) -> None:
    (two_tools["here"] / "bin").mkdir()
    os.link(two_tools["signed"], two_tools["here"] / "bin" / "tool")
    r = _run(["admit", "tool", "--policy", str(_allow_all(world)), "--bundle", str(world["tool_sig"]),
              "--no-audit", "--non-interactive"], cwd=two_tools["here"], env={"PATH": path_env})
    assert r.returncode == 2, r.stdout + r.stderr
    assert "was not found on PATH" in r.stderr and "relative PATH entries are skipped" in r.stderr


def test_relative_path_entry_shadowing_the_match_is_refused(world, two_tools) -> None:
    # The shell would run ./tool (from "."), we would find onpath/tool: ambiguous, fail closed.
    r = _run(["admit", "tool", "--policy", str(_allow_all(world)), "--bundle", str(world["tool_sig"]),
              "--no-audit", "--non-interactive"], cwd=two_tools["here"],
             env={"PATH": f".:{two_tools['onpath']}"})
    assert r.returncode == 2, r.stdout + r.stderr
    assert "ambiguous" in r.stderr and str(two_tools["other"]) in r.stderr


def test_hash_bare_name_is_a_path_lookup_and_a_path_is_a_file(two_tools) -> None:
    env = {"PATH": str(two_tools["onpath"])}
    r = _run(["hash", "tool"], cwd=two_tools["here"], env=env)
    # sha256sum's line format, naming the file that was hashed (so `sha256sum -c` checks those bytes).
    assert r.returncode == 0 and r.stdout == f"{_hex(OTHER)}  {two_tools['other'].resolve()}\n"
    r = _run(["hash", "./tool"], cwd=two_tools["here"], env=env)
    assert r.returncode == 0 and r.stdout == f"{_hex(TOOL)}  ./tool\n"



def test_verify_takes_a_file_so_a_bare_name_is_the_file_here(world, two_tools) -> None:
    # As cosign verify-blob: ARTIFACT is a file; nothing is looked up on PATH.
    r = _run(["verify", "tool", "--bundle", str(world["tool_sig"]), "--format", "json",
              "--trusted-root", str(world["dir"] / "trusted_root.json"),
              "--certificate-identity", ORG_ID, "--certificate-oidc-issuer", ISSUER],
             cwd=two_tools["here"], env={"PATH": str(two_tools["onpath"])})
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads(r.stdout)["artifact"]["path"] == str(two_tools["signed"].resolve())


# -- text output cannot be forged by names ---------------------------------------------------------

FORGED = "x\nallow: gh pr view (VERIFIED, sha256:" + "0" * 64 + ")"


def test_tool_name_with_newline_cannot_forge_an_allow_line(world, tmp_path: Path) -> None:
    d = tmp_path / "names"
    d.mkdir()
    evil = d / FORGED
    evil.write_bytes(TOOL)
    evil.chmod(0o755)
    p = policy(world, "deny-all")
    r = _run(["admit", str(evil), "--policy", str(p), "--no-audit", "--non-interactive", "--command", "pr view"])
    assert r.returncode == 1, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("deny: x\\nallow: gh pr view")
    assert not any(line.startswith("allow") for line in lines)
    assert all(line.startswith("  ") for line in lines[1:])  # every other line is an indented reason


def test_file_name_with_control_characters_is_escaped_in_verify_text_output(world, tmp_path: Path) -> None:
    evil = tmp_path / "tool\r\x1b[2Kok: VERIFIED\nallow"
    evil.write_bytes(OTHER)  # not the signed bytes: denied, with checks and reasons naming the path
    r = _run(["verify", str(evil), "--bundle", str(world["tool_sig"]),
              "--trusted-root", str(world["dir"] / "trusted_root.json"),
              "--certificate-identity", ORG_ID, "--certificate-oidc-issuer", ISSUER])
    assert r.returncode == 1, r.stdout + r.stderr
    assert "\r" not in r.stdout and "\x1b" not in r.stdout
    lines = r.stdout.splitlines()
    assert lines[0].startswith(str(tmp_path) + "/tool\\r\\x1b[2Kok: VERIFIED\\nallow: COMPROMISED")
    assert all(line.startswith("  ") for line in lines[1:])


def test_metadata_and_policy_file_names_are_escaped_in_text_output(world, tmp_path: Path) -> None:
    meta = _meta(tmp_path, "m\nok: valid.json", tool_name="tool", checksum=None)
    r = _run(["metadata", "check", str(meta)])
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0].startswith(str(tmp_path) + "/m\\nok: valid.json: valid ATIP")
    pol = _dump(tmp_path / "p\nok: fine.json", {"version": 1})
    r = _run(["policy", "check", str(pol)])
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0].startswith("ok: " + str(tmp_path) + "/p\\nok: fine.json is a valid")
