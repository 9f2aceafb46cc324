"""``compile`` of metadata files takes the tool's own evidence as ``admit`` does (issue 26, item 2):
``--bundle``, ``--bundle-dir`` and ``--key``. Before, the tool a metadata file names could not be given
its signature (``--bundle-dir`` was silently ignored there), so under a policy that requires VERIFIED
every command was blocked. The evidence is also what the bridge admits the tool with again at call time.
Real tools on a PATH folder, signed by the local test Sigstore and by a key, a real subprocess CLI."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import ec

import atip_trust
from atip_trust.bridge.loop import run_tool_call
from atip_trust.bridge.surface import SurfaceTool, build_surface

from verify_helpers import run_cli
from world import World

ORG_ID = "https://github.com/acme/tools/.github/workflows/release.yml@refs/tags/v1.0.0"
TOOL = b"#!/bin/sh\necho \"acmetool $*\"\n"
READ_ONLY = {"destructive": False, "reversible": True, "idempotent": True, "network": False,
             "filesystem": {"read": True, "write": False, "delete": False}, "cost": {"billable": False},
             "interactive": {"stdin": "none", "prompts": False, "tty": False}}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    w = World(tmp_path_factory.mktemp("compile"), seed=262)
    w.tool("bin/acmetool", TOOL)
    bundle = w.bundle("acmetool.sigstore.json", TOOL, identity=ORG_ID)
    w.file(f"bundles/sha256/{hashlib.sha256(TOOL).hexdigest()}.sigstore.json", bundle.read_text())
    # the tool's interpreter, admitted too before a call runs it
    w.keep_bundle("bundles", Path("/bin/sh").read_bytes(), identity=ORG_ID)
    key = ec.generate_private_key(ec.SECP256R1())
    pem = w.public_key("acme.pem", key)
    key_bundle = w.file("acmetool.key.sigstore.json", w.ts.sign_with_key(TOOL, key))
    meta = w.file("acmetool.json", {"atip": {"version": "0.6"}, "name": "acmetool", "version": "1.0.0",
                                    "description": "acme's tool",
                                    "commands": {"status": {"description": "Show status", "effects": READ_ONLY}}})
    policy = w.policy_file(
        signers=(ORG_ID,),
        permissions={"allow": [{"rule": r, "minTrustLevel": "VERIFIED"} for r in ("acmetool *", "sh")]},
        defaults={"noMatch": "deny"})
    key_policy = w.policy_file("key-policy.json", signers=None, trust={"publicKeys": [{"path": str(pem)}]},
                               permissions={"allow": [{"rule": "acmetool *", "minTrustLevel": "VERIFIED"}]},
                               defaults={"noMatch": "deny"})
    return {"dir": w.dir, "root": w.root, "bins": w.dir / "bin", "key_policy": key_policy, "bundle": bundle,
            "bundle_dir": w.dir / "bundles", "pem": pem, "key_bundle": key_bundle, "meta": meta, "policy": policy}


def compile_cli(world: dict[str, Any], *evidence: str, policy: str = "policy") -> tuple[int, dict[str, Any], str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ATIP_TRUST_", "PYTHON"))}
    env["PATH"] = f"{world['bins']}:/usr/bin:/bin"
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    r = run_cli(["compile", "--provider", "openai", "--policy", str(world[policy]), "--no-audit", "--no-cache",
                 str(world["meta"]), *evidence], timeout=120, env=env)
    return r.returncode, json.loads(r.stdout) if r.stdout else {}, r.stderr


def test_without_the_tools_evidence_every_command_is_blocked(world) -> None:
    code, out, err = compile_cli(world)
    assert code == 1, err
    assert out["tools"] == [] and out["trust"][0]["trust_level"] == "UNSIGNED"


@pytest.mark.parametrize("how", ["--bundle", "-b", "--bundle-dir", "--key"])
def test_the_tools_evidence_given_to_compile_verifies_it_and_compiles_its_commands(world, how: str) -> None:
    evidence = {"--bundle": ["--bundle", str(world["bundle"])], "-b": ["-b", str(world["bundle"])],
                "--bundle-dir": ["--bundle-dir", str(world["bundle_dir"])],
                "--key": ["--key", str(world["pem"]), "--bundle", str(world["key_bundle"])]}[how]
    code, out, err = compile_cli(world, *evidence, policy="key_policy" if how == "--key" else "policy")
    assert code == 0, err + json.dumps(out)
    assert [t["function"]["name"] for t in out["tools"]] == ["acmetool_status"]
    assert out["trust"][0]["trust_level"] == "VERIFIED"


def test_the_library_surface_keeps_the_evidence_so_a_call_admits_the_tool_again_with_it(
        world, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", f"{world['bins']}:/usr/bin:/bin")
    monkeypatch.delenv("ATIP_TRUST_ORG_POLICY", raising=False)
    policy = atip_trust.load_admission_policy(world["policy"])
    adm = atip_trust.admit(world["bins"] / "acmetool", policy=policy, audit=False, metadata=world["meta"],
                           bundles=str(world["bundle"]))
    tool = SurfaceTool.from_admission(adm, adm.metadata, atip_trust.Evidence(metadata=str(world["meta"])),
                                      bundle_dir=str(world["bundle_dir"]))
    surface = build_surface([tool], policy, "openai")
    response = {"choices": [{"message": {"tool_calls": [{"id": "c1", "type": "function", "function": {
        "name": "acmetool_status", "arguments": "{}"}}]}}]}
    (outcome,) = run_tool_call("openai", response, surface, policy, audit_log=tmp_path / "a.jsonl")
    assert outcome.status == "ok", outcome.result
    assert "acmetool status" in json.dumps(outcome.result)
