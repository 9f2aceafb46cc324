"""What the exec gate and an agent hook cost, warm (verdict cache filled), in one run:

* `quick` (a signed copy of /bin/true) run directly, against `atip-trust exec -- quick` (VERIFIED by the
  local test Sigstore): the ratio is the whole price of verifying before running, Python start-up
  included; and the library's own part (`exec_verified` up to the `execve`, in-process);
* `atip-trust hook claude-code` round trip (stdin JSON in, answer out) for `quick --help`, against
  `python -c pass`.

    python bench/exec.py
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "fixtures"))
sys.path.insert(0, str(REPO))

from atip_trust.admission.admit import load_admission_policy  # noqa: E402
from atip_trust.execution.exec import ExecPlan, exec_verified  # noqa: E402

import testsigstore  # noqa: E402

ISSUER = "https://token.actions.githubusercontent.com"
ID = "https://github.com/example-org/tools/.github/workflows/release.yml@refs/tags/v1.0.0"


def median_ms(argv: list[str], env: dict[str, str], stdin: bytes | None = None, runs: int = 15) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(argv, input=stdin, capture_output=True, env=env, check=False,
                       stdin=None if stdin is not None else subprocess.DEVNULL)
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


class _Stop(Exception):
    pass


def _stop(plan: ExecPlan) -> None:
    raise _Stop()


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="atip-bench-exec-"))
    try:
        ts = testsigstore.TestSigstore(seed=99)
        root = ts.write_trusted_root(work / "trusted_root.json")
        (work / "bin").mkdir()
        (work / "bundles" / "sha256").mkdir(parents=True)
        tool = work / "bin" / "quick"
        shutil.copyfile("/bin/true", tool)
        tool.chmod(0o755)
        data = tool.read_bytes()
        (work / "bundles" / "sha256" / f"{hashlib.sha256(data).hexdigest()}.sigstore.json").write_text(
            json.dumps(ts.sign_artifact(data, identity=ID, issuer=ISSUER)))
        policy = work / "policy.json"
        policy.write_text(json.dumps({
            "version": 1, "trust": {"trustedRoots": [{"path": str(root)}],
                                    "signers": [{"identity": ID, "issuer": ISSUER}]},
            "permissions": {"allow": [{"rule": "quick *", "minTrustLevel": "VERIFIED"},
                                      {"rule": "quick", "minTrustLevel": "VERIFIED"}]},
            "defaults": {"noMatch": "deny"}}))
        env = {**os.environ, "PATH": f"{work / 'bin'}:/usr/bin:/bin", "ATIP_CACHE_DIR": str(work / "cache")}
        flags = ["--policy", str(policy), "--bundle-dir", str(work / "bundles"),
                 "--audit-log", str(work / "audit.jsonl")]
        cli = [sys.executable, "-m", "atip_trust"]
        check = subprocess.run(cli + ["exec", *flags, "--", "quick"], env=env, capture_output=True, text=True)
        assert check.returncode == 0, check.stderr  # warms the verdict cache too

        direct = median_ms([str(tool)], env)
        base = median_ms([sys.executable, "-c", "pass"], env)
        gated = median_ms(cli + ["exec", *flags, "--", "quick"], env)
        bundle = next((work / "bundles" / "sha256").iterdir())
        admitted = median_ms(cli + ["admit", "quick", "--non-interactive", *flags[:2], "--bundle", str(bundle),
                                    *flags[4:]], env)
        print(f"quick (/bin/true), direct      {direct:7.2f} ms")
        print(f"python -c pass                 {base:7.2f} ms")
        print(f"atip-trust admit quick         {admitted:7.2f} ms  (the same admission, no exec)")
        print(f"atip-trust exec -- quick       {gated:7.2f} ms  ({gated / direct:.0f}x direct, "
              f"{gated / base:.1f}x python start-up, {gated / admitted:.2f}x admit)")

        os.environ.update({"PATH": env["PATH"], "ATIP_CACHE_DIR": env["ATIP_CACHE_DIR"]})
        loaded = load_admission_policy(str(policy))
        lib = []
        for _ in range(30):
            t = time.perf_counter()
            try:
                exec_verified("quick", [], policy=loaded, bundle_dir=work / "bundles",
                              audit_log=work / "audit.jsonl", before_exec=_stop)
            except _Stop:
                pass
            lib.append((time.perf_counter() - t) * 1000)
        print(f"exec_verified up to execve      {statistics.median(lib):7.2f} ms  (in-process, policy "
              "loaded once; without the pre-exec re-check, which runs after this hook point)")

        hook_in = json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash",
                              "tool_input": {"command": "quick --help"}, "cwd": str(work)}).encode()
        hook_cmd = cli + ["hook", "claude-code", *flags]
        said = subprocess.run(hook_cmd, input=hook_in, env=env, capture_output=True, check=False).stdout
        assert b'"allow"' in said, said
        hook = median_ms(hook_cmd, env, stdin=hook_in)
        print(f"atip-trust hook claude-code    {hook:7.2f} ms  ({hook / base:.1f}x python start-up)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
