"""The call loop in one call for agent runtimes (RFC §8.2, §11.2): a model's tool call in, the
provider's tool-result message out, and in between only the verified bytes run.

``run_tool_call(provider, response, surface, policy)``, for each call in the response:

(1) parse (``parse_tool_call``); a response of the wrong shape is a result with error ``parse_error``
    naming the provider, not an exception;
(2) the name must be one the surface offered (``Surface.commands``, bridge/surface.py): a blocked
    command or a name the model made up is denied and nothing is opened or run;
(3) validate (``agents.calls.check_call``) against the admission the surface was compiled from:
    the command's effects, the verified trust level, policy, the arguments against their declarations,
    an RFC §10.2 ``delegation`` when given;
(4) the argv (``tool_call_to_argv``: no shell; a value like ``--exec=evil`` for a positional goes
    after ``--``);
(5) admit the tool's file again, open, with the call's command words (execution/exec.py ``admit_file``):
    the binary may have changed since the surface was compiled, and what runs must be what is admitted
    now. Its digest and its metadata must still be the ones compiled for (else ``tool_changed``:
    compile again); a ``#!`` script follows policy ``exec.scripts`` as ``atip-trust exec`` does (its
    interpreter admitted too, and run on a sealed copy of the verified script, ``sealed_script``);
(6) run the verified descriptor as a child (execution/child.py ``run_verified``): no stdin, the policy's
    environment (``exec.env``, execution/env.py), its own process group, ``bridge.callTimeoutMs`` and
    ``bridge.maxOutputBytes``;
(7) filter stdout and stderr (``create_result_filter``: secrets redacted over the whole output, then
    truncated) and wrap the result with ``handle_tool_result``. Output the byte cap or the deadline cut
    loses its incomplete last line first: a secret cut there may be too short for any pattern.

Several calls of one response (RFC §7.3): steps (1)-(5), the question to a person and the allow line
are done for each call in call order; then the allowed calls run, at most ``MAX_PARALLEL_CALLS`` at a
time, in groups where no two write the same declared resource (``_writes``: a command's
``creates``/``modifies``/``deletes``; one that may write without naming what conflicts with every
writer; reads conflict with nothing). Results, and any audit line written after a run, keep call order.

Every result is the AIP-14 error envelope around the fields below (``_enveloped``): ``ok``, and on a
refusal or failure ``error: {code, message, retryable, class}`` with AIP-14's standard code.

A refusal is a normal tool result the model reads (``status: denied``, an ``error`` class such as
``permission_denied``, ``confirmation_required``, ``unknown_tool``, ``tool_changed``, the ``reasons``
and ``violations``), never an exception: only programming errors (a wrong argument type, an unknown
provider) raise.

Who answers an ``ask``: the runtime, through ``confirm(call, decision) -> bool``, called once, after
every check and right before the run. Without ``confirm`` nobody can answer, so ask is deny (error
``confirmation_required``; the model can tell its user why). There is deliberately no way to hand
``ask`` back to the model as an answer: a model's "yes" is not a person's.

Each call that reaches a decision leaves one audit line (the call-time admission's, with ``argv`` and
``via: bridge``), as ``exec`` does; an allowed call that then fails to start leaves a second, ``deny``
line (``NOT_STARTED``). Each call of a response is settled on its own: a string no argv can carry (a
lone surrogate) is ``ARGUMENT_INVALID`` before anything is logged as allowed, and an unexpected error
in one call is that call's ``error`` result, never an exception that loses the other calls' outcomes.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from atip_trust._base.parallel import map_threads
from atip_trust._base.record import Record, field, replace
from atip_trust.admission.admit import audit_target
from atip_trust.agents.calls import CallDecision, check_call
from atip_trust.bridge.argv import tool_call_to_argv
from atip_trust.bridge.compile import check_provider, command_effects, tool_document
from atip_trust.bridge.lifecycle import (
    ToolCall,
    ToolCallParseError,
    handle_tool_result,
    parse_tool_call,
)
from atip_trust.bridge.safety import DEFAULT_MAX_RESULT_LENGTH, create_result_filter
from atip_trust.bridge.surface import Surface, SurfaceCommand
from atip_trust.errors import ArgumentTypeError, ArtifactAccessError, AtipTrustError, UsageError, expect_type
from atip_trust.execution.child import RunResult, run_verified
from atip_trust.execution.env import exec_environment
from atip_trust.execution.exec import (
    ExecRefused,
    Opened,
    admit_file,
    interpreter_refusal,
    planned_boundary,
    script_interpreter,
    sealed_script,
)
from atip_trust.facts.effects import classify
from atip_trust.facts.metadata import MetadataDocument
from atip_trust.facts.report import Reason
from atip_trust.policy.model import Policy
from atip_trust.state.audit import append_audit, audit_record
from atip_trust.state.broken import mark_broken

Status = Literal["ok", "failed", "timeout", "denied", "invalid", "error"]
#: A runtime's question to its user: may this call, which policy asks about, run?
Confirm = Callable[[ToolCall, CallDecision], bool]


class CallOutcome(Record):
    """One call's outcome: ``message`` goes back to the model; the rest is for the runtime."""

    _no_repr = frozenset({"decision", "run"})

    id: str
    name: str | None
    status: Status
    #: What the model is shown (``handle_tool_result``'s ``result``).
    result: dict[str, Any]
    #: The provider's tool-result message.
    message: dict[str, Any]
    decision: CallDecision | None = None
    argv: tuple[str, ...] | None = None
    run: RunResult | None = None


class _Ctx(Record):
    provider: str
    surface: Surface
    policy: Policy
    confirm: Confirm | None
    environ: Mapping[str, str]
    delegation: Mapping[str, Any] | None
    audit: bool
    audit_log: str | None
    cache: bool
    max_result_length: int
    redact_patterns: Sequence[Any]


def run_tool_call(
    provider: str,
    call: Any,
    surface: Surface,
    policy: Policy,
    *,
    confirm: Confirm | None = None,
    environ: Mapping[str, str] | None = None,
    delegation: Mapping[str, Any] | None = None,
    audit: bool = True,
    audit_log: str | os.PathLike[str] | None = None,
    cache: bool = True,
    max_result_length: int = DEFAULT_MAX_RESULT_LENGTH,
    redact_patterns: Sequence[Any] = (),
) -> list[CallOutcome]:
    """Run every tool call in ``call`` (a provider response, or one ``ToolCall`` already parsed) through
    the checks of the module docstring; one ``CallOutcome`` per call, in order (one ``parse_error``
    outcome, id ``""``, for a response that cannot be read).

    ``surface``: what ``build_surface`` returned for this provider. ``environ``: the environment the
    policy's ``exec.env`` filters (default: this process's). ``max_result_length`` and
    ``redact_patterns``: the result filter's (``create_result_filter``)."""
    chosen = check_provider(provider)
    if not isinstance(surface, Surface):
        raise ArgumentTypeError(f"run_tool_call() surface: expected Surface (what build_surface returns: it "
                                f"knows which file each offered name runs), actual {type(surface).__name__}")
    expect_type("run_tool_call() policy", policy, Policy)
    if surface.provider != chosen:
        raise UsageError(f"the surface was compiled for {surface.provider}, the call is from {chosen}")
    target = audit_target(policy, audit, audit_log)
    ctx = _Ctx(chosen, surface, policy, confirm, dict(os.environ if environ is None else environ),
               delegation, audit, os.fspath(target) if target is not None else None, cache,
               max_result_length, redact_patterns)
    if isinstance(call, ToolCall):
        calls = [call]
    else:
        try:
            calls = parse_tool_call(chosen, call)
        except ToolCallParseError as err:
            return [_outcome(ctx, "", None, "invalid", {
                "status": "invalid", "error": "parse_error", "provider": err.provider,
                "message": err.message, "path": err.path})]
    prepared: list[CallOutcome | _Ready] = []
    try:
        for c in calls:  # in call order: the checks, a person's answers, the allow lines
            prepared.append(_settled(ctx, c, _one))
        return _run_all(ctx, prepared)
    finally:
        for item in prepared:
            if isinstance(item, _Ready):
                item.close()  # a no-op for the ones that ran


def _settled(ctx: _Ctx, call: ToolCall, step: Callable[[_Ctx, ToolCall], Any]) -> Any:
    """One call's ``step``, settled on its own: whatever goes wrong in it (a bug included) is that call's
    ``error`` result, so the other calls of the response keep their outcomes (a model told nothing
    about a call that ran would run it again)."""
    try:
        return step(ctx, call)
    except AtipTrustError as err:
        return _refusal(ctx, call, "evaluation_failed", f"{call.name} was not run: {err.diagnostics()}",
                        [], status="error")
    except Exception as err:  # noqa: BLE001 - one call's failure must not drop the others' outcomes
        return _refusal(ctx, call, "internal_error", f"{call.name} was not run: {type(err).__name__} "
                        "while handling the call (a defect in atip-trust; the other calls are unaffected)",
                        [], status="error")


#: The effect classes that write (network alone is not: most network calls are reads; a tool that
#: changes a remote resource declares it in creates/modifies/deletes, RFC §3.6).
WRITE_CLASSES = ("destructive", "filesystemWrite", "filesystemDelete", "creates", "modifies", "deletes",
                 "subprocess")
#: RFC §7.3: at most this many calls of one response run at once (each a child process waited on).
MAX_PARALLEL_CALLS = 4


def _writes(entry: SurfaceCommand) -> frozenset[str] | None:
    """What a call declares it writes, for RFC §7.3 scheduling: None for a read-only command (every write,
    delete, creation, modification and subprocess declared absent); otherwise the resources its effects
    name (``creates``/``modifies``/``deletes``), or ``{"*"}`` when it may write without naming what."""
    effects = command_effects(entry.command)
    states = classify(effects)
    if all(states.get(c) == "safe" for c in WRITE_CLASSES):
        return None
    named: set[str] = set()
    for k in ("creates", "modifies", "deletes"):
        listed = effects.get(k)
        named.update(f"{k}:{r}" for r in (listed if isinstance(listed, list) else []) if isinstance(r, str))
    undeclared = any(states.get(c) != "safe" for c in WRITE_CLASSES if c not in ("creates", "modifies", "deletes"))
    return frozenset(named | ({"*"} if undeclared or not named else set()))


def _conflict(a: frozenset[str] | None, b: frozenset[str] | None) -> bool:
    return a is not None and b is not None and ("*" in a or "*" in b or bool(a & b))


def _batches(ready: list[tuple[int, _Ready]]) -> list[list[tuple[int, _Ready]]]:
    """Calls in order, grouped so that no two in a group write the same declared resource (RFC §7.3);
    a call that conflicts with one before it starts a new group, so it runs after that one finished."""
    out: list[list[tuple[int, _Ready]]] = []
    for item in ready:
        if not out or any(_conflict(item[1].writes, other.writes) for _, other in out[-1]):
            out.append([])
        out[-1].append(item)
    return out


def _run_all(ctx: _Ctx, prepared: list[CallOutcome | _Ready]) -> list[CallOutcome]:
    """Run the calls that were allowed, concurrently where RFC §7.3 allows it, bounded; the results and
    any audit line written after a run come back in call order."""
    results: list[CallOutcome | None] = [p if isinstance(p, CallOutcome) else None for p in prepared]
    ready = [(i, p) for i, p in enumerate(prepared) if isinstance(p, _Ready)]
    for batch in _batches(ready):
        done = map_threads(lambda item: _settled(ctx, item[1].call, item[1].execute), batch,
                           workers=MAX_PARALLEL_CALLS)
        for (i, item), outcome in zip(batch, done, strict=True):
            assert outcome.ok, outcome.error  # _settled turns every exception into a result
            results[i] = outcome.value
            for record, behavior, reasons in item.late_lines:
                _write(ctx, record, behavior, reasons)
    return [r for r in results if r is not None]


#: Each refusal or failure class -> the AIP-14 standard error code ("Errors": the envelope hosts wrap
#: driver errors in). ``unauthorised`` for what policy or a person refused; ``no_route`` when the
#: compiled route no longer leads to the admitted bytes; ``upstream_error`` for the tool's own failure.
AIP14_CODES: Mapping[str, str] = {
    "parse_error": "input_invalid", "invalid_arguments": "input_invalid",
    "interactive_required": "input_unsupported", "unknown_tool": "not_found",
    "permission_denied": "unauthorised", "confirmation_required": "unauthorised",
    "user_declined": "unauthorised", "tool_changed": "no_route", "not_runnable": "no_route",
    "timeout": "timeout", "output_too_large": "upstream_error", "failed": "upstream_error",
    "execution_failed": "upstream_error", "evaluation_failed": "internal", "internal_error": "internal",
    # AIP-14 "mutates is the truth": the tool tried what its declaration rules out (docs/sandbox.md).
    "effect_violation": "unauthorised",
}


def _enveloped(status: Status, result: dict[str, Any]) -> dict[str, Any]:
    """The AIP-14 result envelope around today's fields: ``ok: true``, or ``ok: false`` with ``error``
    ``{code, message, retryable, class}`` (``class``: the loop's own finer error, which ``error`` held as
    a string before). ``retryable`` is always false: a call that ran may have had its effects, and one
    that was refused is refused again until something changes; the model is not told to repeat it."""
    if status == "ok":
        return {"ok": True, **result}
    cls = result.get("error") if isinstance(result.get("error"), str) else status
    message = result.get("message") or f"the tool exited with {result.get('exit_code')}"
    return {"ok": False, **result, "error": {"code": AIP14_CODES.get(str(cls), "internal"), "message": message,
                                             "retryable": False, "class": cls}}


def _outcome(ctx: _Ctx, id: str, name: str | None, status: Status, result: dict[str, Any], **more: Any
             ) -> CallOutcome:
    shown = _enveloped(status, result)
    return CallOutcome(id, name, status, shown,
                       handle_tool_result(ctx.provider, id, shown, is_error=status != "ok"), **more)


def _refusal(ctx: _Ctx, call: ToolCall, error: str, message: str, reasons: Sequence[Reason | Mapping[str, Any]],
             *, status: Status = "denied", decision: CallDecision | None = None,
             argv: Sequence[str] | None = None) -> CallOutcome:
    result: dict[str, Any] = {
        "status": status, "error": error, "tool": call.name, "message": message,
        "reasons": [r.to_json() if isinstance(r, Reason) else dict(r) for r in reasons],
    }
    if decision is not None and decision.violations:
        result["violations"] = [v.to_json() for v in decision.violations]
    return _outcome(ctx, call.id, call.name, status, result, decision=decision,
                    argv=tuple(argv) if argv is not None else None)


def _write(ctx: _Ctx, record: dict[str, Any], behavior: str, reasons: Sequence[Reason] = ()) -> None:
    if not ctx.audit:
        return
    line = dict(record, decision=behavior, via="bridge")
    if reasons:
        line["reasons"] = [*line.get("reasons", []), *(r.to_json() for r in reasons)]
    append_audit(line, ctx.audit_log)


def _one(ctx: _Ctx, call: ToolCall) -> CallOutcome | _Ready:
    entry = ctx.surface.commands.get(call.name)
    if entry is None:
        blocked = next((b for b in ctx.surface.blocked if b.get("name") == call.name), None)
        if blocked is not None:
            return _refusal(ctx, call, "permission_denied", f"{call.name!r} is blocked by policy and was "
                            "never offered: it does not run", blocked.get("reasons", []))
        return _refusal(ctx, call, "unknown_tool", f"{call.name!r} is not a tool this surface offers",
                        [Reason("NOT_ON_SURFACE", f"{call.name!r} is not on the compiled surface",
                                expected="a name from the compiled tools", actual=call.name)])
    tool = entry.tool
    interactive = ctx.confirm is not None
    try:
        decision = check_call(tool.admission or tool.report, tool.metadata, call.name, call.arguments,
                              ctx.policy, ctx.delegation, interactive=interactive)
    except AtipTrustError as err:
        return _refusal(ctx, call, "evaluation_failed", f"the call could not be validated: {err.diagnostics()}",
                        [], status="error")
    record = audit_record(decision.decision, tool.report, tool=decision.tool,
                          command=list(decision.argv[1:] if decision.argv else entry.command.argv_prefix))
    invalid = any(v.code in ("ARGUMENT_INVALID", "UNKNOWN_COMMAND") for v in decision.violations)
    needs = next((r for r in decision.reasons if r.code == "INTERACTIVE_REQUIRED"), None)
    if needs is not None and not invalid and decision.decision.behavior != "deny":
        # RFC §3.6 "use PTY, pipe input, or skip": the call runs with no stdin and no terminal (the
        # validator's own INTERACTIVE_REQUIRED, agents/calls.py), and a person's "yes" cannot type a
        # password, so it is skipped, asked or not, never run to fail silently. A call refused for
        # its arguments or by policy is reported as that refusal.
        return _interactive_refusal(ctx, call, decision, record, needs)
    if decision.behavior == "deny":
        asked = any(r.code == "ASK_WITHOUT_USER" for r in decision.reasons)
        # The line carries every reason the call was refused for (argument and delegation checks too).
        _write(ctx, dict(record, argv=None, call=call.name, reasons=[r.to_json() for r in decision.reasons]),
               "deny")
        error = "invalid_arguments" if invalid else "confirmation_required" if asked else "permission_denied"
        why = "; ".join(r.message for r in decision.reasons[:3]) or "denied by policy"
        return _refusal(ctx, call, error, f"{call.name} was not run: {why}", decision.reasons,
                        status="invalid" if invalid else "denied", decision=decision)
    try:
        argv = tool_call_to_argv(tool_document(tool.metadata), call.name, call.arguments)
    except AtipTrustError as err:
        return _refusal(ctx, call, "invalid_arguments", err.diagnostics(), [], status="invalid",
                        decision=decision)
    return _admit(ctx, call, entry, decision, argv)


def _interactive_refusal(ctx: _Ctx, call: ToolCall, decision: CallDecision, record: dict[str, Any],
                         r: Reason) -> CallOutcome:
    refused = replace(decision, behavior="deny")
    _write(ctx, dict(record, argv=None, call=call.name), "deny", [r])
    return _refusal(ctx, call, "interactive_required", f"{call.name} was not run: {r.message}", [r],
                    decision=refused)


def _changed(entry: SurfaceCommand, opened: Opened) -> list[Reason]:
    """The file admitted now against the one the surface was compiled for: same bytes, same metadata."""
    before = entry.tool.admission
    now = opened.admission
    assert before is not None
    reasons: list[Reason] = []
    was, nowd = before.report.digests.get("sha256"), now.report.digests.get("sha256")
    if was != nowd:
        reasons.append(Reason("CHANGED_SINCE_COMPILED", f"{now.path} is not the file the surface was compiled "
                              "for: compile the surface again to offer it", expected=f"sha256:{was}",
                              actual=f"sha256:{nowd}"))
    if before.metadata_sha256 != now.metadata_sha256:
        reasons.append(Reason("METADATA_CHANGED_SINCE_COMPILED", "the metadata admitted now is not the "
                              "metadata the surface was compiled from (SurfaceTool.evidence must be the "
                              "evidence compile used)", expected=before.metadata_sha256,
                              actual=now.metadata_sha256))
    return reasons


class _Ready(Record, frozen=False):
    """A call admitted and allowed, its allow line written, waiting to run: the open descriptors it
    runs from (closed once it ran, or if it never does) and what it declares it writes."""

    _no_repr = frozenset({"opened"})

    call: ToolCall
    entry: SurfaceCommand
    decision: CallDecision
    argv: list[str]
    opened: list[Opened]
    target: Opened
    run_argv0: str
    run_args: list[str]
    env: dict[str, str]
    record: dict[str, Any]
    timeout_ms: int
    cap: int
    sealed: int = -1
    writes: frozenset[str] | None = None
    #: The boundary its verified effects give it, and policy exec.sandbox (execution/exec.py
    #: ``planned_boundary``; docs/sandbox.md).
    boundary: Any = None
    sandbox_mode: str = "off"
    #: Audit lines this call leaves after its run, written in call order by ``_run_all``.
    late_lines: list[tuple[dict[str, Any], str, list[Reason]]] = field(default_factory=list)

    def close(self) -> None:
        for o in self.opened:
            o.art.close()
        self.opened = []
        if self.sealed >= 0:
            os.close(self.sealed)
            self.sealed = -1

    def execute(self, ctx: _Ctx, call: ToolCall) -> CallOutcome:
        """Run the verified descriptor (execution/child.py ``run_verified``); always closes."""
        try:
            res = run_verified(self.target.art, self.run_args, env=self.env, timeout=self.timeout_ms / 1000,
                               max_output=self.cap, argv0=self.run_argv0,
                               keep_fds=(self.sealed,) if self.sealed >= 0 else (), boundary=self.boundary,
                               sandbox_mode=self.sandbox_mode)
        except AtipTrustError as err:
            # The allow line is written; say in the log that the call did not run after all.
            self.late_lines.append((self.record, "deny", [Reason(
                "NOT_STARTED", f"the allowed call did not start: {err.diagnostics()}", expected="started",
                actual="not started")]))
            if isinstance(err, ArtifactAccessError):
                return _refusal(ctx, call, "tool_changed", f"{call.name} was not run: {err.diagnostics()}",
                                [], decision=self.decision, argv=self.argv)
            return _refusal(ctx, call, "execution_failed", f"{call.name} could not be started: "
                            f"{err.diagnostics()}", [], status="error", decision=self.decision, argv=self.argv)
        finally:
            self.close()
        if res.violation is not None:
            return self.violation(ctx, call, res)
        return _ran(ctx, call, self.entry, self.decision, self.argv, res)

    def violation(self, ctx: _Ctx, call: ToolCall, res: RunResult) -> CallOutcome:
        """The tool tried to leave its boundary (execution/sandbox.py ``attempt_seen``): the call fails with
        ``effect_violation``, a deny line follows the allow line and the digest is marked (state/broken.py)."""
        declared = (res.sandbox or {}).get("boundary")
        mark_broken(str(self.record.get("digest") or ""), tool=call.name, attempt=str(res.violation),
                    declared=declared)
        reason = Reason("EFFECT_VIOLATION", f"{call.name} tried {res.violation}, outside its declared effects; "
                        "its bytes are denied until 'atip-trust cache clear-broken' clears the mark",
                        rule="exec.sandbox", expected=str(declared), actual=str(res.violation))
        self.late_lines.append((dict(self.record, sandbox=res.sandbox), "deny", [reason]))
        return _refusal(ctx, call, "effect_violation", f"{call.name} was stopped: {reason.message}", [reason],
                        status="failed", decision=self.decision, argv=self.argv)


def _admit(ctx: _Ctx, call: ToolCall, entry: SurfaceCommand, decision: CallDecision,
           argv: list[str]) -> CallOutcome | _Ready:
    """Steps (5) and the question to a person: the call's refusal, or the call ready to run with its
    allow line written (``_Ready`` then owns the open descriptors)."""
    tool = entry.tool
    if tool.admission is None:
        return _refusal(ctx, call, "not_runnable", "the surface was compiled from a trust report, not an "
                        "admission: it names no verified file to run", [], status="error",
                        decision=decision, argv=argv)
    # The evidence and options the surface was compiled with; this loop's cache, audit and person.
    options = replace(tool.options, name=tool.admission.tool, cache=ctx.cache, interactive=ctx.confirm is not None,
                      audit=ctx.audit, audit_log=ctx.audit_log)
    env = exec_environment(ctx.policy, ctx.environ)
    opened: list[Opened] = []
    sealed = -1
    handed = False
    try:
        try:
            main = admit_file(tool.admission.path, policy=ctx.policy, command=argv[1:], evidence=tool.evidence,
                              options=options, bundle_dir=tool.bundle_dir)
        except AtipTrustError as err:
            # admit has written the error's audit line.
            return _refusal(ctx, call, "evaluation_failed", f"{call.name} was not run: the tool could not be "
                            f"admitted: {err.diagnostics()}", [], decision=decision, argv=argv)
        opened.append(main)
        adm = main.admission
        record = dict(adm.audit_record, argv=argv, call=call.name)
        changed = _changed(entry, main)
        if changed:
            _write(ctx, record, "deny", changed)
            return _refusal(ctx, call, "tool_changed", f"{call.name} was not run: "
                            + "; ".join(r.message for r in changed), changed, decision=decision, argv=argv)
        if adm.behavior == "deny":
            _write(ctx, record, "deny")
            return _refusal(ctx, call, "permission_denied", f"{call.name} was not run: "
                            + ("; ".join(r.message for r in adm.decision.reasons[:3]) or "denied by policy"),
                            adm.decision.reasons, decision=decision, argv=argv)
        run_argv0, run_args, target = argv[0], argv[1:], main
        planned = script_interpreter(main, policy=ctx.policy, env=env, options=options,
                                     bundle_dir=tool.bundle_dir)
        if planned is not None:
            interp, words = planned
            opened.append(interp)
            refusal = interpreter_refusal(main, interp)
            if refusal is not None:
                raise refusal
            sealed = sealed_script(main)
            run_argv0, run_args, target = words[0], [*words[1:], f"/dev/fd/{sealed}", *argv[1:]], interp
            record["interpreter"] = {"path": interp.admission.path, "trust_level":
                                     interp.admission.report.trust_level.name}
        unencodable = _unencodable([run_argv0, *run_args], env)
        if unencodable is not None:
            _write(ctx, record, "deny", [unencodable])
            return _refusal(ctx, call, "invalid_arguments", f"{call.name} was not run: {unencodable.message}",
                            [unencodable], status="invalid", decision=decision, argv=argv)
        if decision.behavior == "ask" or adm.behavior == "ask":
            assert ctx.confirm is not None  # without a person, ask was already deny
            if not ctx.confirm(call, decision):
                declined = Reason("USER_DECLINED", "the user did not confirm this call", rule="confirm",
                                  expected="confirmed", actual="declined")
                _write(ctx, record, "deny", [declined])
                return _refusal(ctx, call, "user_declined", f"{call.name} was not run: the user declined",
                                [declined], decision=decision, argv=argv)
        boundary, sandbox_mode = planned_boundary(adm, ctx.policy, None)  # refused: ExecRefused below
        _write(ctx, record, "allow")
        timeout_ms, cap = ctx.policy.bridge_call_bounds
        if adm.contract is not None and adm.contract.timeout_ms is not None:
            timeout_ms = min(timeout_ms, adm.contract.timeout_ms)  # AIP-14 timeout_ms: a hard ceiling
        handed = True
        return _Ready(call, entry, decision, argv, opened, target, run_argv0, run_args, dict(env), record,
                      timeout_ms, cap, sealed, _writes(entry), boundary=boundary, sandbox_mode=sandbox_mode)
    except ExecRefused as refused:
        if opened:
            _write(ctx, dict(opened[0].admission.audit_record, argv=argv, call=call.name), refused.behavior,
                   refused.reasons)
        return _refusal(ctx, call, "permission_denied", f"{call.name} was not run: {refused}", refused.reasons,
                        decision=decision, argv=argv)
    finally:
        if not handed:
            for o in opened:
                o.art.close()
            if sealed >= 0:
                os.close(sealed)


def _unencodable(argv: Sequence[str], env: Mapping[str, str]) -> Reason | None:
    """A word the kernel could not be handed (``os.fsencode`` fails: a lone surrogate): checked before
    the allow line is written, so the log never says a call ran that could not start. The arguments
    are checked when validated (facts/arguments.py); this catches the environment and anything else."""
    for where, words in (("argv", argv), ("environment", [w for kv in env.items() for w in kv])):
        for word in words:
            try:
                os.fsencode(word)
            except UnicodeEncodeError as err:
                return Reason("ARGUMENT_INVALID", f"the {where} holds a string that cannot be encoded "
                              f"({word[err.start]!r} at {err.start}); no process can be given it",
                              expected="encodable text", actual=ascii(word[:80]))
    return None


def _complete_lines(data: bytes) -> bytes:
    """Output cut by the byte cap or the deadline ends inside a line, which may hold the first bytes of
    a secret that no pattern recognises any more (``AKIA`` and 8 of its 16 characters): only whole
    lines are shown."""
    return data[:data.rfind(b"\n") + 1]


def _ran(ctx: _Ctx, call: ToolCall, entry: SurfaceCommand, decision: CallDecision, argv: list[str],
         res: RunResult) -> CallOutcome:
    meta = entry.tool.metadata
    filt = create_result_filter([meta] if isinstance(meta, (Mapping, MetadataDocument)) else [],
                                max_length=ctx.max_result_length, redact_patterns=ctx.redact_patterns)
    status: Status = "timeout" if res.timed_out else "ok" if res.ok else "failed"
    stdout, stderr = res.stdout, res.stderr
    if res.truncated or res.timed_out:
        stdout, stderr = _complete_lines(stdout), _complete_lines(stderr)
    result: dict[str, Any] = {"status": status, "exit_code": res.exit_code,
                              "stdout": filt.filter(stdout), "stderr": filt.filter(stderr)}
    if res.signal is not None:
        result["signal"] = res.signal
    if res.timed_out:
        result["error"] = "timeout"
        result["message"] = ("the tool did not finish within the policy's bridge.callTimeoutMs; it was "
                             "killed (an incomplete last line is not shown)")
    elif res.truncated:
        result["error"] = "output_too_large"
        result["message"] = ("the tool's output passed the policy's bridge.maxOutputBytes; it was killed "
                             "(an incomplete last line is not shown)")
    return _outcome(ctx, call.id, call.name, status, result, decision=decision, argv=tuple(argv), run=res)


__all__ = ["CallOutcome", "Confirm", "run_tool_call"]
