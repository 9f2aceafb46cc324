"""The in-process CLI runner (tests/verify_helpers.py ``run_cli``) answers as a fresh ``python -m atip_trust``
child does — the same exit code and the same bytes on stdout and stderr — and leaves the test process as it
found it (environment, directory, argv, descriptor 0), with no memo of the run left behind (issue 35)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from verify_helpers import PROCESS_MEMOS, run_cli

ROOT = Path(__file__).resolve().parents[2]
SIG = ROOT / "fixtures" / "sigstore"
GENERATOR = ("https://github.com/slsa-framework/slsa-github-generator/.github/workflows/"
             "generator_generic_slsa3.yml@refs/tags/v2.1.0")
VERIFY = ["verify", "fixtures/sigstore/artifacts/hello-tool", "--policy", "policies/default.json",
          "--bundle", "fixtures/sigstore/good/hello-tool.dsse.sigstore.json",
          "--trusted-root", "fixtures/sigstore/trusted_root.json", "--certificate-identity", GENERATOR,
          "--certificate-oidc-issuer", "https://token.actions.githubusercontent.com", "--min-slsa-level", "3",
          "--no-cache"]

CASES = {
    "verified": VERIFY,
    "denied-wrong-signer": [*VERIFY[:-6], "--certificate-identity", "https://example.com/other",
                            "--certificate-oidc-issuer", "https://token.actions.githubusercontent.com",
                            "--no-cache"],
    "hash": ["hash", "README.md", "pyproject.toml"],
    "bad-policy-json": ["policy", "check", "fixtures/policy/bad/allow-rule-number.json", "--format", "json"],
    "usage-error": ["verify", "--no-such-flag"],
    "unknown-command": ["nosuch"],
    "stdin-hash": ["hash", "-"],
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_in_process_answers_byte_for_byte_as_a_child_does(name: str) -> None:
    argv = CASES[name]
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("ATIP_TRUST_")}, "CI": "true"}
    child = subprocess.run([sys.executable, "-m", "atip_trust", *argv], capture_output=True, cwd=ROOT,
                           env=env, timeout=120, stdin=subprocess.DEVNULL)
    here = run_cli(argv, cwd=ROOT, env=env, text=False)
    assert (here.returncode, here.stdout, here.stderr) == (child.returncode, child.stdout, child.stderr)


def test_a_run_leaves_the_process_as_it_found_it_and_remembers_nothing(tmp_path: Path) -> None:
    env_before, cwd_before, argv_before = dict(os.environ), os.getcwd(), list(sys.argv)
    stdin_before = os.fstat(0)
    r = run_cli(VERIFY, cwd=ROOT, env={**os.environ, "ATIP_PROBE": "x"}, input="ignored")
    assert r.returncode == 0, r.stderr
    assert (dict(os.environ), os.getcwd(), sys.argv) == (env_before, cwd_before, argv_before)
    after = os.fstat(0)
    assert (after.st_dev, after.st_ino) == (stdin_before.st_dev, stdin_before.st_ino)
    for module, memos in PROCESS_MEMOS:
        loaded = sys.modules.get(module)
        for memo in memos if loaded is not None else ():
            found = getattr(loaded, memo)
            size = found.cache_info().currsize if hasattr(found, "cache_info") else len(found)
            assert size == 0, f"{module}.{memo} kept {size} entries after the run"


def test_exec_is_never_run_in_the_test_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``exec`` replaces the calling process: run_cli hands it to a child, never to this process's main."""
    import verify_helpers

    def refuse(argv: list[str]) -> int:
        raise AssertionError(f"exec reached the in-process main: {argv}")

    monkeypatch.setattr(verify_helpers, "main", refuse)
    r = run_cli(["--format", "json", "exec", "--policy", str(tmp_path / "absent.json"), "--", "true"])
    assert r.returncode == 2 and "absent.json" in r.stderr, r.stderr
