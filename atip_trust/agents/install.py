"""``atip-trust hook install AGENT``: write the agent's hook settings so that a hook that cannot run blocks.

Why a plain ``atip-trust hook AGENT`` line is not enough: every agent runs its hook command through a
shell, and a program the shell cannot find exits 127 (a crash: some other code, a killed process: a
signal). Claude Code, Codex and Gemini CLI block only on exit 2 and treat any other failure as a
non-blocking error; Copilot CLI and Cursor act on the JSON answer and let the call through on a missing
or unreadable one. So the installed command is a small ``/bin/sh`` wrapper around the installed program,
named by its absolute path (an agent's PATH is not the user's)::

    /bin/sh -c 'out=$("$0" "$@"); rc=$?; if <the program answered>; then <its answer, unchanged>; fi;
                <the agent's own deny answer, as agents/formats.py renders_error>' /abs/atip-trust hook AGENT …

* The program's answer passes through byte for byte when it ran and answered: exit 0 (allow, ask,
  deny or no opinion in the agent's format) or, for the agents that block on exit 2, its own exit-2
  denial. Gemini's and Cursor's no-opinion answer is ``{}``, never empty, so an empty exit 0 there is
  not an answer either.
* Anything else — exit 127 (not found), 126 (not executable), a crash, a signal — prints the agent's
  deny answer (``formats.render_error``: JSON on stdout, the reason on stderr, the agent's blocking
  exit status), so the call is blocked with a reason.
* Where the agent offers a setting that blocks on a failed hook, it is written too: Claude Code's
  ``onFailure: "block"`` (2.1.295 and later; older versions ignore it) and Cursor's ``failClosed: true``.
  They also cover what the wrapper cannot: the agent's own timeout killing the hook.

Each agent's settings are one row of ``SETTINGS``; Claude Code's ``http`` hook form (a POST to a running
``atip-trust serve``, docs/serve.md) is the same row with the entry's shape from ``http_settings``: a
loopback URL, the bearer token from an environment variable the agent may expand (``allowedEnvVars``),
and ``onFailure: "block"`` (a service that is down, or slow, blocks the call). One agent has one
atip-trust hook: installing either form replaces the other. Files are merged, never overwritten: other settings and other hooks stay,
an earlier atip-trust hook entry for the same agent (the README's bare ``atip-trust hook AGENT``) is
replaced, a changed file is first copied to ``FILE.atip-trust-<UTC time>.bak``, and installing twice
changes nothing. ``uninstall`` removes only atip-trust's entries (and a file left with nothing else).
Codex's ``config.toml`` gets a marked block of its own (TOML has no writer in the standard library),
checked with ``tomllib`` before anything is written.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import time
import tomllib
from typing import Any
from urllib.parse import urlsplit

from atip_trust._base.files import exists, read_capped, write_atomic
from atip_trust._base.record import Record, field, replace
from atip_trust.agents.formats import AGENTS, ERROR_EXIT, render, render_error
from atip_trust.errors import EnvironmentFailure, UsageError
from atip_trust.net.fetch import is_loopback  # install and doctor only: never on the hook's path

#: The shell every wrapper runs in: a POSIX shell at a path that does not depend on PATH.
SHELL = "/bin/sh"
#: The reason the agent shows when the hook program did not answer.
NO_ANSWER = "the hook program did not answer (not found, not executable, or it crashed)"
_SETTINGS_CAP = 4 * 1024 * 1024


class AgentSettings(Record):
    """Where one agent keeps its hooks and what a fail-closed atip-trust entry looks like there."""

    agent: str
    #: The settings file under the home folder (user scope) and under the project folder.
    user: str
    project: str
    #: ``json``, or ``toml`` (Codex's config.toml).
    form: str
    #: The hook event, under the top-level ``hooks`` key.
    event: str
    #: The tool matcher of a ``{"matcher": …, "hooks": [entry]}`` group; None: entries sit in the event's list.
    matcher: str | None
    #: The entry's key for the shell command.
    command_key: str
    #: The entry's other fields, in order (the agent's fail-closed setting among them).
    extra: tuple[tuple[str, Any], ...]
    #: What a new file holds besides ``hooks``.
    skeleton: tuple[tuple[str, Any], ...] = ()
    #: The agent's own fail-closed setting, as (key, value), when it has one.
    fail_closed: tuple[str, Any] | None = None


SETTINGS: dict[str, AgentSettings] = {
    "claude-code": AgentSettings(
        "claude-code", ".claude/settings.json", ".claude/settings.json", "json", "PreToolUse", "Bash",
        "command", (("type", "command"), ("onFailure", "block")), fail_closed=("onFailure", "block")),
    "codex": AgentSettings(
        "codex", ".codex/config.toml", ".codex/config.toml", "toml", "PreToolUse", "Bash", "command",
        (("type", "command"),)),
    "gemini": AgentSettings(
        "gemini", ".gemini/settings.json", ".gemini/settings.json", "json", "BeforeTool", "run_shell_command",
        "command", (("type", "command"),)),
    "copilot": AgentSettings(
        "copilot", ".copilot/hooks/atip-trust.json", ".github/hooks/atip-trust.json", "json", "preToolUse",
        None, "bash", (("type", "command"), ("timeoutSec", 30)), (("version", 1),)),
    "cursor": AgentSettings(
        "cursor", ".cursor/hooks.json", ".cursor/hooks.json", "json", "beforeShellExecution", None, "command",
        (("failClosed", True),), (("version", 1),), fail_closed=("failClosed", True)),
}


#: Agents whose settings can post the hook to ``atip-trust serve`` instead of running a command.
HTTP_AGENTS = frozenset({"claude-code"})
DEFAULT_TOKEN_ENV = "ATIP_TRUST_TOKEN"


def service_url(url: str, agent: str) -> str:
    """``url`` as the hook's address: plain ``http://`` to a loopback host (the service serves nothing
    else, docs/serve.md), no credentials or query in it; a bare ``http://HOST:PORT`` gets the agent's
    path ``/v1/hooks/AGENT``, and another path is refused."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError as err:
        raise UsageError(f"--http {url!r}: not a URL ({err})") from err
    want = f"/v1/hooks/{agent}"
    if parts.scheme != "http" or not is_loopback(host):
        raise UsageError(f"--http expects http://127.0.0.1:PORT{want} (a loopback service), actual {url!r}")
    if parts.username is not None or parts.query or parts.fragment:
        raise UsageError(f"--http {url!r}: no credentials, query or fragment in the URL (the token goes in a "
                         "header)")
    if parts.path not in ("", "/", want):
        raise UsageError(f"--http {url!r}: expected the path {want}, actual {parts.path!r}")
    return f"http://{parts.netloc}{want}"


def http_settings(agent: str, token_env: str) -> AgentSettings:
    """``agent``'s row for the http form: the entry's ``url`` and the fields that send the token."""
    if agent not in HTTP_AGENTS:
        raise UsageError(f"--http: {agent} has no http hooks (only {', '.join(sorted(HTTP_AGENTS))})")
    if not (token_env.isascii() and token_env.replace("_", "a").isalnum() and not token_env[0].isdigit()):
        raise UsageError(f"--token-env expects an environment variable's name, actual {token_env!r}")
    return replace(SETTINGS[agent], command_key="url", extra=(
        ("type", "http"), ("headers", {"Authorization": f"Bearer ${token_env}"}),
        ("allowedEnvVars", [token_env]), ("onFailure", "block")))


def _is_http_hook(entry: Any, agent: str) -> bool:
    """``entry`` posts to atip-trust's service for ``agent`` (its URL's path is the service's)."""
    if agent not in HTTP_AGENTS or not isinstance(entry, dict) or entry.get("type") != "http":
        return False
    url = entry.get("url")
    return isinstance(url, str) and url.partition("?")[0].rstrip("/").endswith(f"/v1/hooks/{agent}")


def _is_ours(entry: Any, agent: str) -> bool:
    return isinstance(entry, dict) and (_hook_program(entry.get(SETTINGS[agent].command_key), agent) is not None
                                        or _is_http_hook(entry, agent))


def settings_path(agent: str, scope: str, project_dir: str | None = None) -> str:
    """The agent's settings file for ``scope`` (``user``: under HOME, Codex's under ``CODEX_HOME`` when
    set; ``project``: under ``project_dir``, default the current folder)."""
    row = SETTINGS[agent]
    if scope == "project":
        return os.path.join(os.path.abspath(project_dir or os.getcwd()), row.project)
    if agent == "codex" and os.environ.get("CODEX_HOME"):
        return os.path.join(os.environ["CODEX_HOME"], os.path.basename(row.user))
    return os.path.join(os.path.expanduser("~"), row.user)


def settings_paths(agent: str, project_dir: str | None = None) -> list[str]:
    """Every file the agent reads hooks from, user scope first: its two settings files, and for Copilot
    CLI every ``*.json`` in its two hooks folders (it loads them all)."""
    paths = [settings_path(agent, scope, project_dir) for scope in ("user", "project")]
    if agent == "claude-code":  # the project's own, not checked in, read after the others
        paths.append(os.path.join(os.path.dirname(paths[1]), "settings.local.json"))
    if agent == "copilot":
        for folder in [os.path.dirname(p) for p in paths]:
            try:
                paths += sorted(os.path.join(folder, n) for n in os.listdir(folder) if n.endswith(".json"))
            except OSError:
                pass
    return list(dict.fromkeys(paths))


def _dq(text: str) -> str:
    """``text`` inside a double-quoted sh word (the wrapper holds no single quote, so it can sit in one)."""
    return "".join("\\" + c if c in '"$`\\' else c for c in text)


def wrapper_script(agent: str) -> str:
    """The ``sh -c`` script of ``agent``'s hook (module docstring); ``$0`` is the program, ``$@`` its words."""
    deny = render_error(agent, NO_ANSWER)
    answered = '[ "$rc" = 0 ]' + ('' if render(agent, None).stdout == "" else ' && [ -n "$out" ]')
    if ERROR_EXIT[agent] != 0:  # the program's own blocking denial is an answer too
        answered = f'{{ {answered}; }} || [ "$rc" = {ERROR_EXIT[agent]} ]'
    # The agents that block on an exit status ignore standard output then (Claude Code, Codex, Gemini):
    # the reason goes to standard error alone; the others read the deny JSON on standard output.
    say = "" if deny.exit_code else f'printf "%s\\n" "{_dq(deny.stdout.strip())}"; '
    return (f'out=$("$0" "$@"); rc=$?; if {answered}; then [ -z "$out" ] || printf "%s\\n" "$out"; exit "$rc"; fi; '
            f'{say}echo "{_dq(deny.stderr.strip())} (exit $rc)" >&2; exit {deny.exit_code}')


def hook_command(agent: str, program: list[str], hook_args: list[str]) -> str:
    """The shell command an agent runs: the wrapper around ``program hook AGENT hook_args``."""
    script = wrapper_script(agent)
    assert "'" not in script  # shlex.quote then keeps it one readable '…' word
    return shlex.join([SHELL, "-c", script, *program, "hook", agent, *hook_args])


class HookEntry(Record):
    """An atip-trust hook found in an agent's settings, judged (``atip-trust doctor``)."""

    agent: str
    path: str
    command: str
    #: The program the command starts (absolute or not), and whether it is there and executable.
    program: str
    #: Problems that leave calls unguarded, in words; empty: the entry is fail-closed.
    problems: tuple[str, ...] = ()
    #: ``command`` (the program runs), or ``http`` (the agent posts to ``atip-trust serve`` at ``command``).
    kind: str = "command"

    @property
    def fail_closed(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        return {"agent": self.agent, "settings": self.path, "command": self.command, "program": self.program,
                "fail_closed": self.fail_closed, "problems": list(self.problems), "kind": self.kind}


def _words(command: Any) -> list[str] | None:
    if not isinstance(command, str):
        return None
    try:
        return shlex.split(command)
    except ValueError:
        return None


def _hook_program(command: Any, agent: str) -> tuple[list[str], bool] | None:
    """When ``command`` runs ``atip-trust hook AGENT`` (bare or wrapped): the words that start the program
    (``…/atip-trust``, or ``python -m atip_trust``) and whether it is this module's wrapper for ``agent``."""
    words = _words(command)
    if not words:
        return None
    wrapped = words[:3] == [SHELL, "-c", wrapper_script(agent)]
    if words[:2] == [SHELL, "-c"] and len(words) > 3:
        words = words[3:]
    # The wrapper's program may be named anything (``--executable``); a bare command must say atip-trust.
    start = 3 if words[1:3] == ["-m", "atip_trust"] else 1 if wrapped or os.path.basename(words[0]) == "atip-trust" else 0
    if not start or words[start:start + 2] != ["hook", agent]:
        return None
    return words[:start], wrapped


def _grouped(doc: Any, row: AgentSettings) -> list[tuple[dict[str, Any], dict[str, Any] | None]]:
    """Every hook entry (a dict with the command key) under the agent's event, with the matcher group
    it sits in (None: it sits in the event's list itself)."""
    hooks = doc.get("hooks") if isinstance(doc, dict) else None
    items = hooks.get(row.event) if isinstance(hooks, dict) else None
    found: list[tuple[dict[str, Any], dict[str, Any] | None]] = []
    for item in items if isinstance(items, list) else ():
        if isinstance(item, dict) and (row.command_key in item or _is_http_hook(item, row.agent)):
            found.append((item, None))
        for inner in item.get("hooks", ()) if isinstance(item, dict) and isinstance(item.get("hooks"), list) else ():
            if isinstance(inner, dict) and (row.command_key in inner or _is_http_hook(inner, row.agent)):
                found.append((inner, item))
    return found


def _entries(doc: Any, row: AgentSettings) -> list[dict[str, Any]]:
    """Every hook entry (a dict with the command key) under the agent's event, groups unpacked."""
    return [entry for entry, _ in _grouped(doc, row)]


def _runs_for_shell(row: AgentSettings, group: dict[str, Any] | None) -> str | None:
    """Why the agent never runs an entry of ``group`` for its shell tool (None: it does). The agent
    matches a group's ``matcher`` against the tool's name: absent, empty and ``*`` match every tool,
    anything else must match the whole name (a regular expression: ``Bash|Edit``); an entry outside a
    group is not run by the agents that group their hooks."""
    if row.matcher is None:
        return None
    if group is None:
        return f"the entry is not inside a {{\"matcher\": \"{row.matcher}\", \"hooks\": [...]}} group: never run"
    matcher = group.get("matcher")
    if matcher is None or matcher in ("", "*"):
        return None
    try:
        if isinstance(matcher, str) and re.fullmatch(matcher, row.matcher):
            return None
    except re.error:
        pass
    return f"its group's matcher {json.dumps(matcher)} does not match the {row.matcher} tool: shell lines run unhooked"


def judge(agent: str, path: str, entry: dict[str, Any],
          group: dict[str, Any] | None | bool = False) -> HookEntry | None:
    """``entry`` as a guard: None when it does not run atip-trust's hook for ``agent``. ``group``: the
    matcher group it sits in (None: none; False: not known, not judged)."""
    row = SETTINGS[agent]
    if _is_http_hook(entry, agent):
        return _judge_http(agent, path, entry, group)
    command = entry.get(row.command_key)
    found = _hook_program(command, agent)
    if found is None:
        return None
    program, wrapped = found
    problems = []
    if not wrapped:
        problems.append("a hook that cannot start (exit 127) or crashes lets the call through: not the "
                        "fail-closed form `atip-trust hook install` writes")
    if not os.path.isabs(program[0]):
        problems.append(f"{program[0]} is found through the agent's PATH, not named by an absolute path")
    elif not os.access(program[0], os.X_OK) or not os.path.isfile(program[0]):
        problems.append(f"{program[0]} is missing or not executable: every call is "
                        f"{'blocked' if wrapped else 'let through'}")
    unmatched = None if isinstance(group, bool) else _runs_for_shell(row, group)
    if unmatched is not None:
        problems.append(unmatched)
    if row.fail_closed is not None and entry.get(row.fail_closed[0]) != row.fail_closed[1]:
        problems.append(f"no {row.fail_closed[0]}: {json.dumps(row.fail_closed[1])} (the agent's own timeout "
                        "lets the call through)")
    return HookEntry(agent, path, str(command), " ".join(program), tuple(problems))


def _judge_http(agent: str, path: str, entry: dict[str, Any], group: dict[str, Any] | None | bool) -> HookEntry:
    """An http hook to the service: the URL loopback, ``onFailure: "block"``, and the bearer token taken
    from a variable the agent may expand (else it sends the literal ``$VAR``: every request 401, which
    the service answers with a denial, so every line is blocked)."""
    url = str(entry.get("url"))
    problems = []
    try:
        loopback = urlsplit(url).scheme == "http" and is_loopback(urlsplit(url).hostname or "")
    except ValueError:
        loopback = False
    if not loopback:
        problems.append(f"the URL {url} is not http:// on a loopback host: the service serves loopback only")
    if entry.get("onFailure") != "block":
        problems.append('no onFailure: "block" (a service that is down or slow lets every call through)')
    headers = entry.get("headers")
    auth = headers.get("Authorization") if isinstance(headers, dict) else None
    allowed = entry.get("allowedEnvVars")
    names: list[Any] = allowed if isinstance(allowed, list) else []
    var = auth[len("Bearer $"):].strip("{}") if isinstance(auth, str) and auth.startswith("Bearer $") else None
    if var is None:
        problems.append("no Authorization: Bearer $VARIABLE header: the service answers every request with a denial")
    elif var not in names:
        problems.append(f"{var} is not in allowedEnvVars: the agent sends the literal ${var}, and every call is denied")
    unmatched = None if isinstance(group, bool) else _runs_for_shell(SETTINGS[agent], group)
    if unmatched is not None:
        problems.append(unmatched)
    return HookEntry(agent, path, url, url, tuple(problems), kind="http")


def _new_entry(row: AgentSettings, command: str) -> dict[str, Any]:
    entry: dict[str, Any] = {k: v for k, v in row.extra if k == "type"}
    entry[row.command_key] = command
    entry.update((k, v) for k, v in row.extra if k != "type")
    return entry


def _without_ours(doc: dict[str, Any], row: AgentSettings) -> dict[str, Any]:
    """``doc`` without atip-trust's hook entries for the agent (groups they leave empty go too)."""
    out: dict[str, Any] = json.loads(json.dumps(doc))
    hooks = out.get("hooks")
    if not isinstance(hooks, dict) or not isinstance(hooks.get(row.event), list):
        return out
    kept = []
    for item in hooks[row.event]:
        if _is_ours(item, row.agent):
            continue
        if isinstance(item, dict) and isinstance(item.get("hooks"), list):
            inner = [h for h in item["hooks"] if not _is_ours(h, row.agent)]
            if not inner and item["hooks"]:
                continue
            item = {**item, "hooks": inner}
        kept.append(item)
    if kept:
        hooks[row.event] = kept
    else:
        del hooks[row.event]
        if not hooks:
            del out["hooks"]
    return out


def _with_ours(doc: dict[str, Any], row: AgentSettings, command: str) -> dict[str, Any]:
    out = _without_ours(doc, row)
    for key, value in row.skeleton:
        out.setdefault(key, value)
    hooks = out.setdefault("hooks", {})
    if not isinstance(hooks, dict) or not isinstance(hooks.setdefault(row.event, []), list):
        raise UsageError(f"the settings' hooks.{row.event} is not a list of hooks: fix the file first",
                         path=f"$.hooks.{row.event}")
    entry = _new_entry(row, command)
    hooks[row.event].append(entry if row.matcher is None else {"matcher": row.matcher, "hooks": [entry]})
    return out


# Codex's config.toml: a block of its own between these lines.
_BEGIN = "# BEGIN atip-trust hook codex (written by `atip-trust hook install codex`; --uninstall removes it)"
_END = "# END atip-trust hook codex"


def _toml_without_ours(text: str) -> str:
    lines, out, inside = text.splitlines(keepends=True), [], False
    for line in lines:
        if line.rstrip("\n") == _BEGIN:
            inside = True
        elif inside and line.rstrip("\n") == _END:
            inside = False
        elif not inside:
            out.append(line)
    return "".join(out).rstrip("\n") + "\n" if "".join(out).strip() else ""


def _toml_block(row: AgentSettings, command: str) -> str:
    entry = "".join(f"{k} = {json.dumps(v, ensure_ascii=False)}\n" for k, v in _new_entry(row, command).items())
    return (f"{_BEGIN}\n[[hooks.{row.event}]]\nmatcher = {json.dumps(row.matcher)}\n\n"
            f"[[hooks.{row.event}.hooks]]\n{entry}{_END}\n")


def _parse(text: str, row: AgentSettings, path: str) -> dict[str, Any]:
    """The settings document (``{}`` for an empty file); a file that does not parse is left alone."""
    if not text.strip():
        return {}
    try:
        doc = tomllib.loads(text) if row.form == "toml" else json.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as err:
        raise UsageError(f"{path} is not valid {row.form.upper()} ({err}): fix it first; nothing was written",
                         path=path) from err
    if not isinstance(doc, dict):
        raise UsageError(f"{path} holds a {type(doc).__name__}, expected an object of settings", path=path)
    return doc


class InstallResult(Record):
    """What ``install`` or ``uninstall`` did (or, with ``write=False``, would do) to one settings file."""

    agent: str
    path: str
    #: ``installed``, ``unchanged``, ``removed``, ``absent`` (nothing of ours to remove).
    action: str
    content: str
    command: str | None = None
    backup: str | None = None
    written: bool = False
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"agent": self.agent, "settings": self.path, "action": self.action, "command": self.command,
                "backup": self.backup, "written": self.written, "warnings": self.warnings}


def read_settings(path: str) -> str | None:
    """The settings file's text (None: there is none); read through a link, as the agent reads it."""
    if not exists(path, what="agent settings file", error=EnvironmentFailure):
        return None
    return read_capped(path, _SETTINGS_CAP, what="agent settings file").decode("utf-8", "surrogateescape")


def hooks_disabled(agent: str, path: str) -> bool:
    """``path`` turns every hook of the agent off (Claude Code's ``disableAllHooks: true``, in any of its
    settings files); a file that cannot be read is reported by ``find_hooks``."""
    if agent != "claude-code":
        return False
    try:
        text = read_settings(path)
        doc = _parse(text, SETTINGS[agent], path) if text is not None else {}
    except (UsageError, EnvironmentFailure):
        return False
    return doc.get("disableAllHooks") is True


def find_hooks(agent: str, path: str) -> list[HookEntry]:
    """The atip-trust hooks ``path`` holds for ``agent``, judged; a file that does not parse holds none
    (``doctor`` says so)."""
    text = read_settings(path)
    if text is None:
        return []
    doc = _parse(text, SETTINGS[agent], path)
    return [e for entry, group in _grouped(doc, SETTINGS[agent])
            if (e := judge(agent, path, entry, group)) is not None]


def _render(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def _planned(agent: str, path: str, command: str | None, row: AgentSettings) -> tuple[str | None, str]:
    """(the file's current text or None, the text it should hold; "" for a file to remove)."""
    text = read_settings(path)
    if command is None and text is None:
        return None, ""
    doc = _parse(text or "", row, path)
    if row.form == "toml":
        rest = _toml_without_ours(text or "")
        new = rest + ("\n" if rest else "") + _toml_block(row, command) if command is not None else rest
        doc = _parse(new, row, path)  # refuses a merge TOML cannot read (a hooks table of another shape)
        if command is not None and command not in [e.get("command") for e in _entries(doc, row)]:
            raise UsageError(f"{path}: the merged file does not hold the hook (its [hooks] table has another "
                             "shape): add the block yourself; nothing was written", path=path)
        return text, new
    new_doc = _with_ours(doc, row, command) if command is not None else _without_ours(doc, row)
    if command is None and (not new_doc or new_doc == dict(row.skeleton)) and text is not None:
        return text, ""  # nothing but what an install adds: the file goes
    if text is not None and new_doc == doc:
        return text, text
    return text, _render(new_doc)


def install(agent: str, path: str, command: str | None, *, write: bool = True,
            row: AgentSettings | None = None) -> InstallResult:
    """Merge (``command``) or remove (None) atip-trust's hook for ``agent`` in the settings file ``path``;
    ``row``: the entry's shape (default the agent's command form; ``http_settings`` for the http form,
    ``command`` then being the URL)."""
    if agent not in AGENTS:
        raise UsageError(f"unknown agent {agent!r}: expected one of {', '.join(AGENTS)}")
    target = os.path.realpath(path)  # a settings file kept as a link (dotfiles) stays one
    if target != os.path.abspath(path) and not os.path.lexists(target):
        # A link to nothing would have the file (and its folders) created wherever it points.
        raise UsageError(f"{path} leads through a link to {target}, which does not exist: a settings file "
                         "is not created through a link (create the target, or remove the link)", path=path)
    old, new = _planned(agent, target, command, row or SETTINGS[agent])
    warnings = []
    if SETTINGS[agent].form == "toml" and command is not None:
        others = [e for e in _entries(_parse(new, SETTINGS[agent], path), SETTINGS[agent])
                  if e.get("command") != command and judge(agent, path, e) is not None]
        warnings += [f"{path} also runs `{e.get('command')}` outside atip-trust's block: remove it by hand "
                     "(the block's entry blocks on failure either way)" for e in others]
    changed = new != (old or "")
    action = ("installed" if changed else "unchanged") if command is not None else \
        ("removed" if changed else "absent")
    result = InstallResult(agent, path, action, new, command, None, False, warnings)
    if not write or not changed:
        return result
    try:
        backup = _backup(target, old) if old is not None else None
        if new:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            mode = os.stat(target).st_mode & 0o777 if old is not None else 0o644
            write_atomic(target, new.encode("utf-8", "surrogateescape"), mode=mode, durable=True,
                         prefix=".atip-trust-")
        else:
            os.unlink(target)
    except OSError as err:
        raise EnvironmentFailure(f"cannot write {path}: {err.strerror or err}", path=path) from err
    return InstallResult(agent, path, action, new, command, backup, True, warnings)


def _backup(target: str, old: str) -> str:
    """A copy of the file as it was, beside it; its name does not end in ``.json`` (Copilot loads every
    ``*.json`` in its hooks folder)."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    backup = f"{target}.atip-trust-{stamp}.bak"
    n = 1
    while os.path.lexists(backup):
        n += 1
        backup = f"{target}.atip-trust-{stamp}-{n}.bak"
    write_atomic(backup, old.encode("utf-8", "surrogateescape"), mode=os.stat(target).st_mode & 0o777)
    return backup


__all__ = ["DEFAULT_TOKEN_ENV", "HTTP_AGENTS", "AgentSettings", "HookEntry", "InstallResult", "NO_ANSWER", "SETTINGS",
           "find_hooks", "hook_command", "hooks_disabled", "http_settings", "install", "judge", "service_url",
           "settings_path", "settings_paths", "wrapper_script"]
