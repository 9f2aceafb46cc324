"""Each agent's pre-tool hook format: its JSON in, its allow / ask / deny / no-opinion answer out.

The formats (each agent's documentation, checked when this was written):

* Claude Code ``PreToolUse`` (code.claude.com/docs/en/hooks): stdin ``hook_event_name``, ``tool_name``
  (``Bash``), ``tool_input.command``; stdout ``{"hookSpecificOutput": {"hookEventName": "PreToolUse",
  "permissionDecision": "allow"|"ask"|"deny", "permissionDecisionReason": ..., "updatedInput": ...}}``;
  exit 2 blocks with stderr as the reason. No output is no opinion: Claude Code's own permission
  rules decide (and ask by default).
* Codex ``PreToolUse`` (developers.openai.com/codex/hooks): Claude Code's wire format. Codex acts on
  ``deny``; ``allow`` only together with ``updatedInput`` (openai/codex#20527 applies the rewrite;
  #20756, a plain allow and ask, was closed unmerged). So an ``ask`` is answered ``deny`` with a reason
  saying a person must approve it, and an ``allow`` without ``--pin`` prints nothing.
* Gemini CLI ``BeforeTool`` (geminicli.com/docs/hooks/reference): stdin ``tool_name``
  (``run_shell_command``), ``tool_input.command``; stdout ``{"decision": "allow"|"deny", "reason": ...}``;
  its reference names no ``ask``: an ``ask`` is answered ``deny``. No opinion is ``{}``.
* GitHub Copilot CLI ``preToolUse`` (docs.github.com .../hooks-configuration): stdin ``toolName``
  (``bash``), ``toolArgs`` (a JSON *string* in the CLI, an object in the SDK); the VS Code-compatible
  shape (``tool_name`` such as ``run_in_terminal``, ``tool_input``; code.visualstudio.com
  .../hooks-reference) is read too. Stdout ``{"permissionDecision": ..., "permissionDecisionReason":
  ...}`` with the same answer under ``hookSpecificOutput``, where VS Code reads it.
* Cursor ``beforeShellExecution`` (cursor.com/docs/agent/hooks): stdin ``command``, ``cwd``; stdout
  ``{"permission": "allow"|"deny"|"ask", "user_message": ..., "agent_message": ...}``. No opinion is
  ``{}``.

Tools other than the shell get no opinion. Malformed input is a :class:`MalformedInputError`.
"""

from __future__ import annotations

import json
from typing import Any

from atip_trust._base.jsonio import parse_json
from atip_trust._base.record import Record
from atip_trust.errors import MalformedInputError, UsageError

AGENTS = ("claude-code", "codex", "gemini", "copilot", "cursor")
#: The hook event each agent names in its input, when it names one (Copilot's CLI input does not).
EVENTS = {"claude-code": "PreToolUse", "codex": "PreToolUse", "gemini": "BeforeTool",
          "cursor": "beforeShellExecution", "copilot": "preToolUse"}
#: The agents' shell tools. Codex also names its shell tools by their function name in some builds.
SHELL_TOOLS = {
    "claude-code": frozenset({"Bash"}),
    "codex": frozenset({"Bash", "shell", "local_shell", "exec_command", "container.exec", "shell_command"}),
    "gemini": frozenset({"run_shell_command"}),
    # The CLI names ``bash``/``powershell``; VS Code's agent (the same hooks file) names its terminal tool
    # ``run_in_terminal`` (``runInTerminal`` in some builds) and, for a Claude-compatible hook file, ``Bash``.
    "copilot": frozenset({"bash", "shell", "powershell", "run_in_terminal", "runInTerminal", "Bash"}),
    "cursor": frozenset({"Shell"}),
}
#: Agents whose pre-tool hook can ask its user (the others: ask becomes deny, with the reason).
CAN_ASK = frozenset({"claude-code", "copilot", "cursor"})
#: Agents whose hook may rewrite the command it allows (``--pin``).
CAN_REWRITE = frozenset({"claude-code", "codex"})
#: Exit status that makes each agent block when the answer itself could not be produced.
ERROR_EXIT = {"claude-code": 2, "codex": 2, "gemini": 2, "copilot": 0, "cursor": 0}
STDIN_CAP = 1024 * 1024
_REASON_CHARS = 2000
#: The line's answer, strictest first: a program with no opinion never hides a denial or a question.
ORDER = {"allow": 0, "passthrough": 1, "ask": 2, "deny": 3}


class HookRequest(Record):
    """What the agent asked: its tool, and for a shell tool the command (a line, or an argv list)."""

    agent: str
    tool_name: str
    command: str | list[str] | None
    cwd: str | None = None


class HookAnswer(Record):
    stdout: str
    stderr: str
    exit_code: int


def _field(obj: dict[str, Any], key: str, kind: type, where: str) -> Any:
    if key not in obj:
        raise MalformedInputError(f"the hook input has no {key!r}", path=f"$.{where}")
    value = obj[key]
    if not isinstance(value, kind):
        raise MalformedInputError(f"expected {kind.__name__} at {key!r}, actual {type(value).__name__}",
                                  path=f"$.{where}")
    return value


def _tool_input(agent: str, doc: dict[str, Any], cwd: str | None, names: tuple[str, str]) -> HookRequest:
    """``tool_name`` + ``tool_input.command`` (Claude Code, Codex, Gemini, Copilot's VS Code shape)."""
    tool = _field(doc, names[0], str, names[0])
    if tool not in SHELL_TOOLS[agent]:
        return HookRequest(agent, tool, None, cwd)
    tool_input = doc.get(names[1])
    if isinstance(tool_input, str):
        tool_input = parse_json(tool_input.encode("utf-8", "surrogatepass"), what=names[1])
    if not isinstance(tool_input, dict):
        raise MalformedInputError(f"expected {names[1]} to be an object (or its JSON text)", path=f"$.{names[1]}")
    command = tool_input.get("command")
    if isinstance(command, list) and command and all(isinstance(w, str) for w in command):
        return HookRequest(agent, tool, list(command), cwd)  # an argv (Codex's shell tool)
    if not isinstance(command, str):
        raise MalformedInputError(f"expected a string at {names[1]}.command", path=f"$.{names[1]}.command")
    return HookRequest(agent, tool, command, cwd)


def parse_request(agent: str, data: bytes) -> HookRequest:
    """The agent's hook input, checked: any missing or mistyped field is an error (a denial)."""
    if agent not in AGENTS:
        raise UsageError(f"unknown agent {agent!r}: expected one of {', '.join(AGENTS)}")
    doc = parse_json(data, what="hook input")
    if not isinstance(doc, dict):
        raise MalformedInputError(f"expected a JSON object, actual {type(doc).__name__}", path="$")
    event = EVENTS.get(agent)
    if event is not None and "hook_event_name" in doc and doc["hook_event_name"] != event and not (
            agent == "copilot" and doc["hook_event_name"] in ("PreToolUse", "preToolUse")):
        raise MalformedInputError(f"expected hook event {event!r}, actual {doc['hook_event_name']!r}: "
                                  f"install this hook for {event} only", path="$.hook_event_name")
    cwd = doc.get("cwd") if isinstance(doc.get("cwd"), str) else None
    if agent == "cursor":
        return HookRequest(agent, "Shell", _field(doc, "command", str, "command"), cwd)
    if agent == "copilot" and "toolName" in doc:
        return _tool_input(agent, doc, cwd, ("toolName", "toolArgs"))
    return _tool_input(agent, doc, cwd, ("tool_name", "tool_input"))


def _short(text: str) -> str:
    return text if len(text) <= _REASON_CHARS else text[:_REASON_CHARS - 1] + "…"


def render(agent: str, behavior: str | None, reason: str = "", rewritten: str | None = None) -> HookAnswer:
    """The answer in ``agent``'s format (module docstring); ``None`` or ``passthrough``: no opinion."""
    if behavior is None or behavior == "passthrough":
        return HookAnswer("{}\n" if agent in ("gemini", "cursor") else "", "", 0)
    reason = _short(reason)
    if behavior == "ask" and agent not in CAN_ASK:
        behavior = "deny"
        reason = _short(f"{reason} (needs a person's approval, which this agent's hook cannot ask for: "
                        "run it yourself or add a policy rule)")
    if agent in ("claude-code", "codex"):
        if agent == "codex" and behavior == "allow" and rewritten is None:
            return HookAnswer("", "", 0)  # Codex takes allow only with updatedInput: its own rules apply
        spec: dict[str, Any] = {"hookEventName": "PreToolUse", "permissionDecision": behavior,
                                "permissionDecisionReason": reason}
        if rewritten is not None and behavior == "allow":
            spec["updatedInput"] = {"command": rewritten}
        out: dict[str, Any] = {"hookSpecificOutput": spec}
    elif agent == "gemini":
        out = {"decision": behavior, "reason": reason}
    elif agent == "cursor":
        out = {"permission": behavior, "user_message": reason, "agent_message": reason}
    else:
        out = {"permissionDecision": behavior, "permissionDecisionReason": reason,
               "hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": behavior,
                                      "permissionDecisionReason": reason}}
    return HookAnswer(json.dumps(out, ensure_ascii=False) + "\n", "", 0)


def render_error(agent: str, message: str) -> HookAnswer:
    """A denial for a hook that could not decide: the agent's deny JSON on stdout, the reason on
    stderr, and the exit status the agent treats as blocking."""
    reason = _short(f"atip-trust hook failed, so the call is denied: {message}")
    answer = render(agent if agent in AGENTS else "claude-code", "deny", reason)
    return HookAnswer(answer.stdout, reason + "\n", ERROR_EXIT.get(agent, 2))


__all__ = ["AGENTS", "CAN_ASK", "CAN_REWRITE", "ERROR_EXIT", "EVENTS", "HookAnswer", "HookRequest", "ORDER",
           "SHELL_TOOLS", "STDIN_CAP", "parse_request", "render", "render_error"]
