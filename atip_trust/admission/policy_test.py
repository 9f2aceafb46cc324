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

Sandbox (issue 33): every path a case names stays inside a folder: ``toolName`` is one file name,
written only inside the run's scratch folder; ``tool`` and the evidence files are relative to the case
file, without ``..`` and without a link out of its folder. Values of the wrong kind (a number for a
name, a float command, a NUL, a lone surrogate, an over-long name) refuse the case file, naming the
case. Hermetic: cases run with every per-user folder inside the scratch folder (no cached root, no
agent-tools tree, no org policy or serial store from the environment) and their audit lines go to a
scratch log, so a policy's ``audit.required`` holds without touching the machine's log.

``expect.reasons``: codes that must all be among the decision's reasons (a subset: a new, additional
reason does not break a case; a missing one does). An admission that cannot evaluate (exit 2) is a
deny with reasons ``ERROR`` and the error's type, and a mismatch unless ``ERROR`` is expected; a tool
whose bytes are not ``digest`` is a mismatch (``DIGEST_MISMATCH``).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from typing import TYPE_CHECKING, Any

from atip_trust._base.files import read_capped
from atip_trust._base.jsonio import expect_object, get_field, parse_json
from atip_trust._base.limits import LIMITS
from atip_trust._base.record import Record
from atip_trust._base.yamlio import load_yaml
from atip_trust.admission.admit import admit
from atip_trust.admission.options import AdmitOptions
from atip_trust.errors import AtipTrustError, PolicyError
from atip_trust.evaluation.inputs import Evidence
from atip_trust.policy.compose import compose
from atip_trust.policy.load import load_layer
from atip_trust.policy.model import Policy

if TYPE_CHECKING:
    from collections.abc import Iterator

_CASE_KEYS = ("name", "tool", "toolContent", "toolName", "digest", "evidence", "command", "interactive",
              "expect")
_EVIDENCE_KEYS = ("bundles", "keys", "signature", "metadata", "vsas", "trustedRoot")
BEHAVIORS = ("allow", "ask", "deny")
#: The longest file name Linux and macOS take (NAME_MAX), in bytes.
_NAME_MAX = 255


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
    JSON path of the first problem). Every value a case gives is checked here, before any case runs:
    a wrong type, a name that is not one file name, a path that leaves the case file's folder is an
    error naming the case (module docstring, "Sandbox")."""
    data = read_capped(path, LIMITS.policy_bytes, what="policy test cases")
    base = os.path.dirname(os.path.abspath(path))
    try:
        doc = load_yaml(data, cap=LIMITS.policy_bytes, what="policy test cases") \
            if path.endswith((".yaml", ".yml")) else parse_json(data, what="policy test cases")
        top = expect_object(doc, "$", allowed=("policy", "cases", "$comment", "description"), error=PolicyError)
        policy = get_field(top, "policy", str, path="$", nonempty=True, error=PolicyError)
        cases = top.get("cases")
        if not isinstance(cases, list) or not cases:
            raise PolicyError("expected a non-empty list of cases", path="$.cases")
        for i, case in enumerate(cases):
            _check_case(case, f"$.cases[{i}]", base)
    except AtipTrustError as err:
        raise PolicyError(err.message, path=f"{path}: {err.path}" if err.path else path) from err
    return os.path.join(base, policy), cases


def _check_case(case: Any, where: str, base: str) -> None:
    obj = expect_object(case, where, allowed=_CASE_KEYS, error=PolicyError)
    _text(get_field(obj, "name", str, path=where, nonempty=True, error=PolicyError), f"{where}.name")
    if ("tool" in obj) == ("toolContent" in obj):
        raise PolicyError("give exactly one of tool (a file) and toolContent (its bytes)", path=where)
    if "tool" in obj:
        tool = _case_path(base, obj["tool"], f"{where}.tool")
        if os.path.lexists(tool) and not os.path.isfile(tool):
            raise PolicyError(f"expected a file, got a folder or another kind of file: {tool}", path=f"{where}.tool")
    else:
        _text(obj["toolContent"], f"{where}.toolContent")
    if obj.get("toolName") is not None:
        _file_name(obj["toolName"], f"{where}.toolName")
    for key in ("digest",):
        if obj.get(key) is not None:
            _text(obj[key], f"{where}.{key}")
    command = obj.get("command")
    if command is not None and not isinstance(command, str) and not (
            isinstance(command, list) and all(isinstance(w, str) for w in command)):
        raise PolicyError(f"expected the command as a string or a list of strings, got {type(command).__name__}",
                          path=f"{where}.command")
    for i, word in enumerate([command] if isinstance(command, str) else command or []):
        _text(word, f"{where}.command" + ("" if isinstance(command, str) else f"[{i}]"))
    if not isinstance(obj.get("interactive", False), bool):
        raise PolicyError("expected true or false", path=f"{where}.interactive")
    ev = expect_object(obj.get("evidence") or {}, f"{where}.evidence", allowed=_EVIDENCE_KEYS, error=PolicyError)
    for key, value in ev.items():
        items = value if isinstance(value, list) else [] if value is None else [value]
        for j, item in enumerate(items):
            _case_path(base, item, f"{where}.evidence.{key}" + (f"[{j}]" if isinstance(value, list) else ""))
    exp = expect_object(obj.get("expect"), f"{where}.expect", allowed=("behavior", "reasons"), error=PolicyError)
    if exp.get("behavior") not in BEHAVIORS:
        raise PolicyError(f"expected one of {', '.join(BEHAVIORS)}, got {exp.get('behavior')!r}",
                          path=f"{where}.expect.behavior")
    reasons = exp.get("reasons", [])
    if not isinstance(reasons, list) or not all(isinstance(r, str) for r in reasons):
        raise PolicyError("expected a list of reason codes", path=f"{where}.expect.reasons")


def _text(value: Any, where: str) -> str:
    """A string that can be a file name's or an argument's text: no NUL, valid Unicode (a lone
    surrogate has no UTF-8 form)."""
    if not isinstance(value, str):
        raise PolicyError(f"expected a string, got {type(value).__name__} {value!r:.40}", path=where)
    if "\0" in value:
        raise PolicyError("a NUL character cannot be in a file name or an argument", path=where)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as err:
        raise PolicyError(f"not valid Unicode text ({err.reason} at position {err.start})", path=where) from None
    return value


def _file_name(value: Any, where: str) -> str:
    """``toolName``: one file name, written inside the case's scratch folder and nowhere else."""
    name = _text(value, where)
    if not name or name in (".", "..") or "/" in name or (os.sep != "/" and os.sep in name):
        raise PolicyError(f"expected one file name (no folder, no '..'), got {name!r:.80}", path=where)
    if len(name.encode("utf-8")) > _NAME_MAX:
        raise PolicyError(f"a file name is at most {_NAME_MAX} bytes, got {len(name.encode('utf-8'))}", path=where)
    return name


def _case_path(base: str, value: Any, where: str) -> str:
    """A file a case reads, relative to the case file and inside its folder: no absolute path, no
    ``..``, and no link that leads out (a suite decides on its own files only)."""
    text = _text(value, where)
    parts = text.replace(os.sep, "/").split("/")
    if not text or os.path.isabs(text) or ".." in parts:
        raise PolicyError(f"expected a path inside the case file's folder (relative, no '..'), got {text!r:.80}",
                          path=where)
    path = os.path.join(base, text)
    real_base = os.path.realpath(base)
    if os.path.commonpath([real_base, os.path.realpath(path)]) != real_base:
        raise PolicyError(f"{text} leads out of the case file's folder through a link", path=where)
    return path


def _paths(base: str, value: Any) -> list[str]:
    items = value if isinstance(value, list) else [] if value is None else [value]
    return [os.path.join(base, str(v)) for v in items]


def _write_tool(scratch: str, case: dict[str, Any]) -> str:
    """``toolContent`` as a new file ``toolName`` in a fresh folder of the scratch folder: created, never
    opened through a link or over an existing file (``_file_name`` already kept the name to one part)."""
    folder = tempfile.mkdtemp(dir=scratch)
    tool = os.path.join(folder, case.get("toolName") or "tool")
    fd = os.open(tool, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o700)
    with os.fdopen(fd, "wb") as out:
        out.write(case["toolContent"].encode("utf-8"))
    return tool


def run_case(case: dict[str, Any], policy: Policy, base: str, scratch: str) -> CaseResult:
    """Decide one case with ``admit``: no verdict cache, no agent-tools tree, and the audit line (which
    a policy's ``audit.required`` asks for) into the scratch folder: a test leaves no state and reads
    none of the machine's."""
    exp = case["expect"]
    ev = case.get("evidence") or {}
    tool = os.path.join(base, case["tool"]) if "tool" in case else _write_tool(scratch, case)
    roots = _paths(base, ev.get("trustedRoot"))
    metadata, signature = _paths(base, ev.get("metadata")), _paths(base, ev.get("signature"))
    try:
        adm = admit(tool, policy=policy, command=case.get("command"),
                    evidence=Evidence(bundles=_paths(base, ev.get("bundles")),
                                      signature=signature[0] if signature else None,
                                      metadata=metadata[0] if metadata else None, vsas=_paths(base, ev.get("vsas"))),
                    options=AdmitOptions(name=case.get("toolName"), keys=_paths(base, ev.get("keys")),
                                         trusted_root=roots[0] if roots else None,
                                         interactive=bool(case.get("interactive", False)), audit=True,
                                         audit_log=os.path.join(scratch, "audit.jsonl"), cache=False,
                                         agent_tools=False))
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


#: The machine's own state a case must not read: the caches (a TUF-refreshed root), the state folder,
#: RFC §4.2's agent-tools tree (data, config) and the org policy and serial store named by variables.
_HERMETIC_DIRS = ("XDG_CACHE_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "ATIP_CACHE_DIR")
_HERMETIC_UNSET = ("ATIP_TRUST_ORG_POLICY", "ATIP_TRUST_POLICY_SERIALS")


@contextlib.contextmanager
def _hermetic(scratch: str) -> Iterator[None]:
    """Run the cases with every per-user folder inside the scratch folder (empty), restoring the
    environment after: the trusted root is then the one the installed sigstore package embeds, there
    is no agent-tools tree, and one suite decides alike on a clean runner and a developer's machine."""
    saved = {k: os.environ.get(k) for k in (*_HERMETIC_DIRS, *_HERMETIC_UNSET)}
    try:
        for k in _HERMETIC_DIRS:
            os.environ[k] = os.path.join(scratch, "home", k.lower())
        for k in _HERMETIC_UNSET:
            os.environ.pop(k, None)
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def run_cases(path: str) -> list[CaseResult]:
    """Every case of the case file at ``path``, in order, against its policy alone: no org layer of
    the machine running the test (``kyverno test`` likewise tests the policies it is given), no cached
    root, no agent-tools tree (``_hermetic``), so a suite decides the same on every machine and in CI."""
    policy_path, cases = load_cases(path)
    policy = compose([load_layer(policy_path, source="local")])
    base = os.path.dirname(os.path.abspath(path))
    with tempfile.TemporaryDirectory(prefix="atip-policy-test-") as scratch, _hermetic(scratch):
        return [run_case(case, policy, base, scratch) for case in cases]


__all__ = ["BEHAVIORS", "CaseResult", "load_cases", "run_case", "run_cases"]
