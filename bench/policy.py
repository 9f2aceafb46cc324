"""Library decision latency: load a policy once, decide 10,000 times (issue 5 "Measure").

Run: python bench/policy.py [POLICY]   (default: policies/enterprise-strict.json)
Prints µs per decision for a few representative calls, and the cost of the report digest alone.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from atip_trust.facts.report import (
    ProvenanceResult,
    SignatureResult,
    TrustLevel,
    TrustReport,
)
from atip_trust.policy.compose import load_policy
from atip_trust.policy.decide import decide

ROOT = Path(__file__).resolve().parents[1]
N = 10_000
EFFECTS = {"destructive": False, "reversible": True, "idempotent": True, "network": True,
           "filesystem": {"write": False, "delete": False}, "cost": {"billable": False},
           "interactive": {"stdin": "none", "prompts": False, "tty": False}}


def sample_report() -> TrustReport:
    """A verified gh with SLSA 3 provenance: what an enterprise policy decides about most often."""
    return TrustReport(
        path="/usr/bin/gh", digests={"sha256": "ab" * 32}, trust_level=TrustLevel.VERIFIED,
        signature=SignatureResult(status="valid", kind="keyless",
                                  identity="https://github.com/cli/cli/.github/workflows/deployment.yml@refs/heads/trunk",
                                  issuer="https://token.actions.githubusercontent.com"),
        provenance=ProvenanceResult(status="valid", slsa_level=3,
                                    source={"uri": "git+https://github.com/cli/cli", "ref": "refs/heads/trunk"}),
        claims={"source": "vendor"},
    )


def main() -> None:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "policies" / "enterprise-strict.json"
    t0 = time.perf_counter()
    policy = load_policy(path)
    load_ms = (time.perf_counter() - t0) * 1000
    rep = sample_report()
    print(f"policy {path.name}: loaded in {load_ms:.1f} ms")
    cases = [
        ("allow (gh pr view, verified effects)", {"command": ["pr", "view", "1"], "effects": EFFECTS,
                                                  "effects_verified": True}),
        ("deny (gh repo delete)", {"command": ["repo", "delete", "x"], "effects": None}),
        ("no match (gh api, unverified effects)", {"command": ["api", "/user"], "effects": EFFECTS}),
    ]
    for name, kw in cases:
        decide(policy, rep, tool_name="gh", **kw)  # warm up
        t = time.perf_counter()
        for _ in range(N):
            decide(policy, rep, tool_name="gh", **kw)
        us = (time.perf_counter() - t) / N * 1e6
        print(f"  {name}: {us:.1f} µs/decision over {N} decisions")
    t = time.perf_counter()
    for _ in range(N):
        rep.digest()
    print(f"  of which report digest: {(time.perf_counter() - t) / N * 1e6:.1f} µs")
    long_command(rep)


def long_command(rep: TrustReport) -> None:
    """A 64 KiB command against many-wildcard deny/ask/allow rules: a backtracking regexp on
    ``.* a .* a .*...`` takes minutes here; the linear matcher (rules.glob_match) milliseconds."""
    from atip_trust.policy.compose import compose
    from atip_trust.policy.load import layer_from_document

    stars = ["Bash(* a * a * a * a * a * a * a * a * zz)", "Bash(*a*a*a*a*a*a*a*a*a*a*zz*)",
             "Bash(git * a * a * a * a * a * --force)"]
    policy = compose([layer_from_document({"version": 1, "permissions": {
        "deny": stars, "ask": stars, "allow": [*stars, "Bash(git push *)"]}}, source="local")])
    words = ["-C", ".", "push", *(["a"] * (64 * 1024 // 2))]
    n = 20
    t = time.perf_counter()
    for _ in range(n):
        d = decide(policy, rep, tool_name="git", command=words)
    ms = (time.perf_counter() - t) / n * 1000
    print(f"  64 KiB command, {3 * len(stars) + 1} wildcard rules, leading options: {ms:.1f} ms/decision "
          f"({d.behavior})")


if __name__ == "__main__":
    main()
