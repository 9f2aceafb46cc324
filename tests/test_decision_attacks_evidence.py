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
from verify_helpers import Run, cli, cli_subprocess

ISSUER = "https://token.actions.githubusercontent.com"
ORG_ID = "https://github.com/example-org/tools/.github/workflows/release.yml@refs/tags/v1.0.0"
REGISTRY_ID = "https://github.com/example-org/shims/.github/workflows/sign.yml@refs/heads/main"
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
    d = tmp_path_factory.mktemp("evidence")
    ts.write_trusted_root(d / "trusted_root.json")
    tool = d / "bin" / "tool"
    tool.parent.mkdir()
    tool.write_bytes(TOOL)
    tool.chmod(0o755)
    # A valid SLSA attestation by the trusted identity, about another file.
    stmt = testsigstore.slsa_v1_statement("other", _hex(OTHER))
    other_att = _dump(d / "other.intoto.sigstore.json", ts.sign_dsse(stmt, identity=ORG_ID, issuer=ISSUER))
    tool_sig = _dump(d / "tool.sigstore.json", ts.sign_artifact(TOOL, identity=ORG_ID, issuer=ISSUER))
    return {"dir": d, "tool": tool, "other_att": other_att, "tool_sig": tool_sig}


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
