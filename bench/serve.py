"""``atip-trust serve``'s figures (issue: a warm decision service), each with its reference:

* **latency**: p50 and p99 of a warm Claude Code http-hook decision (loopback HTTP with the bearer
  token, as Claude Code sends it) and of ``/v1/admit`` (the Unix socket), with 1 and 16 concurrent
  clients (keep-alive connections), in ms (goal: p50 <= 2 ms, p99 <= 10 ms at 16 clients);
* **thin client**: ``hook claude-code --via-service`` from the venv's interpreter in instructions
  (valgrind callgrind), against that venv's ``python -c pass`` (goal <= 1.5x);
* **memory**: the service's resident set after all the requests of the latency runs (VmRSS), and
  before them.

    python bench/serve.py [--requests N] [--python VENV_PYTHON]

``--python``: the interpreter of a venv where atip-trust is installed as ``pip install .`` makes it
(default: this one). The world is fixtures/shell_lines.py's (a signed ``tool`` allowed by its policy).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for extra in (ROOT / "fixtures", ROOT / "tests" / "service"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from serve_helpers import Served, UnixConnection, start, token_file  # noqa: E402
from shell_lines import make_world  # noqa: E402


def _hook_body(cwd: str) -> bytes:
    return json.dumps({"session_id": "s", "cwd": cwd, "hook_event_name": "PreToolUse", "tool_name": "Bash",
                       "tool_input": {"command": "tool x && ls"}}).encode()


def _latencies(svc: Served, clients: int, each: int, path: str, body: bytes, headers: dict[str, str],
               tcp: bool) -> list[float]:
    out: list[float] = []
    lock = threading.Lock()

    def client() -> None:
        conn: http.client.HTTPConnection = (http.client.HTTPConnection("127.0.0.1", svc.port, timeout=60)
                                            if tcp else UnixConnection(svc.sock))
        mine = []
        for _ in range(each):
            t = time.perf_counter()
            conn.request("POST", path, body, headers)
            resp = conn.getresponse()
            resp.read()
            mine.append(time.perf_counter() - t)
            if resp.status != 200:
                raise SystemExit(f"{path}: status {resp.status}")
        conn.close()
        with lock:
            out.extend(mine)

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def _rss_kib(pid: int) -> int:
    for row in Path(f"/proc/{pid}/status").read_text().splitlines():
        if row.startswith("VmRSS:"):
            return int(row.split()[1])
    return -1


def _instructions(argv: list[str], stdin: bytes, env: dict[str, str]) -> int | None:
    if shutil.which("valgrind") is None:
        return None
    p = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv], input=stdin,
                       capture_output=True, env=env, timeout=600, check=False)
    for row in p.stderr.decode().splitlines():
        if "Collected :" in row:
            return int(row.rsplit(":", 1)[1])
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--requests", type=int, default=5000, help="requests per latency run (default 5000: 20,000 in all)")
    ap.add_argument("--python", default=sys.executable, help="the venv interpreter to measure")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="atsb", dir="/tmp"))
    try:
        world = make_world(work / "w")
        env = {**{k: v for k, v in os.environ.items() if not k.startswith(("LD_", "PYTHON"))}, **world.env,
               "ATIP_CACHE_DIR": str(work / "cache")}
        token = token_file(work)
        auth = {"Authorization": "Bearer " + token.read_text().strip(), "Content-Type": "application/json"}
        svc = start(work / "s.sock", "--http", "127.0.0.1:0", "--token-file", str(token), "--policy",
                    str(world.policy), "--bundle-dir", str(world.bundles), "--no-audit", env=env,
                    python=args.python)
        try:
            _report(args, svc, world, env, auth)
        finally:
            svc.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _report(args: argparse.Namespace, svc: Served, world: object, env: dict[str, str],
            auth: dict[str, str]) -> None:
    cwd = str(getattr(world, "dir"))
    hook, admit = _hook_body(cwd), json.dumps({"tool": str(getattr(world, "bin") / "tool")}).encode()
    _latencies(svc, 1, 50, "/v1/hooks/claude-code", hook, auth, True)  # warm the verdict cache
    print(f"serve: resident set after warm-up {_rss_kib(svc.proc.pid)} KiB")
    total = 0
    for name, path, body, tcp in (("http hook", "/v1/hooks/claude-code", hook, True),
                                  ("/v1/admit", "/v1/admit", admit, False)):
        for clients in (1, 16):
            each = max(1, args.requests // clients)
            lat = _latencies(svc, clients, each, path, body, auth, tcp)
            total += len(lat)
            print(f"serve: {name:<10} {clients:>2} clients  {len(lat):>6} requests  p50 {_pct(lat, 0.5):6.2f} ms  "
                  f"p99 {_pct(lat, 0.99):6.2f} ms  mean {statistics.fmean(lat) * 1000:6.2f} ms")
    print(f"serve: resident set after {total} more requests {_rss_kib(svc.proc.pid)} KiB")
    code = "from atip_trust.cli.launch import main; raise SystemExit(main())"
    thin = _instructions([args.python, "-I", "-c", code, "hook", "claude-code", "--via-service", "--socket",
                          svc.sock, "--no-audit"], hook, env)
    base = _instructions([args.python, "-c", "pass"], b"", env)
    if thin is None or base is None:
        print("serve: thin client instructions: valgrind not found, not measured")
    else:
        print(f"serve: thin client {thin / 1e6:.1f} M instructions, python -c pass {base / 1e6:.1f} M: "
              f"{thin / base:.2f}x (goal <= 1.5x)")


if __name__ == "__main__":
    main()
