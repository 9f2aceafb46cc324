"""``atip-trust policy test CASES``: a policy's expected decisions, run through the one admission.

What ``kyverno test`` and ``gator verify`` give Kubernetes policies: a case file states, for a policy,
tools and evidence, the decision each command must get; every case is decided by ``admission.admit.admit``
(the same pipeline as ``admit``, ``exec`` and the hooks, never a copy), and a case whose decision or
reason codes differ is a mismatch. A policy edit that changes a decision therefore fails the suite
that pins it.

Case file (JSON or YAML; paths relative to the case file)::

    {"policy": "../ci.json",
     "cases": [{"name": "unsigned tool is denied in CI",
                "tool": "tools/gh"                      # a file, or
                "toolContent": "#!/bin/sh\\n", "toolName": "gh",   # bytes written to a private file
                "digest": "sha256:<hex>",               # optional: the tool's bytes must be these
                "evidence": {"bundles": [], "keys": [], "signature": null, "metadata": null,
                             "vsas": [], "trustedRoot": null},
                "command": "pr view 1",
                "interactive": false,
                "expect": {"behavior": "deny", "reasons": ["UNSIGNED"]}}]}

``expect.reasons``: codes that must all be among the decision's reasons (a subset: a new, additional
reason does not break a case; a missing one does). An admission that cannot evaluate (exit 2) is a
deny with reasons ``ERROR`` and the error's type, and a mismatch unless ``ERROR`` is expected; a tool
whose bytes are not ``digest`` is a mismatch (``DIGEST_MISMATCH``).
"""

from __future__ import annotations

import os
import tempfile
TYPE_CHECKING = False  # typing's constant without importing typing at run time (docs/caching.md)
if TYPE_CHECKING:
    from typing import Any

from atip_trust._base.files import read_capped
from atip_trust._base.jsonio import expect_object, get_field, parse_json
from atip_trust._base.record import Record
from atip_trust._base.yamlio import load_yaml
from atip_trust.errors import AtipTrustError, PolicyError
from atip_trust.admission.admit import admit
from atip_trust.admission.options import AdmitOptions
from atip_trust.evaluation.inputs import Evidence
from atip_trust.policy.compose import compose
from atip_trust.policy.load import load_layer
from atip_trust._base.limits import LIMITS
from atip_trust.policy.model import Policy

_CASE_KEYS = ("name", "tool", "toolContent", "toolName", "digest", "evidence", "command", "interactive",
              "expect")
_EVIDENCE_KEYS = ("bundles", "keys", "signature", "metadata", "vsas", "trustedRoot")
BEHAVIORS = ("allow", "ask", "deny")


class CaseResult(Record):
    """One case: what was expected, what the admission decided, and whether they agree."""

    name: str
    expected: str
    expected_reasons: tuple[str, ...]
    actual: str
    actual_reasons: tuple[str, ...]
    #: An admission that raised (could not evaluate): its one-line message; the decision is then deny.
    error: str | None

    @property
    def missing(self) -> tuple[str, ...]:
        return tuple(r for r in self.expected_reasons if r not in self.actual_reasons)

    @property
    def ok(self) -> bool:
        """Same behavior, every expected reason present, and no error unless one was expected (``ERROR``
        among the expected reasons: a case may pin that an input cannot be evaluated)."""
        return self.expected == self.actual and not self.missing and \
            (self.error is None or "ERROR" in self.expected_reasons)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "ok": self.ok,
                "expected": {"behavior": self.expected, "reasons": list(self.expected_reasons)},
                "actual": {"behavior": self.actual, "reasons": list(self.actual_reasons)},
                "missing_reasons": list(self.missing), "error": self.error}


def load_cases(path: str) -> tuple[str, list[dict[str, Any]]]:
    """The case file: its policy path (resolved) and its cases, shape-checked (``PolicyError`` with the
    JSON path of the first problem)."""
    data = read_capped(path, LIMITS.policy_bytes, what="policy test cases")
    try:
        doc = load_yaml(data, cap=LIMITS.policy_bytes, what="policy test cases") \
            if path.endswith((".yaml", ".yml")) else parse_json(data, what="policy test cases")
        top = expect_object(doc, "$", allowed=("policy", "cases", "$comment", "description"), error=PolicyError)
        policy = get_field(top, "policy", str, path="$", nonempty=True, error=PolicyError)
        cases = top.get("cases")
        if not isinstance(cases, list) or not cases:
            raise PolicyError("expected a non-empty list of cases", path="$.cases")
        for i, case in enumerate(cases):
            _check_case(case, f"$.cases[{i}]")
    except AtipTrustError as err:
        raise PolicyError(err.message, path=f"{path}: {err.path}" if err.path else path) from err
    base = os.path.dirname(os.path.abspath(path))
    return os.path.join(base, policy), cases


def _check_case(case: Any, where: str) -> None:
    obj = expect_object(case, where, allowed=_CASE_KEYS, error=PolicyError)
    get_field(obj, "name", str, path=where, nonempty=True, error=PolicyError)
    if ("tool" in obj) == ("toolContent" in obj):
        raise PolicyError("give exactly one of tool (a file) and toolContent (its bytes)", path=where)
    expect_object(obj.get("evidence", {}), f"{where}.evidence", allowed=_EVIDENCE_KEYS, error=PolicyError)
    exp = expect_object(obj.get("expect"), f"{where}.expect", allowed=("behavior", "reasons"), error=PolicyError)
    if exp.get("behavior") not in BEHAVIORS:
        raise PolicyError(f"expected one of {', '.join(BEHAVIORS)}, got {exp.get('behavior')!r}",
                          path=f"{where}.expect.behavior")
    reasons = exp.get("reasons", [])
    if not isinstance(reasons, list) or not all(isinstance(r, str) for r in reasons):
        raise PolicyError("expected a list of reason codes", path=f"{where}.expect.reasons")


def _paths(base: str, value: Any) -> list[str]:
    items = value if isinstance(value, list) else [] if value is None else [value]
    return [os.path.join(base, str(v)) for v in items]


def run_case(case: dict[str, Any], policy: Policy, base: str, scratch: str) -> CaseResult:
    """Decide one case with ``admit`` (no audit line, no verdict cache: a test leaves no state)."""
    exp = case["expect"]
    ev = case.get("evidence") or {}
    if "tool" in case:
        tool = os.path.join(base, case["tool"])
    else:
        tool = os.path.join(scratch, f"{len(os.listdir(scratch))}", case.get("toolName") or "tool")
        os.makedirs(os.path.dirname(tool))
        with open(tool, "wb") as out:
            out.write(str(case["toolContent"]).encode())
        os.chmod(tool, 0o755)
    roots = _paths(base, ev.get("trustedRoot"))
    metadata, signature = _paths(base, ev.get("metadata")), _paths(base, ev.get("signature"))
    try:
        adm = admit(tool, policy=policy, command=case.get("command"),
                    evidence=Evidence(bundles=_paths(base, ev.get("bundles")),
                                      signature=signature[0] if signature else None,
                                      metadata=metadata[0] if metadata else None, vsas=_paths(base, ev.get("vsas"))),
                    options=AdmitOptions(name=case.get("toolName"), keys=_paths(base, ev.get("keys")),
                                         trusted_root=roots[0] if roots else None,
                                         interactive=bool(case.get("interactive", False)), audit=False, cache=False))
    except AtipTrustError as err:
        return CaseResult(case["name"], exp["behavior"], tuple(exp.get("reasons", [])), "deny",
                          ("ERROR", type(err).__name__), err.diagnostics())
    actual = adm.decision.behavior
    codes = tuple(dict.fromkeys(r.code for r in adm.decision.reasons))  # each code once, in order
    digest = case.get("digest")
    if digest is not None and digest != f"sha256:{adm.report.digests.get('sha256')}":
        return CaseResult(case["name"], exp["behavior"], tuple(exp.get("reasons", [])), actual,
                          (*codes, "DIGEST_MISMATCH"), f"the tool's bytes are not {digest}")
    return CaseResult(case["name"], exp["behavior"], tuple(exp.get("reasons", [])), actual, codes, None)


def run_cases(path: str) -> list[CaseResult]:
    """Every case of the case file at ``path``, in order, against its policy alone: no org layer of
    the machine running the test (``kyverno test`` likewise tests the policies it is given), so a
    suite decides the same on every machine and in CI."""
    policy_path, cases = load_cases(path)
    policy = compose([load_layer(policy_path, source="local")])
    base = os.path.dirname(os.path.abspath(path))
    with tempfile.TemporaryDirectory(prefix="atip-policy-test-") as scratch:
        return [run_case(case, policy, base, scratch) for case in cases]


__all__ = ["BEHAVIORS", "CaseResult", "load_cases", "run_case", "run_cases"]
