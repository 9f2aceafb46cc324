"""Agent pre-tool hooks: the agent's hook JSON in, its allow / ask / deny answer out.

Coding agents match command *strings* against their rules; none checks which binary a name runs or
who signed it. ``atip-trust hook AGENT`` is that check: the shell command is split into the commands
it runs (gate/shell.py, no shell involved), each program is resolved through PATH only
(``facts.artifact.which``), opened once, admitted with its command words (gate/admit.py, so
capability gates see ``repo delete``), and the most restrictive answer is given in the agent's format.

The formats (each agent's documentation, checked when this was written):

* Claude Code ``PreToolUse`` (https://code.claude.com/docs/en/hooks): stdin ``hook_event_name``,
  ``tool_name`` (``Bash``), ``tool_input.command``; stdout
  ``{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"|"ask"|"deny",
  "permissionDecisionReason": ...}}``; exit 2 blocks with stderr as the reason.
* Codex ``PreToolUse`` (https://developers.openai.com/codex/hooks): the same wire format as Claude
  Code (``tool_name`` ``Bash``, ``tool_input.command``), but only ``deny`` is acted on: ``allow`` and
  ``ask`` are rejected as unsupported and the call runs anyway (openai/codex#20756 was closed
  unmerged). So for Codex an ``ask`` is answered ``deny`` with a reason saying a person must
  approve it, and an ``allow`` prints nothing (Codex's own approval rules apply).
* Gemini CLI ``BeforeTool`` (https://geminicli.com/docs/hooks/reference): stdin ``hook_event_name``,
  ``tool_name`` (``run_shell_command``), ``tool_input.command``; stdout ``{"decision": "allow"|"deny",
  "reason": ...}`` and nothing else; exit 2 blocks with stderr as the reason. Its reference names no
  ``ask``: an ``ask`` is answered ``deny`` with the reason, as for Codex.
* GitHub Copilot CLI ``preToolUse`` (https://docs.github.com/en/copilot/reference/hooks-configuration):
  stdin ``toolName`` (``bash``), ``toolArgs`` (a JSON *string* in the CLI, an object in the SDK: both
  are read); stdout ``{"permissionDecision": "allow"|"ask"|"deny", "permissionDecisionReason": ...}``.

Tools other than the shell (Read, Edit, web fetch, MCP tools) run no program from PATH: the answer
is *no opinion* (nothing for Claude Code, Codex and Copilot, ``{}`` for Gemini), so the agent's own
permission rules stay in charge of them. Fail closed: malformed JSON, a missing field, the wrong
event, a timeout or any error is a ``deny`` in the agent's format, with exit 2 where the agent
treats exit 2 as blocking (Claude Code, Codex, Gemini) and 0 for Copilot, which reads the JSON.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
TYPE_CHECKING = False  # typing's constant without importing typing at run time (README "Verdict cache")
if TYPE_CHECKING:
    import pathlib
    from typing import Any

from atip_trust._base.jsonio import parse_json
from atip_trust._base.lazy import lazy_import
from atip_trust._base.record import Record, init
from atip_trust._base.slotted import Slotted
from atip_trust.errors import AtipTrustError, MalformedInputError, UsageError
from atip_trust.facts.artifact import which_text
from atip_trust.gate.admit import write_audit
from atip_trust.gate.env import exec_environment
from atip_trust.gate.exec import (
    ExecRefused,
    Opened,
    admit_file,
    interpreter_refusal,
    script_interpreter,
)
from atip_trust.gate.shell import SimpleCommand, Unsplittable, split_commands, unwrap, visible_commands
from atip_trust.policy.model import STRICTNESS, Policy

if not TYPE_CHECKING:
    pathlib = lazy_import("pathlib")  # only for a relative program path (_locate)

AGENTS = ("claude-code", "codex", "gemini", "copilot")
#: The hook event each agent names in its input (Copilot's input names none).
EVENTS = {"claude-code": "PreToolUse", "codex": "PreToolUse", "gemini": "BeforeTool"}
#: The agents' shell tools. Codex also names its shell tools by their function name in some builds.
SHELL_TOOLS = {
    "claude-code": frozenset({"Bash"}),
    "codex": frozenset({"Bash", "shell", "local_shell", "exec_command", "container.exec"}),
    "gemini": frozenset({"run_shell_command"}),
    "copilot": frozenset({"bash", "shell", "powershell"}),
}
#: Agents whose pre-tool hook can ask its user (the others: ask becomes deny, with the reason).
CAN_ASK = frozenset({"claude-code", "copilot"})
#: Exit status that makes each agent block when the answer itself could not be produced.
ERROR_EXIT = {"claude-code": 2, "codex": 2, "gemini": 2, "copilot": 0}
STDIN_CAP = 1024 * 1024
_REASON_CHARS = 2000


class HookRequest(Record):
    """What the agent asked: its tool, and for a shell tool the command (a line, or an argv list)."""

    __slots__ = ("agent", "tool_name", "command", "cwd")
    agent: str
    tool_name: str
    command: str | list[str] | None
    cwd: str | None

    def __init__(self, agent: str, tool_name: str, command: str | list[str] | None,
                 cwd: str | None = None) -> None:
        init(self, agent, tool_name, command, cwd)


class Part(Slotted):
    """One command of the line and what admission said about it."""

    __slots__ = ("argv", "behavior", "reason")
    argv: tuple[str, ...]
    behavior: str
    reason: str

    def __init__(self, argv: tuple[str, ...], behavior: str, reason: str) -> None:
        self.argv = argv
        self.behavior = behavior
        self.reason = reason


class Verdict(Slotted):
    """The answer for the whole command line: the most restrictive of its parts."""

    __slots__ = ("behavior", "reason", "parts")
    behavior: str
    reason: str
    parts: list[Part]

    def __init__(self, behavior: str, reason: str, parts: list[Part] | None = None) -> None:
        self.behavior = behavior
        self.reason = reason
        self.parts = [] if parts is None else parts


class HookAnswer(Record):
    __slots__ = ("stdout", "stderr", "exit_code")
    stdout: str
    stderr: str
    exit_code: int

    def __init__(self, stdout: str, stderr: str, exit_code: int) -> None:
        init(self, stdout, stderr, exit_code)


def _field(obj: dict[str, Any], key: str, kind: type, where: str) -> Any:
    if key not in obj:
        raise MalformedInputError(f"the hook input has no {key!r}", path=f"$.{where}")
    value = obj[key]
    if not isinstance(value, kind):
        raise MalformedInputError(f"expected {kind.__name__} at {key!r}, actual {type(value).__name__}",
                                  path=f"$.{where}")
    return value


def parse_request(agent: str, data: bytes) -> HookRequest:
    """The agent's hook input, checked: any missing or mistyped field is an error (a denial)."""
    if agent not in AGENTS:
        raise UsageError(f"unknown agent {agent!r}: expected one of {', '.join(AGENTS)}")
    doc = parse_json(data, what="hook input")
    if not isinstance(doc, dict):
        raise MalformedInputError(f"expected a JSON object, actual {type(doc).__name__}", path="$")
    event = EVENTS.get(agent)
    if event is not None and "hook_event_name" in doc and doc["hook_event_name"] != event:
        raise MalformedInputError(f"expected hook event {event!r}, actual {doc['hook_event_name']!r}: "
                                  f"install this hook for {event} only", path="$.hook_event_name")
    cwd = doc.get("cwd") if isinstance(doc.get("cwd"), str) else None
    if agent == "copilot":
        tool = _field(doc, "toolName", str, "toolName")
        if tool not in SHELL_TOOLS[agent]:
            return HookRequest(agent, tool, None, cwd)
        args = doc.get("toolArgs")
        if isinstance(args, str):
            args = parse_json(args.encode("utf-8", "surrogatepass"), what="toolArgs")
        if not isinstance(args, dict):
            raise MalformedInputError("expected toolArgs to be an object (or its JSON text)", path="$.toolArgs")
        command = _field(args, "command", str, "toolArgs.command")
        return HookRequest(agent, tool, command, cwd)
    tool = _field(doc, "tool_name", str, "tool_name")
    if tool not in SHELL_TOOLS[agent]:
        return HookRequest(agent, tool, None, cwd)
    tool_input = _field(doc, "tool_input", dict, "tool_input")
    command = tool_input.get("command")
    if isinstance(command, list) and command and all(isinstance(w, str) for w in command):
        return HookRequest(agent, tool, list(command), cwd)  # an argv (Codex's shell tool)
    if not isinstance(command, str):
        raise MalformedInputError("expected a string at tool_input.command", path="$.tool_input.command")
    return HookRequest(agent, tool, command, cwd)


def _commands(request: HookRequest) -> list[SimpleCommand]:
    if request.tool_name == "powershell":
        raise Unsplittable("PowerShell commands are not split by POSIX shell rules")
    if isinstance(request.command, list):
        argv = tuple(request.command)
        return [SimpleCommand(argv), *unwrap(argv)]
    return split_commands(request.command or "")


def _locate(argv0: str, cwd: str | None, moved: bool, path_env: str | None) -> str:
    if "/" not in argv0:
        return which_text(argv0, path_env)
    if os.path.isabs(argv0):
        return argv0
    if moved:
        raise Unsplittable(f"{argv0!r} is relative to a directory an earlier 'cd' changed")
    if cwd is None or not os.path.isabs(cwd):
        raise Unsplittable(f"{argv0!r} is relative and the hook input names no absolute cwd")
    return str(pathlib.Path(cwd) / argv0)  # as pathlib joins it; pathlib only for such a name


def _script_refusal(opened: Opened, policy: Policy, **admit_args: Any) -> ExecRefused | None:
    """A ``#!`` program runs its interpreter too: refused under ``exec.scripts: deny``, otherwise the
    interpreter is admitted as ``exec`` would (gate/exec.py), its own audit line written."""
    try:
        planned = script_interpreter(opened, policy=policy, env=exec_environment(policy), interactive=True,
                                     **admit_args)
    except ExecRefused as refused:
        return refused
    if planned is None:
        return None
    interp = planned[0]
    try:
        if admit_args.get("audit", True):
            write_audit(interp.admission)
        return interpreter_refusal(opened, interp)
    finally:
        interp.art.close()


#: How many programs of an unsplittable line are still admitted (each is one admission).
MAX_VISIBLE = 16


def _admit_all(commands: list[SimpleCommand], request: HookRequest, policy: Policy, path_env: str | None,
               admit_args: dict[str, Any]) -> list[Part]:
    """One ``Part`` per program of ``commands`` (builtins skipped), each admitted with its words."""
    bundle_dir, shim_dir = admit_args["bundle_dir"], admit_args["shim_dir"]
    trusted_root, staging = admit_args["trusted_root"], admit_args["staging"]
    audit, audit_log, cache = admit_args["audit"], admit_args["audit_log"], admit_args["cache"]
    parts: list[Part] = []
    moved = False
    for cmd in commands:
        if cmd.builtin:
            moved = moved or cmd.argv[0] in ("cd", "pushd", "popd")
            continue
        line = " ".join(cmd.argv)
        try:
            found = _locate(cmd.argv[0], request.cwd, moved, path_env)
            opened = admit_file(found, policy=policy, name=os.path.basename(cmd.argv[0]),
                                command=cmd.argv[1:], bundle_dir=bundle_dir, shim_dir=shim_dir,
                                trusted_root=trusted_root, staging=staging, interactive=True,
                                audit=audit, audit_log=audit_log, cache=cache)
        except Unsplittable as why:
            parts.append(Part(cmd.argv, "ask", f"{line}: {why}"))
            continue
        except AtipTrustError as err:
            parts.append(Part(cmd.argv, "deny", f"{line}: cannot be verified: {err.diagnostics()}"))
            continue
        adm = opened.admission
        try:
            if audit:
                write_audit(adm)
            refused = _script_refusal(opened, policy, bundle_dir=bundle_dir, shim_dir=shim_dir,
                                      trusted_root=trusted_root, staging=staging, audit=audit,
                                      audit_log=audit_log, cache=cache) \
                if adm.behavior == "allow" else None
        except ExecRefused as err:
            refused = err
        except AtipTrustError as err:
            parts.append(Part(cmd.argv, "deny", f"{line}: cannot be verified: {err.diagnostics()}"))
            continue
        finally:
            opened.art.close()
        if refused is not None:
            parts.append(Part(cmd.argv, refused.behavior, f"{line}: {refused}"))
            continue
        level = adm.report.trust_level.name
        signer = adm.report.signature.identity
        if adm.behavior == "allow":
            who = f", signed by {signer}" if signer else ""
            parts.append(Part(cmd.argv, "allow", f"{line}: allowed ({level}{who})"))
        else:
            why_text = "; ".join(f"{r.code}: {r.message}" for r in adm.decision.reasons[:3])
            parts.append(Part(cmd.argv, adm.behavior, f"{line}: {adm.behavior} ({level}): {why_text}"))
    return parts


def decide_command(
    request: HookRequest,
    *,
    policy: Policy,
    bundle_dir: str | None = None,
    shim_dir: str | None = None,
    trusted_root: str | None = None,
    staging: bool = False,
    audit: bool = True,
    audit_log: str | None = None,
    cache: bool = True,
    path_env: str | None = None,
) -> Verdict | None:
    """The verdict for a shell command, or None (no opinion) for another tool or a line of shell
    builtins only. Each program's admission writes its own audit line."""
    if request.command is None:
        return None
    admit_args: dict[str, Any] = dict(bundle_dir=bundle_dir, shim_dir=shim_dir, trusted_root=trusted_root,
                                      staging=staging, audit=audit, audit_log=audit_log, cache=cache)
    try:
        commands = _commands(request)
    except Unsplittable as why:
        question = f"atip-trust cannot split this command safely ({why}); review it yourself"
        # What the text plainly names is still admitted: a program the policy denies keeps the
        # line denied, whatever unreadable part is appended to it (``gh repo delete x | sh``).
        visible = visible_commands(request.command) if isinstance(request.command, str) else []
        denied = [p for p in _admit_all(visible[:MAX_VISIBLE], request, policy, path_env, admit_args)
                  if p.behavior == "deny"]
        if denied:
            return Verdict("deny", "atip-trust: " + " | ".join(p.reason for p in denied) + " | " + question,
                           denied)
        return Verdict("ask", question)
    parts = _admit_all(commands, request, policy, path_env, admit_args)
    if not parts:
        return None
    worst = max(parts, key=lambda p: STRICTNESS[p.behavior]).behavior
    shown = [p.reason for p in parts if p.behavior == worst] if worst != "allow" else [p.reason for p in parts]
    return Verdict(worst, "atip-trust: " + " | ".join(shown), parts)


def _short(text: str) -> str:
    return text if len(text) <= _REASON_CHARS else text[:_REASON_CHARS - 1] + "…"


def render(agent: str, verdict: Verdict | None) -> HookAnswer:
    """The answer in ``agent``'s format (module docstring)."""
    if verdict is None:
        return HookAnswer("{}\n" if agent == "gemini" else "", "", 0)
    behavior, reason = verdict.behavior, _short(verdict.reason)
    if behavior == "ask" and agent not in CAN_ASK:
        behavior = "deny"
        reason = _short(f"{reason} (needs a person's approval, which this agent's hook cannot ask for: "
                        "run it yourself or add a policy rule)")
    if agent in ("claude-code", "codex"):
        if agent == "codex" and behavior == "allow":
            return HookAnswer("", "", 0)  # Codex acts on deny only: its own approval flow applies
        out: dict[str, Any] = {"hookSpecificOutput": {
            "hookEventName": "PreToolUse", "permissionDecision": behavior,
            "permissionDecisionReason": reason}}
    elif agent == "gemini":
        out = {"decision": behavior, "reason": reason}
    else:
        out = {"permissionDecision": behavior, "permissionDecisionReason": reason}
    return HookAnswer(json.dumps(out, ensure_ascii=False) + "\n", "", 0)


def render_error(agent: str, message: str) -> HookAnswer:
    """A denial for a hook that could not decide: the agent's deny JSON on stdout, the reason on
    stderr, and the exit status the agent treats as blocking."""
    reason = _short(f"atip-trust hook failed, so the call is denied: {message}")
    answer = render(agent if agent in AGENTS else "claude-code", Verdict("deny", reason))
    return HookAnswer(answer.stdout, reason + "\n", ERROR_EXIT.get(agent, 2))


def answer(agent: str, data: bytes, *, policy: Policy, **options: Any) -> HookAnswer:
    """The whole hook: parse, decide, render; any error is a denial (:func:`render_error`)."""
    try:
        request = parse_request(agent, data)
        return render(agent, decide_command(request, policy=policy, **options))
    except AtipTrustError as err:
        return render_error(agent, err.diagnostics())
    except Exception as err:  # noqa: BLE001 - fail closed on anything
        return render_error(agent, f"internal error: {type(err).__name__}")


def verdict_for(agent: str, command: str | Sequence[str], *, policy: Policy, **options: Any) -> Verdict | None:
    """Library form: the verdict for one shell command as ``agent``'s shell tool would run it."""
    tool = next(iter(sorted(SHELL_TOOLS[agent])))
    cmd = command if isinstance(command, str) else list(command)
    return decide_command(HookRequest(agent, tool, cmd), policy=policy, **options)


__all__ = ["AGENTS", "HookAnswer", "HookRequest", "Verdict", "answer", "decide_command", "parse_request",
           "render", "render_error", "verdict_for"]
