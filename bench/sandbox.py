"""What the run-time boundary (issue 37, execution/sandbox.py) costs per run, paired against the same run
without it, in interleaved rounds (so load on the machine falls on both sides alike):

* ``atip-trust exec -- quick`` (a signed copy of /bin/true whose signed metadata declares it read-only and
  offline) with ``--sandbox required`` against a policy with ``exec.sandbox: off``;
* the engine alone: the child runner (``run_verified``) on /bin/true inside the boundary and without it,
  and the boundary's two halves (Landlock only, network namespace only);
* for the ADR's comparison: ``bwrap`` with an equivalent profile (read-only root, private /tmp, no
  network), when bubblewrap is installed, against a plain spawn.

    python bench/sandbox.py [ROUNDS]
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "fixtures"))
sys.path.insert(0, str(REPO))

from atip_trust.execution.sandbox import Boundary, enter, landlock_abi, prepare  # noqa: E402

import testsigstore  # noqa: E402

ISSUER = "https://token.actions.githubusercontent.com"
ID = "https://github.com/example-org/tools/.github/workflows/release.yml@refs/tags/v1.0.0"
READ_ONLY = {"destructive": False, "reversible": True, "idempotent": True, "network": False,
             "filesystem": {"write": False, "delete": False}, "cost": {"billable": False}, "subprocess": False}


def _cpu() -> float:
    """CPU seconds (user + system) of this process and its reaped children: less sensitive than the wall
    clock to other load on a shared machine (no instruction counter is readable here without perf)."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def paired(a: Callable[[], object], b: Callable[[], object], rounds: int) -> tuple[float, float, float, float]:
    """Medians (ms) of ``a`` and ``b`` run alternately ``rounds`` times each: wall, then CPU time."""
    ta: list[float] = []
    tb: list[float] = []
    ca: list[float] = []
    cb: list[float] = []
    for i in range(rounds):
        for fn, out, cpu in ((a, ta, ca), (b, tb, cb)) if i % 2 == 0 else ((b, tb, cb), (a, ta, ca)):
            t, c = time.perf_counter(), _cpu()
            fn()
            out.append((time.perf_counter() - t) * 1000)
            cpu.append((_cpu() - c) * 1000)
    return statistics.median(ta), statistics.median(tb), statistics.median(ca), statistics.median(cb)


def show(label: str, inside: float, outside: float, cpu_in: float, cpu_out: float) -> None:
    print(f"{label:<44} wall {inside:8.2f} vs {outside:8.2f} ms (+{inside - outside:6.2f}, "
          f"{inside / outside:5.2f}x)  cpu {cpu_in:7.2f} vs {cpu_out:7.2f} ms (+{cpu_in - cpu_out:6.2f}, "
          f"{cpu_in / max(cpu_out, 0.001):5.2f}x)")


def spawn(argv: list[str], env: dict[str, str] | None = None, **kw: object) -> Callable[[], object]:
    return lambda: subprocess.run(argv, env=env, capture_output=True, stdin=subprocess.DEVNULL, check=False, **kw)


def confined(boundary: Boundary) -> Callable[[], object]:
    def run() -> object:
        prepared = prepare(boundary)
        try:
            return subprocess.run(["/bin/true"], capture_output=True, stdin=subprocess.DEVNULL,
                                  env=prepared.env({"PATH": "/usr/bin:/bin"}), preexec_fn=lambda: enter(prepared))
        finally:
            prepared.close()
    return run


def world(work: Path) -> tuple[list[str], list[str], dict[str, str]]:
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
    meta = json.dumps({"atip": {"version": "0.6"}, "name": "quick", "version": "1", "description": "quick",
                       "binary": {"hash": f"sha256:{hashlib.sha256(data).hexdigest()}", "name": "quick"},
                       "commands": {"": {"description": "quick", "effects": READ_ONLY}}}).encode()
    (work / "quick.json").write_bytes(meta)
    (work / "quick.json.bundle").write_text(json.dumps(ts.sign_artifact(meta, identity=ID, issuer=ISSUER)))
    policies = []
    for mode in ("off", "required"):
        policy = work / f"policy-{mode}.json"
        policy.write_text(json.dumps({
            "version": 1, "trust": {"trustedRoots": [{"path": str(root)}],
                                    "signers": [{"identity": ID, "issuer": ISSUER}]},
            "permissions": {"allow": [{"rule": "quick", "minTrustLevel": "VERIFIED"}]},
            "defaults": {"noMatch": "deny"}, "exec": {"sandbox": mode}}))
        policies.append(str(policy))
    env = {**os.environ, "PATH": f"{work / 'bin'}:/usr/bin:/bin", "ATIP_CACHE_DIR": str(work / "cache"),
           "ATIP_STATE_DIR": str(work / "state")}
    cli = [sys.executable, "-m", "atip_trust", "exec", "--bundle-dir", str(work / "bundles"), "--audit-log",
           str(work / "audit.jsonl"), "--metadata", str(work / "quick.json"), "--metadata-bundle",
           str(work / "quick.json.bundle")]
    off = [*cli, "--policy", policies[0], "--", "quick"]
    required = [*cli, "--policy", policies[1], "--", "quick"]
    return off, required, env


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    print(f"Landlock ABI {landlock_abi()}; {rounds} interleaved rounds per pair; uid {os.geteuid()}")
    work = Path(tempfile.mkdtemp(prefix="atip-bench-sandbox-"))
    try:
        off, required, env = world(work)
        for argv in (off, required):  # warms the verdict cache; each must run
            done = subprocess.run(argv, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
            assert done.returncode == 0, done.stderr
        record = json.loads((work / "audit.jsonl").read_text().splitlines()[-1])["sandbox"]
        assert record["enforced"] is True, record
        show("atip-trust exec -- quick (boundary vs off)", *paired(spawn(required, env), spawn(off, env), rounds))
        plain = spawn(["/bin/true"])
        full = Boundary(write="none", delete=False, network=False, source="bench")
        show("/bin/true: Landlock + network namespace", *paired(confined(full), plain, rounds))
        show("/bin/true: Landlock only", *paired(confined(Boundary(write="none", delete=False, source="b")),
                                                plain, rounds))
        show("/bin/true: network namespace only", *paired(confined(Boundary(write="any", network=False,
                                                                            source="b")), plain, rounds))
        bwrap = shutil.which("bwrap")
        if bwrap:
            show("/bin/true: bwrap (ro /, tmpfs /tmp, no net)", *paired(spawn(
                [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--tmpfs", "/tmp", "--unshare-net",
                 "--die-with-parent", "/bin/true"]), plain, rounds))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
