"""``atip-trust hook claude-code|codex|gemini|copilot|cursor``: an agent's pre-tool hook JSON on stdin,
its allow / ask / deny (or no-opinion) answer on stdout (agents/hooks.py has the rules, agents/formats.py
the formats).

Everything is answered in the agent's format, errors included: a policy that does not load, input
that is not what the agent sends, a timeout (``--timeout``, below the agents' own hook timeouts) or
anything else is a deny, with the exit status the agent treats as blocking.

``atip-trust hook install AGENT [hook flags]`` writes that hook into the agent's settings, so that it
blocks even when it cannot start (cli/hook_install.py, agents/install.py); loaded only for ``install``.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from types import FrameType
from typing import TYPE_CHECKING, Any

from atip_trust._base.lazy import lazy_import
from atip_trust.admission.options import AdmitOptions
from atip_trust.agents.formats import AGENTS, CAN_REWRITE, STDIN_CAP, HookAnswer, render_error
from atip_trust.agents.hooks import Options, answer
from atip_trust.cli.common import add_common_options
from atip_trust.cli.policy_flags import add_audit_flags, add_policy_flags, policy_from_args
from atip_trust.errors import AtipTrustError, UsageError

if TYPE_CHECKING:
    from atip_trust.cli import hook_child, hook_install
else:
    hook_child = lazy_import("atip_trust.cli.hook_child")  # only for a hook input over CHILD_BYTES
    hook_install = lazy_import("atip_trust.cli.hook_install")  # only `hook install`

#: Hook input bytes above which the decision runs in a forked child that may die without taking the
#: answer with it (cli/hook_child.py); an ordinary line is decided here, its parse bounded in place.
CHILD_BYTES = 4096
DEFAULT_TIMEOUT = 25  # seconds: under Copilot CLI's 30 s default, Claude Code's and Gemini's 60 s


class HookTimeout(BaseException):
    """``--timeout`` ran out. A ``BaseException``, so no ``except Exception`` on the way (the library
    fails closed with its own reasons there) can catch it and answer with another reason."""


def register(sub: Any) -> None:
    p = add_common_options(sub.add_parser(
        "hook",
        help="answer an agent's pre-tool hook: verify the programs a shell command runs",
        description="Read the agent's pre-tool hook JSON on stdin, parse the shell command with bash's "
        "grammar, resolve each program it runs through PATH, admit it with its words, and print the "
        "agent's answer: allow only what is proven, no opinion for programs the policy does not name "
        "(hooks.unlisted), ask or deny otherwise. Tools other than the shell get no opinion. Any error "
        "is a deny.",
    ))
    p.add_argument("agent", choices=(*AGENTS, "install"), metavar="AGENT",
                   help=f"the agent whose hook format is read and written ({', '.join(AGENTS)}); or "
                   "'install', then the agent: write its settings so the hook blocks when it cannot run")
    p.add_argument("target", nargs="?", choices=AGENTS, metavar="INSTALL_AGENT", help=argparse.SUPPRESS)
    add_policy_flags(p)
    p.add_argument("--shim-dir", metavar="DIR", help="local shim folder, looked up by digest")
    p.add_argument("--bundle-dir", metavar="DIR",
                   help="Sigstore bundles by digest (DIR/sha256/<hex>.sigstore.json), for every program")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                   help=f"deny when no answer is ready in time (default {DEFAULT_TIMEOUT})")
    p.add_argument("--pin", action="store_true",
                   help="rewrite each program of an allowed line to run through 'atip-trust exec "
                   "--expect-digest', so the bytes admitted are the bytes that run (Claude Code, Codex)")
    p.add_argument("--via-service", action="store_true",
                   help="ask a running 'atip-trust serve' (its Unix socket) and replay its answer; decide "
                   "here when it cannot be reached (docs/serve.md)")
    p.add_argument("--socket", metavar="PATH", help="the service's socket for --via-service "
                   "(default: $XDG_RUNTIME_DIR/atip-trust/serve.sock)")
    add_audit_flags(p)
    # The hook's own flags, for `hook install` to write into the installed command (cli/hook_install.py).
    p.set_defaults(func=run, hook_actions=list(p._actions))
    add_install_flags(p)


def add_install_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("hook install AGENT (write the agent's settings; docs/agents.md)")
    g.add_argument("--scope", choices=("user", "project"), default="user",
                   help="the user's settings (default) or the current project's")
    g.add_argument("--settings", metavar="FILE", help="the settings file to write (default: the agent's, by --scope)")
    g.add_argument("--print", action="store_true", help="print the settings file as it would be; write nothing")
    g.add_argument("--uninstall", action="store_true", help="remove atip-trust's hook from the settings")
    g.add_argument("--executable", metavar="PATH",
                   help="the atip-trust program the hook runs (default: this one, by its absolute path)")
    g.add_argument("--http", metavar="URL",
                   help="write Claude Code's http hook form instead: POST to a running 'atip-trust serve' at "
                   "this loopback URL (http://127.0.0.1:PORT), onFailure block (docs/serve.md)")
    g.add_argument("--token-env", metavar="VAR",
                   help="with --http: the environment variable holding the service's bearer token "
                   "(default ATIP_TRUST_TOKEN)")


def _alarm(signum: int, frame: FrameType | None) -> None:
    raise HookTimeout()


def run(args: argparse.Namespace) -> int:
    if args.agent == "install":
        return hook_install.run(args, args.hook_actions)
    if args.target is not None or args.scope != "user" or args.settings or args.print or args.uninstall \
            or args.executable or args.http or args.token_env:
        raise UsageError("--scope, --settings, --print, --uninstall, --executable, --http and --token-env belong to "
                         f"`hook install {args.agent}`")
    previous = None
    try:
        try:
            if args.timeout > 0 and hasattr(signal, "SIGALRM"):
                previous = signal.signal(signal.SIGALRM, _alarm)
                signal.setitimer(signal.ITIMER_REAL, args.timeout)
            result = _answer(args)
        finally:
            # An alarm that fires in here still raises HookTimeout, which the outer handler answers.
            if previous is not None:
                signal.setitimer(signal.ITIMER_REAL, 0)
                signal.signal(signal.SIGALRM, previous)
    except HookTimeout:
        result = render_error(args.agent, f"no answer within {args.timeout:g} s (--timeout)")
    except AtipTrustError as err:
        result = render_error(args.agent, err.diagnostics())
    except Exception as err:  # noqa: BLE001 - a hook fails closed, in the agent's format
        result = render_error(args.agent, f"internal error: {type(err).__name__}")
    sys.stdout.write(result.stdout)
    if result.stderr:
        sys.stderr.write(result.stderr)
    return result.exit_code


def pin_words(argv: list[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """For ``--pin``: the words that run atip-trust with this interpreter (and the global options before
    ``hook``), and ``exec``'s options: this hook's own flags minus the agent, ``--pin``, ``--timeout`` and
    the service client's ``--via-service`` and ``--socket``,
    so ``exec`` admits with the same policy and evidence."""
    at = argv.index("hook") if "hook" in argv else len(argv)
    flags: list[str] = []
    skip = False
    for word in argv[at + 2:]:
        if skip:
            skip = False
        elif word in ("--timeout", "--socket"):
            skip = True
        elif word not in ("--pin", "--via-service") and not word.startswith(("--timeout=", "--socket=")):
            flags.append(word)
    # -I: the launcher imports neither the working directory (a project shipping its own atip_trust/
    # package) nor user site-packages, and reads no PYTHON* variable (issue 32, item 7).
    return (sys.executable, "-I", "-m", "atip_trust", *argv[1:at]), tuple(flags)


def _answer(args: argparse.Namespace) -> HookAnswer:
    deadline = time.monotonic() + (args.timeout if args.timeout > 0 else 365 * 86400.0)
    if args.pin and args.agent not in CAN_REWRITE:
        raise UsageError(f"--pin rewrites the command, which only {' and '.join(sorted(CAN_REWRITE))} "
                         f"hooks may do; {args.agent}'s cannot")
    data = sys.stdin.buffer.read(STDIN_CAP + 1) if sys.stdin is not None else b""
    if len(data) > STDIN_CAP:
        return render_error(args.agent, f"the hook input is larger than {STDIN_CAP} bytes")
    policy = policy_from_args(args)
    program, flags = pin_words(sys.argv)
    admit = AdmitOptions(shim_dir=args.shim_dir, trusted_root=args.trusted_root, staging=args.staging,
                         audit=not args.no_audit, audit_log=args.audit_log, cache=not args.no_cache)
    options = Options(admit=admit, bundle_dir=args.bundle_dir, pin=program if args.pin else None,
                      pin_options=flags)
    if len(data) <= CHILD_BYTES:
        return answer(args.agent, data, policy=policy, options=options)
    return hook_child.answer_guarded(args.agent, lambda: answer(args.agent, data, policy=policy, options=options),
                                     deadline)


__all__ = ["HookTimeout", "pin_words", "register", "run"]
