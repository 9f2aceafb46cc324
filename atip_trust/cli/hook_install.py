"""``atip-trust hook install AGENT [hook flags]``: the CLI side of agents/install.py.

The hook flags given (``--policy``, ``--bundle-dir``, ``--pin`` …) are parsed by the hook's own parser,
so a typo fails here rather than in every agent call, and written into the installed command as given
(file and folder paths made absolute: the agent runs its hooks from other folders). The program is the
``atip-trust`` this command runs from (the console script beside this interpreter), by its absolute path,
or ``--executable PATH``.
"""

from __future__ import annotations

import argparse
import os
import sys

from atip_trust.agents import install
from atip_trust.agents.formats import AGENTS
from atip_trust.cli.common import EXIT_OK
from atip_trust.cli.identity_flags import GH_FLAGS
from atip_trust.cli.output import dump_json, one_line
from atip_trust.errors import UsageError

#: The hook parser's options that are not the hook's own (the command line's, and install's).
NOT_HOOK_FLAGS = frozenset({"help", "format", "verbose", "scope", "settings", "print", "uninstall", "executable",
                            "http", "token_env"})
_PATH_METAVARS = frozenset({"FILE", "DIR"})


def program(explicit: str | None) -> list[str]:
    """The words that start the installed atip-trust, each absolute (module docstring)."""
    if explicit:
        path = os.path.abspath(explicit)
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            raise UsageError(f"--executable {explicit}: not an executable file", path=path)
        return [path]
    here = sys.argv[0] if sys.argv else ""
    for candidate in (here if os.path.basename(here) == "atip-trust" else "",
                      os.path.join(os.path.dirname(sys.executable), "atip-trust")):
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return [os.path.abspath(candidate)]
    return [os.path.abspath(sys.executable), "-m", "atip_trust"]


def _spelling(action: argparse.Action, used: tuple[str, ...]) -> str:
    """The spelling the user typed when it was one of gh's (gh's flags carry gh's defaults), else ours."""
    for s in action.option_strings:
        if s in used:
            return s
    return next((s for s in action.option_strings if s.startswith("--") and s not in GH_FLAGS),
                action.option_strings[-1])


def hook_flags(args: argparse.Namespace, actions: list[argparse.Action]) -> list[str]:
    """The hook's own flags given on this command line, as words for the installed command."""
    words: list[str] = []
    used = tuple(getattr(args, "gh_flags", ()) or ())
    for action in actions:
        if not action.option_strings or action.dest in NOT_HOOK_FLAGS:
            continue
        value = getattr(args, action.dest, None)
        if value is None or value is False or value == [] or value == action.default:
            continue
        flag = _spelling(action, used)
        if value is True:
            words.append(flag)
            continue
        for v in value if isinstance(value, list) else [value]:
            text = str(v)
            if action.metavar in _PATH_METAVARS and text:
                text = os.path.abspath(os.path.expanduser(text))
            words += [flag, text]
    return words


def run(args: argparse.Namespace, actions: list[argparse.Action]) -> int:
    agent = args.target
    if agent is None:
        raise UsageError(f"hook install needs the agent: one of {', '.join(AGENTS)}")
    path = args.settings or install.settings_path(agent, args.scope)
    if args.scope == "project" and not args.settings:
        # The project chooses its own files, links among them (a cloned repository): --scope project
        # writes inside the project, never through a link to a file of the user's elsewhere.
        here, real = os.path.realpath(os.getcwd()), os.path.realpath(path)
        if os.path.commonpath([here, real]) != here:
            raise UsageError(f"{path} leads to {real}, outside the project {here}: not written (remove the "
                             "link, or name the file with --settings)", path=path)
    command, row = None, None
    if args.token_env and not args.http:
        raise UsageError("--token-env goes with --http (the http hook's token variable)")
    if args.http and not args.uninstall:
        if hook_flags(args, actions) or args.executable:
            raise UsageError("with --http the service decides with its own flags: give --policy, --bundle-dir "
                             "and the rest to `atip-trust serve`, not to the hook")
        row = install.http_settings(agent, args.token_env or install.DEFAULT_TOKEN_ENV)
        command = install.service_url(args.http, agent)
    elif not args.uninstall:
        command = install.hook_command(agent, program(args.executable), hook_flags(args, actions))
    result = install.install(agent, path, command, write=not args.print, row=row)
    if args.format == "json":
        dump_json({"command": "hook install", **result.to_json(),
                   **({"content": result.content} if args.print else {})})
        return EXIT_OK
    if args.print:
        sys.stdout.write(result.content if result.content else f"(the file {path} would be removed)\n")
    else:
        done = {"installed": "installed", "unchanged": "already installed, unchanged",
                "removed": "removed", "absent": "no atip-trust hook to remove"}[result.action]
        sys.stdout.write(one_line(f"{agent}: {done}: {path}") + "\n")
        if result.backup:
            sys.stdout.write(one_line(f"backup of the previous file: {result.backup}") + "\n")
        if result.command and result.action == "installed":
            what = "hook URL (start `atip-trust serve --http` there)" if row is not None else "hook command"
            sys.stdout.write(one_line(f"{what}: {result.command}") + "\n")
    for warning in result.warnings:
        sys.stderr.write(f"atip-trust: warning: {one_line(warning)}\n")
    return EXIT_OK


__all__ = ["NOT_HOOK_FLAGS", "hook_flags", "program", "run"]
