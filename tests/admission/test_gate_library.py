"""Admission and verification as library calls (atip_trust.admit / atip_trust.verify): what an agent
runtime does — load a policy once, decide many times — without the CLI, on real signed tools minted by
the local test Sigstore, with a real audit log."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import atip_trust
from atip_trust import AtipTrustError, TrustLevel

from world import ISSUER, World

SIGNED = b"#!/bin/sh\necho signed\n"
UNSIGNED = b"#!/bin/sh\necho unsigned\n"
REPO = Path(__file__).resolve().parents[2]
GENERATOR = ("https://github.com/slsa-framework/slsa-github-generator/.github/workflows/"
             "generator_generic_slsa3.yml@refs/tags/v2.1.0")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    w = World(tmp_path_factory.mktemp("gate"), seed=21)
    for name, body in (("signed", SIGNED), ("unsigned", UNSIGNED)):
        w.tool(f"bin/{name}", body)
    return {"dir": w.dir, "root": w.root, "bin": w.dir / "bin", "bundle": w.bundle("signed.sigstore.json", SIGNED),
            "policy": w.policy_file(permissions={"deny": ["Bash(signed rm *)"], "ask": ["Bash(signed deploy *)"],
                                                 "allow": [{"rule": "signed *", "minTrustLevel": "VERIFIED"}]},
                                    defaults={"noMatch": "deny"})}


@pytest.fixture()
def no_org(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ATIP_TRUST_ORG_POLICY", raising=False)


def test_runtime_loads_policy_once_and_decides_many_times(world, no_org, tmp_path: Path) -> None:
    policy = atip_trust.load_admission_policy(world["policy"])
    log = tmp_path / "audit.jsonl"
    tool = world["bin"] / "signed"
    outcomes = {
        words: atip_trust.admit(tool, policy=policy, command=words, bundles=[world["bundle"]],
                                audit_log=log, interactive=True).behavior
        for words in ("status", "rm -rf /", "deploy prod")
    }
    assert outcomes == {"status": "allow", "rm -rf /": "deny", "deploy prod": "ask"}
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    assert [x["decision"] for x in lines] == ["allow", "deny", "ask"]
    assert all(x["digest"] == "sha256:" + hashlib.sha256(SIGNED).hexdigest() for x in lines)


def test_library_admission_of_unsigned_bytes_is_denied_with_the_reason(world, no_org, tmp_path: Path) -> None:
    policy = atip_trust.load_admission_policy(world["policy"])
    adm = atip_trust.admit(world["bin"] / "unsigned", policy=policy, command="status",
                           audit_log=tmp_path / "a.jsonl")
    assert adm.behavior == "deny" and adm.exit_code == 1
    assert adm.report.trust_level is TrustLevel.UNSIGNED
    assert adm.to_json()["agent_tool_decision"]["behavior"] == "deny"


def test_library_ask_without_a_user_is_a_denial(world, no_org, tmp_path: Path) -> None:
    policy = atip_trust.load_admission_policy(world["policy"])
    adm = atip_trust.admit(world["bin"] / "signed", policy=policy, command="deploy prod",
                           bundles=[world["bundle"]], interactive=False, audit_log=tmp_path / "a.jsonl")
    assert adm.behavior == "deny"
    assert adm.decision.reasons[0].code == "ASK_WITHOUT_USER"


def test_library_bare_name_is_resolved_through_path_only(world, no_org, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(world["bin"]))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "signed").write_bytes(b"#!/bin/sh\necho impostor\n")
    policy = atip_trust.load_admission_policy(world["policy"])
    adm = atip_trust.admit("signed", policy=policy, command="status", bundles=[world["bundle"]],
                           audit_log=tmp_path / "a.jsonl", interactive=True)
    assert adm.path == str(world["bin"] / "signed")
    assert adm.behavior == "allow"


def test_library_error_raises_and_leaves_a_deny_line(world, no_org, tmp_path: Path) -> None:
    bad = tmp_path / "bad.sigstore.json"
    bad.write_text("{not json")
    log = tmp_path / "a.jsonl"
    policy = atip_trust.load_admission_policy(world["policy"])
    with pytest.raises(AtipTrustError):
        atip_trust.admit(world["bin"] / "signed", policy=policy, command="status", bundles=[bad],
                         audit_log=log)
    (line,) = [json.loads(x) for x in log.read_text().splitlines()]
    assert line["decision"] == "deny" and line["error"]["type"]


def test_library_deferred_audit_writes_nothing_until_asked(world, no_org, tmp_path: Path) -> None:
    from atip_trust.admission.admit import write_audit

    log = tmp_path / "a.jsonl"
    policy = atip_trust.load_admission_policy(world["policy"])
    adm = atip_trust.admit(world["bin"] / "signed", policy=policy, command="status",
                           bundles=[world["bundle"]], audit_log=log, defer_audit=True)
    assert not log.exists()
    write_audit(adm, log)
    assert json.loads(log.read_text())["decision"] == adm.behavior


def test_library_verify_of_the_shipped_fixture(no_org) -> None:
    fx = REPO / "fixtures" / "sigstore"
    res = atip_trust.verify(
        fx / "artifacts" / "hello-tool",
        constraints=atip_trust.Constraints(
            signers=(atip_trust.IdentityRule(identity=GENERATOR, issuer=ISSUER),), min_slsa_level=3),
        bundles=[fx / "good" / "hello-tool.dsse.sigstore.json"],
        trusted_root=fx / "trusted_root.json",
    )
    assert res.report.trust_level is TrustLevel.VERIFIED
    assert res.decision.behavior == "allow" and res.exit_code == 0
    assert res.report.provenance.slsa_level == 3
    assert res.to_json()["trusted_root"]["digest"].startswith("sha256:")


def test_library_verify_with_a_loaded_policy_fails_an_unsigned_file(world, no_org) -> None:
    policy = atip_trust.load_policy(world["policy"])
    res = atip_trust.verify(world["bin"] / "unsigned", policy=policy)
    assert res.report.trust_level is TrustLevel.UNSIGNED
    assert res.decision.behavior == "deny" and res.exit_code == 1


def test_library_verify_without_a_signer_cannot_evaluate(world) -> None:
    with pytest.raises(atip_trust.UsageError):
        atip_trust.verify(world["bin"] / "signed", bundles=[world["bundle"]],
                          trusted_root=world["root"])


# -- the exec gate's use: decide for the descriptor it will run ------------------------------------

#: An exec gate in miniature: open the tool, admit those bytes, then (after an attacker swapped what
#: the path names) execute the descriptor that was decided for. ``dir``: the tool's folder is renamed
#: away and another folder takes its name (the verified file itself is untouched); ``file``: the file
#: is replaced (the verified inode loses its last link, which changes its ctime).
EXEC_GATE = r"""
import os, sys
import atip_trust
from atip_trust.errors import ArtifactAccessError
tool, policy, bundle, log, impostor, how = sys.argv[1:7]
art = atip_trust.Artifact.open(tool)
adm = atip_trust.admit(art, name="signed", policy=atip_trust.load_admission_policy(policy),
                       command="status", bundles=[bundle], audit_log=log, interactive=False)
print(adm.behavior, adm.report.digests["sha256"], flush=True)
if how == "dir":
    here = os.path.dirname(tool)
    os.rename(here, here + ".old")
    os.rename(os.path.dirname(impostor), here)
else:
    os.replace(impostor, tool)
try:
    fd = art.exec_fd()
except ArtifactAccessError as err:
    print("refused", flush=True)
    sys.exit(9)
os.execve(fd, [tool, "status"], {"PATH": "/usr/bin:/bin"})
"""


@pytest.mark.parametrize(("how", "outcome"), [("dir", "signed"), ("file", "refused")])
def test_exec_gate_never_runs_what_was_swapped_in_after_admission(world, tmp_path: Path, how: str,
                                                                  outcome: str) -> None:
    tool = tmp_path / "bin" / "signed"
    impostor = tmp_path / "evil" / "signed"
    for path, body in ((tool, SIGNED), (impostor, b"#!/bin/sh\necho impostor\n")):
        path.parent.mkdir()
        path.write_bytes(body)
        path.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "ATIP_TRUST_ORG_POLICY"}
    proc = subprocess.run(
        [sys.executable, "-c", EXEC_GATE, str(tool), str(world["policy"]), str(world["bundle"]),
         str(tmp_path / "a.jsonl"), str(impostor), how],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, env=env)
    decided, ran = proc.stdout.splitlines()
    assert decided == f"allow {hashlib.sha256(SIGNED).hexdigest()}", proc.stderr
    assert tool.read_bytes() != SIGNED  # the path names the impostor now
    assert ran == outcome and proc.returncode == (0 if outcome == "signed" else 9), proc.stderr


def test_admitting_an_open_artifact_leaves_it_open_and_a_closed_one_is_refused(world, no_org,
                                                                              tmp_path: Path) -> None:
    policy = atip_trust.load_admission_policy(world["policy"])
    log = tmp_path / "a.jsonl"
    with atip_trust.Artifact.open(world["bin"] / "signed") as art:
        adm = atip_trust.admit(art, name="signed", policy=policy, command="status",
                               bundles=[world["bundle"]], audit_log=log)
        assert adm.behavior == "allow" and adm.tool == "signed"
        assert art.fd >= 0 and os.fstat(art.fd)  # still the caller's, still open
    with pytest.raises(atip_trust.UsageError, match="closed"):
        atip_trust.admit(art, name="signed", policy=policy, command="status", audit_log=log)
    allowed, refused = (json.loads(x) for x in log.read_text().splitlines())
    assert allowed["decision"] == "allow"
    assert refused["decision"] == "deny" and refused["tool"] == "signed"


def test_metadata_given_as_bytes_is_checked_like_a_file(world, no_org, tmp_path: Path) -> None:
    """A tool's --agent answer, in hand as bytes, declaring another checksum: tampering, COMPROMISED."""
    agent = json.dumps({
        "atip": {"version": "0.6"}, "name": "signed", "version": "1.0.0", "description": "a tool",
        "trust": {"source": "native", "integrity": {"checksum": "sha256:" + "0" * 64}},
        "commands": {"status": {"description": "Show status"}},
    }).encode()
    policy = atip_trust.load_admission_policy(world["policy"])
    as_file = tmp_path / "agent.json"
    as_file.write_bytes(agent)
    seen = [atip_trust.admit(world["bin"] / "signed", policy=policy, command="status",
                             bundles=[world["bundle"]], metadata=m, audit=False)
            for m in (agent, as_file)]
    for adm in seen:
        assert adm.report.trust_level is TrustLevel.COMPROMISED and adm.behavior == "deny"
    failed = [[c["name"] for c in a.report.to_json()["checks"] if c["status"] == "fail"] for a in seen]
    assert failed[0] == failed[1] and failed[0]
