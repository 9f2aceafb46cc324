"""The call validator: may this tool call run, given its command's effects, the tool's verified trust
level and the policy? (RFC §11.2 pre-execution validation; the reference ``createValidator``.)

A call is a provider's flat tool name (``gh_pr_create``, resolved only through ``facts/flatten.py``) and
its arguments, or the tool's argv words (``["gh", "pr", "create", "--title", "x"]``). The answer is a
``CallDecision``: allow / ask / deny, *every* violation (code, severity, message), and the reasons.

One decision, not two that can disagree: the validator does not gate effects itself. It asks
``policy.decide`` about the call's exact command line with the command's effects, and reads its
capability violations (``DESTRUCTIVE_OPERATION`` ...) and ``TRUST_BELOW_THRESHOLD`` off the reasons that
decision gives (``decide.effect_classes_of``). What it adds is what only a call has: the command must
be one the metadata declares (``UNKNOWN_COMMAND``), the arguments must fit their declarations
(``ARGUMENT_INVALID``, facts/arguments.py), the cost limit of the policy's ``calls`` section
(``COST_EXCEEDS_LIMIT``), a lead agent's RFC §10.2 delegation for a sub-agent (composed into the
policy as one more layer, so it can only tighten) and an AIP-14 contract's approval class.

Beyond the reference (docs/bridge.md, "Call validator"):

* tool-level effects merge with the command's, the value adding risk winning (``effects.merge_states``),
  so a tool-level ``destructive: true`` applies to every command;
* a command that declares no effects is *unknown*, and unknown is risky (the reference lets it pass);
* the trust threshold is the verified ``TrustLevel`` of a ``TrustReport`` (policy
  ``requirements.minTrustLevel``), never the tool's self-declared ``trust.source``;
* declared effects relax gating only when the metadata is verified and is the very bytes the admission
  verified (``Admission.metadata_sha256``); an AIP-14 ``TOOL.md`` that is not verified can only tighten;
* violations carry the reference's severities (destructive, non-reversible, billable, cost, trust,
  unknown command, invalid arguments: ``error``; network and filesystem: ``warning``); whether a call
  is asked or denied is the policy's ``below`` for that gate, not the severity.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import PurePath
from typing import TYPE_CHECKING, Any, Literal

from atip_trust._base.record import Record, field
from atip_trust.admission.admit import Admission
from atip_trust.errors import UsageError, expect_type
from atip_trust.facts.aip14 import ToolContract, approval_reason, contract_states
from atip_trust.facts.arguments import argument_problems, command_argv, parse_argv
from atip_trust.facts.effects import (
    classify,
    command_lookup,
    interactive_need,
    merge_declared,
    merge_states,
    walk_command,
)
from atip_trust.facts.flatten import FlatCommand, flatten_commands
from atip_trust.facts.metadata import MetadataDocument, parse_metadata
from atip_trust.facts.report import Decision, Reason, TrustReport
from atip_trust.policy.compose import compose
from atip_trust.policy.decide import decide, effect_classes_of
from atip_trust.policy.load import layer_from_document
from atip_trust.policy.model import COST_ORDER, STRICTNESS, Policy

if TYPE_CHECKING:
    from atip_trust.facts.effects import State
    from atip_trust.policy.model import RuleBehavior

Severity = Literal["error", "warning"]
#: What the runtime gives the command's standard input: a terminal, a pipe (or file) of input, or
#: nothing (closed or ``/dev/null``, what an agent runtime or CI hands a child).
StdinGiven = Literal["tty", "pipe", "none"]

#: Every violation code and its severity (the reference's, for the codes it has).
VIOLATION_SEVERITY: dict[str, Severity] = {
    "DESTRUCTIVE_OPERATION": "error",
    "NON_REVERSIBLE_OPERATION": "error",
    "BILLABLE_OPERATION": "error",
    "NETWORK_OPERATION": "warning",
    "FILESYSTEM_WRITE": "warning",
    "FILESYSTEM_DELETE": "warning",
    "COST_EXCEEDS_LIMIT": "error",
    "TRUST_BELOW_THRESHOLD": "error",
    "UNKNOWN_COMMAND": "error",
    "ARGUMENT_INVALID": "error",
    # Gated classes the reference has no code for; a gate the policy states is a violation too.
    "NON_IDEMPOTENT_OPERATION": "warning",
    "INTERACTIVE_OPERATION": "warning",
    "SUBPROCESS_OPERATION": "warning",
    "RESOURCE_CREATE": "warning",
    "RESOURCE_MODIFY": "warning",
    "RESOURCE_DELETE": "error",
    # RFC §10.2 delegation and the AIP-14 approval class.
    "DELEGATION_TOOL_NOT_ALLOWED": "error",
    "DELEGATION_COMMAND_DENIED": "error",
    "APPROVAL_REQUIRED": "warning",
    # RFC §3.6 interactive: the command needs a terminal or stdin the call does not have (bridge/loop.py).
    "INTERACTIVE_REQUIRED": "error",
}

#: Effect class (effects.EFFECT_CLASSES, and ``subprocess`` for delegation) -> violation code.
CLASS_CODES: dict[str, str] = {
    "destructive": "DESTRUCTIVE_OPERATION",
    "nonReversible": "NON_REVERSIBLE_OPERATION",
    "billable": "BILLABLE_OPERATION",
    "network": "NETWORK_OPERATION",
    "filesystemWrite": "FILESYSTEM_WRITE",
    "filesystemDelete": "FILESYSTEM_DELETE",
    "nonIdempotent": "NON_IDEMPOTENT_OPERATION",
    "interactive": "INTERACTIVE_OPERATION",
    "subprocess": "SUBPROCESS_OPERATION",
    "creates": "RESOURCE_CREATE",
    "modifies": "RESOURCE_MODIFY",
    "deletes": "RESOURCE_DELETE",
}

#: Decision reason codes that are the trust threshold.
_TRUST_CODES = frozenset({"TRUST_BELOW_MINIMUM", "TRUST_COMPROMISED"})


class Violation(Record):
    code: str
    severity: Severity
    message: str
    tool: str
    #: The declared command's path words (``("pr", "create")``), None when no command was found.
    command_path: tuple[str, ...] | None = None
    #: The policy rule behind it (``capabilities.destructive``), when a rule is.
    rule: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "severity": self.severity, "message": self.message, "tool": self.tool,
                "commandPath": list(self.command_path) if self.command_path is not None else None,
                "rule": self.rule}


class CallDecision(Record):
    """The answer for one call: ``behavior`` is what a runtime does; ``violations`` say why in the
    validator's codes; ``reasons`` are the policy decision's reasons and one per added violation."""

    behavior: RuleBehavior
    violations: tuple[Violation, ...]
    reasons: tuple[Reason, ...]
    tool: str
    command: FlatCommand | None
    #: The argv the call runs (``["gh", "pr", "create", "--title", "x"]``); None when it cannot be built.
    argv: tuple[str, ...] | None
    #: The policy's decision for this command line and these effects (the capability gates are its).
    decision: Decision
    effects_verified: bool = False

    @property
    def valid(self) -> bool:
        """The reference's ``valid``: no violation at all."""
        return not self.violations

    @property
    def exit_code(self) -> int:
        return {"allow": 0, "deny": 1, "ask": 3}[self.behavior]

    def to_json(self) -> dict[str, Any]:
        return {
            "behavior": self.behavior, "valid": self.valid, "tool": self.tool,
            "command": self.command.name if self.command is not None else None,
            "argv": list(self.argv) if self.argv is not None else None,
            "effects_verified": self.effects_verified,
            "violations": [v.to_json() for v in self.violations],
            "reasons": [r.to_json() for r in self.reasons],
        }


def _metadata_dict(metadata: MetadataDocument | Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    if isinstance(metadata, MetadataDocument):
        return metadata.doc
    return metadata


def resolve_words(
    metadata: Mapping[str, Any], words: Sequence[str]
) -> tuple[FlatCommand | None, tuple[str, ...], str | None]:
    """``(tool, *argv)`` -> the leaf command its words name, the words after the command's path, or why
    none: the RFC §3.3 walk (``effects.walk_command``) decides, so the validator and admission agree on
    which words name a declared command."""
    rest = tuple(words[1:])
    _, why = walk_command(metadata, rest)
    if why is not None:
        return None, rest, why
    leaves = flatten_commands(metadata)
    best = max((c for c in leaves if c.argv_prefix and rest[:len(c.argv_prefix)] == c.argv_prefix),
               key=lambda c: len(c.argv_prefix), default=None)
    top = metadata.get("commands")
    if best is None:
        root = next((c for c in leaves if not c.argv_prefix), None)
        if root is not None and not (rest and isinstance(top, Mapping) and rest[0] in top):
            best = root
    if best is None:
        return None, rest, f"{' '.join(rest)!r} names a group of commands, not one command"
    return best, rest[len(best.argv_prefix):], None


def _cost_estimate(
    sources: Sequence[tuple[Sequence[Mapping[str, Any]], bool]],
) -> tuple[str | None, str]:
    """(highest declared estimate, the estimate that counts) over (effects levels, verified) sources:
    the highest estimate a verified source declares, ``high`` when none does, and never below what an
    unverified source declares (a risky claim needs no verification)."""
    trusted: list[int] = []
    claimed: list[int] = []
    for levels, verified in sources:
        for lv in levels:
            cost = lv.get("cost")
            est = cost.get("estimate") if isinstance(cost, Mapping) else None
            if est in COST_ORDER:
                (trusted if verified else claimed).append(COST_ORDER.index(est))
    counted = max(trusted) if trusted else len(COST_ORDER) - 1
    counted = max([counted, *claimed])
    declared = max(trusted + claimed) if trusted or claimed else None
    return (COST_ORDER[declared] if declared is not None else None), COST_ORDER[counted]


class _Call(Record, frozen=False):
    """One ``validate_call``: the call as given, what step (1) finds it names, and the violations the
    validator itself adds (each with its behavior and reason) beside the policy decision's."""

    tool: str
    meta: Mapping[str, Any] | None
    name: str | Sequence[str]
    contracts: Sequence[ToolContract]
    contracts_verified: bool
    effects_verified: bool
    extra: list[tuple[Violation, RuleBehavior, Reason]] = field(default_factory=list)
    cmd: FlatCommand | None = None
    #: Why no declared command matches (None when ``cmd`` is found).
    why: str | None = None
    tail: tuple[str, ...] = ()
    words: tuple[str, ...] = ()
    argv: tuple[str, ...] | None = None
    omitted: str | None = None

    def add(self, code: str, message: str, behavior: RuleBehavior, *, rule: str, expected: Any = None,
            actual: Any = None, path: tuple[str, ...] | None = None) -> None:
        v = Violation(code, VIOLATION_SEVERITY[code], message, self.tool, path, rule)
        self.extra.append((v, behavior, Reason(code, message, rule=rule, expected=expected, actual=actual)))


def validate_call(
    metadata: MetadataDocument | Mapping[str, Any] | None,
    name: str | Sequence[str],
    arguments: Mapping[str, Any] | None = None,
    *,
    policy: Policy,
    report: TrustReport,
    tool_name: str | None = None,
    effects_verified: bool = False,
    metadata_source: str | None = None,
    delegation: Mapping[str, Any] | None = None,
    contracts: Sequence[ToolContract] = (),
    contracts_verified: bool = False,
    interactive: bool = True,
    now: datetime | None = None,
    stdin: StdinGiven = "none",
) -> CallDecision:
    """Validate one call. ``report`` is the tool's verified trust report; ``effects_verified`` says
    whether ``metadata`` is verified for it (``check_call`` works that out from an ``Admission``).
    ``delegation``: an RFC §10.2 object (``allowedTools``, ``deniedCommands``, ``effectRestrictions``)
    a lead agent sets for a sub-agent. ``contracts``: AIP-14 ``TOOL.md`` contracts for the tool, verified
    or not (``contracts_verified``). ``interactive``: someone can answer ``ask`` (else ask is deny).
    ``stdin``: what the call's standard input will be (default ``none``, as a tool call runs): a
    command that needs more (RFC §3.6 ``interactive``) is ``INTERACTIVE_REQUIRED`` (``_step_interactive``)."""
    if stdin not in ("tty", "pipe", "none"):
        raise UsageError(f"stdin: expected tty, pipe or none, actual {stdin!r}")
    expect_type("validate_call() policy", policy, Policy)
    expect_type("validate_call() report", report, TrustReport)
    expect_type("validate_call() metadata", metadata, (MetadataDocument, Mapping), optional=True)
    meta = _metadata_dict(metadata)
    tool = tool_name or (str(meta.get("name")) if meta is not None and meta.get("name") else None) or (
        PurePath(name[0]).name if not isinstance(name, str) and name else str(name))
    c = _Call(tool=tool, meta=meta, name=name, contracts=contracts, contracts_verified=contracts_verified,
              effects_verified=effects_verified)
    _step_command(c)
    _step_arguments(c, arguments)
    states = _step_effects(c)

    # (4) The policy's decision, with the delegation as one more (tightening) layer.
    effective = policy
    if delegation is not None:
        layer = layer_from_document(json.loads(json.dumps({"version": 1, "delegation": delegation})),
                                    source="cli", path="<delegation>")
        effective = compose([*policy.layers, layer])
    decision = decide(effective, report, tool_name=tool, command=list(c.words), effects=states,
                      effects_verified=effects_verified, interactive=interactive,
                      metadata_source=metadata_source, now=now,
                      effects_unknown=c.why if c.cmd is None else None, effects_omitted=c.omitted)

    found = _step_decision_violations(c, effective, decision)
    _step_cost_and_approval(c, effective)
    _step_interactive(c, effective, stdin)
    return _call_decision(c, found, decision, interactive)


def _step_command(c: _Call) -> None:
    """(1) Which declared command, and the command line the policy decides about."""
    meta, name, tool = c.meta, c.name, c.tool
    if meta is None:
        c.why = "no metadata declares the tool's commands"
    elif meta.get("name") != tool:
        c.why = f"the metadata describes tool {meta.get('name')!r}, the call is for {tool!r}"
    elif isinstance(name, str):
        c.cmd = next((f for f in flatten_commands(meta) if f.name == name), None)
        if c.cmd is None:
            c.why = f"{name!r} is not a command the metadata of {tool!r} declares"
    else:
        given = list(name)
        if not given or PurePath(given[0]).name != tool:
            c.why = f"the argv {given[:1]!r} does not start with the tool {tool!r}"
        else:
            c.cmd, c.tail, c.why = resolve_words(meta, given)
            c.words = tuple(given[1:])
            c.argv = tuple(given)
    if c.cmd is None and meta is not None and c.words:
        # RFC §3.1.1, through the one lookup admit uses: an omitted command is still unknown here (its
        # arguments cannot be checked), and the decision reports the partial document's assumption.
        _, _, c.omitted = command_lookup(meta, c.words)
    if c.cmd is None:
        c.add("UNKNOWN_COMMAND", f"unknown command: {c.why}", "deny", rule="builtin:call-validator",
              expected="a command the metadata declares", actual=name if isinstance(name, str) else list(name))


def _step_arguments(c: _Call, arguments: Mapping[str, Any] | None) -> None:
    """(2) Arguments against their declarations."""
    cmd = c.cmd
    if cmd is None:
        return
    problems: list[str]
    if c.tail and arguments:
        problems = ["give the arguments as argv words or as an object, not both"]
    elif c.tail or not isinstance(c.name, str):
        arguments, problems = parse_argv(cmd, c.tail)
        problems = problems or argument_problems(cmd, arguments)
    else:
        problems = argument_problems(cmd, arguments)
        if not problems:
            c.argv = tuple(command_argv(c.tool, cmd, arguments))
            c.words = c.argv[1:]
    for problem in problems:
        c.add("ARGUMENT_INVALID", f"invalid argument: {problem}", "deny", rule="builtin:call-validator",
              path=cmd.path)
    if problems:
        c.argv = None
        c.words = c.words or cmd.argv_prefix


def _step_effects(c: _Call) -> dict[str, State] | None:
    """(3) Effects: every level on the command's path (tool first) and the AIP-14 contracts; the value
    adding risk wins; an unverified contract's "safe" claims are dropped (it can only tighten)."""
    if c.cmd is None:
        return None
    layers = [classify(e) for e in c.cmd.effect_levels]
    layers += [contract_states(t, verified=c.contracts_verified) for t in c.contracts]
    return merge_states(*layers)


def _step_decision_violations(c: _Call, effective: Policy, decision: Decision) -> list[Violation]:
    """(5) The capability, trust and delegation violations are the decision's own reasons."""
    tool = c.tool
    denied_by_delegation = {text for layer in effective.layers
                            for text in (layer.document.get("delegation") or {}).get("deniedCommands", ())}
    found: list[Violation] = []
    path = c.cmd.path if c.cmd is not None else None
    for r in decision.reasons:
        for cls in effect_classes_of(r):
            code = CLASS_CODES.get(cls)
            if code is not None:
                found.append(Violation(code, VIOLATION_SEVERITY[code], r.message, tool, path, r.rule))
        if r.code in _TRUST_CODES:
            found.append(Violation("TRUST_BELOW_THRESHOLD", "error", r.message, tool, path, r.rule))
        elif r.code == "DELEGATION_TOOL_NOT_ALLOWED":
            found.append(Violation(r.code, "error", r.message, tool, path, r.rule))
        elif r.code == "COMMAND_DENIED" and r.rule in denied_by_delegation:
            found.append(Violation("DELEGATION_COMMAND_DENIED", "error", r.message, tool, path, r.rule))
    return found


def _step_cost_and_approval(c: _Call, effective: Policy) -> None:
    """(6) Cost (policy ``calls``) and the contracts' approval class."""
    cmd, contracts = c.cmd, c.contracts
    limits = effective.call_limits
    if cmd is not None and limits.max_cost_estimate is not None:
        declared, counted = _cost_estimate([(cmd.effect_levels, c.effects_verified),
                                            ([t.effects for t in contracts], c.contracts_verified)])
        if COST_ORDER.index(counted) > COST_ORDER.index(limits.max_cost_estimate):
            c.add("COST_EXCEEDS_LIMIT",
                  f"cost estimate {counted} is above the limit {limits.max_cost_estimate}"
                  + ("" if declared == counted else
                     f" (declared: {declared or 'nothing'}; an undeclared or unverified estimate counts as high)"),
                  limits.over_cost, rule="calls.maxCostEstimate",
                  expected=f"<= {limits.max_cost_estimate}", actual=counted, path=cmd.path)
    path = cmd.path if cmd is not None else None
    for t in contracts:
        asked = approval_reason(t)
        if asked is not None:
            c.add(asked.code, asked.message, "ask", rule=asked.rule or "", expected=asked.expected,
                  actual=asked.actual, path=path)


def _step_interactive(c: _Call, effective: Policy, stdin: StdinGiven) -> None:
    """(7) RFC §3.6 ``interactive`` ("use PTY, pipe input, or skip"): a command that needs a terminal,
    or input on stdin, that the call will not have is never run to hang or fail silently. The need is
    ``effects.interactive_need`` (the one reading exec and the call loop use; believed from any
    metadata, since it can only stop a run). Asked or denied as the policy's ``interactive`` gate says
    (its ``always``, else its ``below``; ask without a gate): a person may run it in a terminal, and
    ``ask`` without someone to answer is deny."""
    if c.cmd is None or stdin == "tty":
        return
    need = interactive_need(merge_declared(c.cmd.effect_levels))
    if need is None or (need[0] == "stdin" and stdin == "pipe"):
        return
    gate = effective.gates.get("interactive")
    behavior: RuleBehavior = (gate.always or gate.below) if gate is not None else "ask"
    given = "a pipe, no terminal" if stdin == "pipe" else "no stdin, no terminal"
    c.add("INTERACTIVE_REQUIRED", f"{c.tool} {' '.join(c.cmd.path)} needs {need[1]}; the call has {given}",
          behavior, rule="capabilities.interactive" if gate is not None else "builtin:interactive",
          expected=need[1], actual=given, path=c.cmd.path)


def _call_decision(c: _Call, found: list[Violation], decision: Decision, interactive: bool) -> CallDecision:
    """The violations once each, the strictest behavior of the decision and the validator's own, and
    ``ask`` without a human as ``deny``."""
    extra = c.extra
    violations: list[Violation] = []
    for v in [*found, *(v for v, _, _ in extra)]:
        if all((v.code, v.message) != (w.code, w.message) for w in violations):
            violations.append(v)
    behavior: RuleBehavior = decision.behavior
    for _, b, _ in extra:
        if STRICTNESS[b] > STRICTNESS[behavior]:
            behavior = b
    reasons = [r for _, _, r in extra] + list(decision.reasons)
    if behavior == "ask" and not interactive:
        behavior = "deny"
        if not any(r.code == "ASK_WITHOUT_USER" for r in reasons):
            reasons.insert(0, Reason("ASK_WITHOUT_USER", "the call needs confirmation but no one can answer",
                                     rule="builtin:non-interactive", expected="interactive session",
                                     actual="non-interactive"))
    return CallDecision(behavior=behavior, violations=tuple(violations), reasons=tuple(reasons), tool=c.tool,
                        command=c.cmd, argv=c.argv, decision=decision, effects_verified=c.effects_verified)


def check_call(
    admission_or_report: Admission | TrustReport,
    metadata: MetadataDocument | bytes | Mapping[str, Any] | None,
    name: str | Sequence[str],
    arguments: Mapping[str, Any] | None,
    policy: Policy,
    delegation: Mapping[str, Any] | None = None,
    *,
    contracts: Sequence[ToolContract] = (),
    contracts_verified: bool = False,
    interactive: bool = True,
    now: datetime | None = None,
    stdin: StdinGiven = "none",
) -> CallDecision:
    """The call-time gate a runtime asks before it runs a call (exit-code semantics as ``admit``).

    With an ``Admission``: the tool's verified report, and the metadata's effects count as verified
    only when the admission verified them *and* ``metadata`` is the same bytes (a ``MetadataDocument``
    or the raw bytes; a parsed mapping cannot prove that and counts as unverified). With a bare
    ``TrustReport``: the effects count as unverified (they can only tighten). ``stdin``: what the
    runtime gives the command's standard input (``tty``, ``pipe``, default ``none``): a command that
    needs more is ``INTERACTIVE_REQUIRED``, asked or denied by policy. Errors in the input (a
    malformed metadata document, a bad delegation object) raise ``AtipTrustError``: a denial."""
    expect_type("check_call() admission_or_report", admission_or_report, (Admission, TrustReport))
    expect_type("check_call() policy", policy, Policy)
    if isinstance(metadata, (bytes, bytearray)):
        metadata = parse_metadata(bytes(metadata))
    if isinstance(admission_or_report, Admission):
        adm = admission_or_report
        same = (isinstance(metadata, MetadataDocument) and adm.metadata_sha256 is not None
                and str(metadata.sha256) == adm.metadata_sha256)
        verified = adm.effects_verified and same
        return validate_call(metadata, name, arguments, policy=policy, report=adm.report, tool_name=adm.tool,
                             effects_verified=verified, metadata_source=adm.metadata_source if verified else None,
                             delegation=delegation, contracts=contracts, contracts_verified=contracts_verified,
                             interactive=interactive, now=now, stdin=stdin)
    return validate_call(metadata, name, arguments, policy=policy, report=admission_or_report,
                         effects_verified=False, delegation=delegation, contracts=contracts,
                         contracts_verified=contracts_verified, interactive=interactive, now=now,
                         stdin=stdin)


__all__ = ["CallDecision", "StdinGiven", "Violation", "VIOLATION_SEVERITY", "check_call", "resolve_words", "validate_call"]
