"""AIP-14 ``TOOL.md`` on the command line (issue 27): ``admit``/``exec --contract TOOL.md``, or a
``TOOL.md`` beside the metadata, verified by a signature like metadata (``--contract-bundle``, or
``TOOL.md.bundle`` beside it); unverified it only tightens; its approval class asks; its
``requires.tools`` are admitted too; its ``timeout_ms`` is a hard ceiling on the run."""

from __future__ import annotations

import hashlib
import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from test_bridge_loop import loop, response  # noqa: F401 - loop: the call loop's fixture
from test_effects_model import ISSUER, ORG_ID, READ_ONLY, Signed, _codes, signed  # noqa: F401 - fixture

OTHER_ID = "https://github.com/someone-else/x/.github/workflows/r.yml@refs/heads/main"


def tool_md(front: str, *, name: str = "gh") -> str:
    return (f"---\nname: {name}\nid: {name}\ndescription: the tool\nversion: 1.0.0\ninputs: {{}}\n"
            f"outputs: {{}}\n{front}---\n# {name}\n")


PURE_READ = "risk_level: 0\nidempotent: true\ncost_class: trivial\nmutates: []\n"


def _contract(signed: Signed, front: str, *, sign_as: str | None = ORG_ID, name: str = "gh",
              folder: Path | None = None) -> tuple[Path, Path | None]:
    signed.n += 1
    d = folder or signed.d / f"c{signed.n}"
    d.mkdir(exist_ok=True)
    path = d / "TOOL.md"
    path.write_text(tool_md(front, name=name))
    if sign_as is None:
        return path, None
    bundle = d / "TOOL.md.bundle"
    bundle.write_text(json.dumps(signed.ts.sign_artifact(path.read_bytes(), identity=sign_as, issuer=ISSUER)))
    return path, bundle


def _flags(path: Path, bundle: Path | None) -> list[str]:
    return ["--contract", str(path)] + (["--contract-bundle", str(bundle)] if bundle is not None else [])


#: (frontmatter, signed by, expected exit in CI, a code the decision must carry, one it must not).
AIP14_TABLE: list[tuple[str, str | None, int, str, str]] = [
    (PURE_READ, ORG_ID, 0, "READ_ONLY_VERIFIED", "EFFECTS_UNVERIFIED"),  # verified: speaks for the tool
    (PURE_READ, None, 1, "NO_MATCHING_RULE", "READ_ONLY_VERIFIED"),  # unsigned: its safe claims count for nothing
    (PURE_READ, OTHER_ID, 1, "NO_MATCHING_RULE", "READ_ONLY_VERIFIED"),  # signed by someone policy ignores
    (PURE_READ + "approval: always\n", ORG_ID, 1, "APPROVAL_REQUIRED", "READ_ONLY_VERIFIED"),
    ('risk_level: 0\nidempotent: true\ncost_class: trivial\nmutates: ["database:orders"]\n', ORG_ID, 1,
     "NO_MATCHING_RULE", "READ_ONLY_VERIFIED"),
]


@pytest.mark.parametrize(("front", "signer", "exit_code", "present", "absent"), AIP14_TABLE)
def test_aip14_contract_on_the_command_line(signed: Signed, front: str, signer: str | None, exit_code: int,
                                            present: str, absent: str) -> None:
    path, bundle = _contract(signed, front, sign_as=signer)
    out = signed.admit("status", _flags(path, bundle))
    assert out["exit"] == exit_code, out
    assert present in _codes(out) and absent not in _codes(out), _codes(out)
    checks = {c["name"]: c["status"] for c in out["checks"] if c["name"].startswith("contract.")}
    assert checks["contract.signature"] == ("pass" if signer == ORG_ID else "skip" if signer is None else "fail")


def test_aip14_an_unverified_contract_tightens_verified_metadata(signed: Signed) -> None:
    meta = signed.metadata({"status": {"description": "Status", "effects": READ_ONLY}})
    assert _codes(signed.admit("status", meta))[0] == "READ_ONLY_VERIFIED"
    path, _ = _contract(signed, 'mutates: ["external:payments"]\n', sign_as=None)
    out = signed.admit("status", [*meta, "--contract", str(path)])
    assert out["exit"] == 1 and "READ_ONLY_VERIFIED" not in _codes(out), out


def test_aip14_a_tool_md_beside_the_metadata_is_read_and_one_for_another_tool_is_not(signed: Signed) -> None:
    meta = signed.metadata({"status": {"description": "Status", "effects": READ_ONLY}})
    folder = Path(meta[1]).parent / "beside"
    folder.mkdir()
    moved = folder / "gh.json"
    Path(meta[1]).rename(moved)
    Path(meta[3]).rename(folder / "gh.json.sigstore.json")
    flags = ["--metadata", str(moved), "--metadata-bundle", str(folder / "gh.json.sigstore.json")]
    _contract(signed, "approval: always\n", folder=folder, sign_as=None)
    out = signed.admit("status", flags)
    assert out["exit"] == 1 and "APPROVAL_REQUIRED" in _codes(out), out
    _contract(signed, "approval: always\n", folder=folder, sign_as=None, name="other-tool")
    out = signed.admit("status", flags)
    assert out["exit"] == 0 and _codes(out)[0] == "READ_ONLY_VERIFIED", out
    assert any(c["name"] == "contract.found" for c in out["checks"])


def test_aip14_required_tools_are_admitted_too(signed: Signed) -> None:
    path, bundle = _contract(signed, PURE_READ + "requires: {tools: [no-such-tool-27]}\n")
    out = signed.admit("status", _flags(path, bundle))
    assert out["exit"] == 1 and "REQUIRED_TOOL_NOT_ADMITTED" in _codes(out), out
    reason = next(r for r in out["decision"]["reasons"] if r["code"] == "REQUIRED_TOOL_NOT_ADMITTED")
    assert "no-such-tool-27" in reason["message"]


def test_aip14_timeout_ms_is_a_hard_ceiling_on_exec(signed: Signed, tmp_path: Path) -> None:
    # exec runs a verified #! script on its verified interpreter: both signed, found by digest.
    # A loop of shell builtins: no child process (the timer ends the exec'd process; children it starts
    # are not in its reach, docs/bridge.md).
    body = b"#!/bin/sh\nwhile :; do :; done\necho never\n"
    slow = tmp_path / "bin" / "gh"
    slow.parent.mkdir()
    slow.write_bytes(body)
    slow.chmod(0o755)
    bundles = tmp_path / "bundles" / "sha256"
    bundles.mkdir(parents=True)
    for data in (Path("/bin/sh").read_bytes(), body):
        (bundles / f"{hashlib.sha256(data).hexdigest()}.sigstore.json").write_text(
            json.dumps(signed.ts.sign_artifact(data, identity=ORG_ID, issuer=ISSUER)))
    policy = tmp_path / "allow.json"
    doc = json.loads((Path(__file__).resolve().parents[2] / "policies" / "default.json").read_text())
    doc["permissions"] = {"allow": ["gh *", "sh"]}
    policy.write_text(json.dumps(doc))
    path, bundle = _contract(signed, PURE_READ + "timeout_ms: 300\n")
    r = subprocess.run(
        [sys.executable, "-m", "atip_trust", "exec", "--policy", str(policy), "--trusted-root",
         str(signed.d / "trusted_root.json"), "--certificate-identity", ORG_ID, "--certificate-oidc-issuer",
         ISSUER, "--bundle-dir", str(tmp_path / "bundles"), *_flags(path, bundle), "--no-audit",
         "--non-interactive", "--", str(slow), "status"],
        capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=25)
    assert r.returncode == -signal.SIGALRM, (r.returncode, r.stdout, r.stderr)
    assert "never" not in r.stdout


def test_aip14_requires_secrets_is_reported(signed: Signed) -> None:
    path, bundle = _contract(signed, PURE_READ + "requires: {secrets: [GH_TOKEN]}\n")
    out = signed.admit("status", _flags(path, bundle))
    check = next(c for c in out["checks"] if c["name"] == "contract.requires.secrets")
    assert check["actual"] == ["GH_TOKEN"]
    assert out["exit"] == 0  # a credential the tool reads is no effect class: the pure read stands


def test_aip14_timeout_ms_is_the_call_loops_ceiling(loop: Any) -> None:
    # A call that would finish in 3 s under the policy's 60 s limit; the contract's 200 ms ends it.
    loop.world.tool("gh", b"#!/bin/sh\nsleep 3\necho done\n")
    (loop.meta.parent / "TOOL.md").write_text(tool_md("timeout_ms: 200\n"))  # beside the metadata
    policy = loop.policy()
    surface = loop.surface("openai", policy)
    [out] = loop.call("openai", response("openai", "gh_pr_list", {}), surface, policy)
    assert out.status == "timeout", out.result
    assert "done" not in out.result.get("stdout", "")
