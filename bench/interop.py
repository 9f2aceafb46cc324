"""Print `agree A/N` for the interop suite through the CLI, and each disagreement.

    python bench/interop.py [--jobs N]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from interop_cases import build, load_rows  # noqa: E402

sys.path.insert(0, str(ROOT / "tests"))
from interop_cases import find_interop  # noqa: E402

INTEROP = find_interop()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("-k", default="")
    a = ap.parse_args()
    rows = [r for r in load_rows(INTEROP) if a.k in r["case"]]
    tmp = Path(tempfile.mkdtemp())

    def one(row: dict) -> tuple[str, bool, str]:
        case = build(row, INTEROP, tmp)
        p = subprocess.run([sys.executable, "-m", "atip_trust", *case.argv, "--format", "json"],
                           capture_output=True, text=True, stdin=subprocess.DEVNULL)
        ok = (p.returncode == 0) == case.expect_ok and "Traceback" not in p.stderr
        detail = ""
        try:
            out = json.loads(p.stdout)
            fails = [c for c in out.get("checks", []) if c["status"] in ("fail", "error")]
            detail = f"{out.get('trust_level')} " + "; ".join(
                f"{c['name']}: {c.get('message', '')}"[:160] for c in fails[:3])
            if out.get("error"):
                detail += " " + out["error"]["message"][:200]
        except ValueError:
            detail = (p.stderr or p.stdout)[-300:]
        return row["case"], ok, f"exit {p.returncode} declared={case.note!r} {detail}"

    with ThreadPoolExecutor(a.jobs) as ex:
        results = list(ex.map(one, rows))
    agree = sum(ok for _, ok, _ in results)
    for name, ok, detail in results:
        if not ok:
            print(f"DISAGREE {name}: {detail}")
    print(f"agree {agree}/{len(results)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
