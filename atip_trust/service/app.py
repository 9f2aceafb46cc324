"""What a request to ``atip-trust serve`` means, and its answer (docs/serve.md).

Same verdicts as the CLI, by construction: a hook, admit or compile request is answered by running that
command line through the CLI's own catch point (cli/common.py ``run``, with the ``hook``, ``admit`` and
``compile`` commands) in this process, on the main thread, one request at a time, with the request's
body as standard input and its words as the command line — the parser, the policy loading, the verdict
cache's stat and digest checks, the audit line and the one catch point are the CLI's. Nothing
is kept between requests that the CLI would not re-check: a policy, an org policy or its signature, a
trusted root, a bundle or a tool's bytes that changed are read again on the next request, because
every one of them is looked up by the same stat-keyed memos a CLI run uses (docs/caching.md).

Why the main thread: the hook's ``--timeout`` is a ``SIGALRM`` timer, and Python delivers signals only
there; and why one at a time: the CLI's standard streams and ``sys.argv`` (``--pin`` rebuilds the
launcher from it) are process-wide. A warm decision takes about a millisecond, so serialising them costs
less than the locks a concurrent design would need; the server's threads only read and write sockets.

``/v1/check-call`` has no CLI twin: it is the library's ``check_call`` after the library's ``admit``, the
two calls an agent runtime makes (docs/library.md).
"""

from __future__ import annotations

import io
import json
import os
import queue
import sys
import threading
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

from atip_trust._version import __version__
from atip_trust.admission.verdict_key import HITS
from atip_trust.agents.formats import AGENTS, STDIN_CAP, render_error
from atip_trust.cli import cmd_admit, cmd_compile, cmd_hook, common
from atip_trust.cli.hook_client import decision_env
from atip_trust.errors import UsageError
from atip_trust.service.calls import check_call_request
from atip_trust.service.metrics import Metrics

#: The commands a request runs, each as the CLI runs it (the same module, parser and catch point).
COMMANDS: dict[str, ModuleType] = {"hook": cmd_hook, "admit": cmd_admit, "compile": cmd_compile}

#: serve's own options and how many words each takes; every other word given to ``serve`` is a policy,
#: evidence or audit flag forwarded to each decision (``hook``'s and ``admit``'s flags).
SERVE_OPTIONS: dict[str, int] = {
    "--socket": 1, "--http": 1, "--token-file": 1, "--max-request-bytes": 1, "--request-deadline": 1,
    "--max-connections": 1, "--format": 1, "-v": 0, "--verbose": 0,
}
#: Flags of ``hook`` that ``admit`` does not take (dropped from admit's defaults).
HOOK_ONLY: dict[str, int] = {"--bundle-dir": 1, "--pin": 0, "--timeout": 1}
#: /v1/admit's JSON fields and the admit flag each becomes (lists repeat the flag).
ADMIT_FIELDS: dict[str, str] = {
    "metadata": "--metadata", "metadataBundle": "--metadata-bundle", "bundles": "--bundle", "keys": "--key",
    "signature": "--signature", "contract": "--contract", "contractBundle": "--contract-bundle", "vsas": "--vsa",
    "shimDir": "--shim-dir", "interactive": "--interactive",
}
OUTCOMES = {0: "allow", 1: "deny", 2: "error", 3: "ask"}


class Response:
    """One HTTP answer: status, content type, body and extra headers."""

    __slots__ = ("status", "content_type", "body", "headers")

    def __init__(self, status: int, body: bytes | str | dict[str, Any] | list[Any],
                 content_type: str = "application/json", headers: dict[str, str] | None = None) -> None:
        if isinstance(body, (dict, list)):
            body = json.dumps(body, sort_keys=True) + "\n"
        self.status, self.content_type = status, content_type
        self.body = body.encode("utf-8") if isinstance(body, str) else body
        self.headers = headers or {}


def strip_options(words: Sequence[str], options: dict[str, int]) -> list[str]:
    """``words`` without the ``options`` (``--x V``, ``--x=V`` and flags), in order."""
    out: list[str] = []
    skip = 0
    for word in words:
        if skip:
            skip -= 1
            continue
        name = word.partition("=")[0]
        if name in options:
            skip = options[name] if "=" not in word else 0
            continue
        out.append(word)
    return out


def forwarded_flags(cli_argv: Sequence[str]) -> list[str]:
    """The decision flags given to ``serve`` (its words after ``serve``, without its own options)."""
    words = list(cli_argv)
    at = words.index("serve") + 1 if "serve" in words else 0
    return strip_options(words[at:], SERVE_OPTIONS)


class Job:
    """A request handed to the main thread; ``done`` is set once ``answer`` is."""

    __slots__ = ("work", "answer", "done")

    def __init__(self, work: Callable[[], Response]) -> None:
        self.work = work
        self.answer: Response | None = None
        self.done = threading.Event()


class CliRun:
    """One CLI command line run in this process: its exit code and what it printed."""

    __slots__ = ("code", "out", "err")

    def __init__(self, code: int, out: str, err: str) -> None:
        self.code, self.out, self.err = code, out, err


def run_cli(argv: list[str], stdin: bytes = b"", cwd: str | None = None, path_env: str | None = None) -> CliRun:
    """Run ``atip-trust ARGV`` as the console script would, in this process (main thread only)."""
    saved = (sys.stdin, sys.stdout, sys.stderr, sys.argv, os.environ.get("PATH"))
    saved_cwd = os.getcwd() if cwd is not None else None
    out, err = io.StringIO(), io.StringIO()
    try:
        sys.stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8", errors="surrogateescape")
        sys.stdout, sys.stderr, sys.argv = out, err, ["atip-trust", *argv]
        if path_env is not None:
            os.environ["PATH"] = path_env
        if cwd is not None:
            os.chdir(cwd)
        code = common.run(argv, COMMANDS)
    finally:
        sys.stdin, sys.stdout, sys.stderr, sys.argv = saved[:4]
        if path_env is not None:
            if saved[4] is None:
                os.environ.pop("PATH", None)
            else:
                os.environ["PATH"] = saved[4]
        if saved_cwd is not None:
            os.chdir(saved_cwd)
    return CliRun(code, out.getvalue(), err.getvalue())


def _hook_outcome(stdout: str, code: int) -> str:
    try:
        doc = json.loads(stdout) if stdout.strip() else {}
    except ValueError:
        return "error"
    if not isinstance(doc, dict):
        return "error"
    spec = doc.get("hookSpecificOutput")
    found = (spec.get("permissionDecision") if isinstance(spec, dict) else None) \
        or doc.get("permissionDecision") or doc.get("decision") or doc.get("permission")
    if code not in (0, 2):
        return "error"
    return found if isinstance(found, str) else "none"


class Service:
    """Routes, the main thread's decision queue, and the counters."""

    def __init__(self, flags: Sequence[str], *, deadline: float = 30.0) -> None:
        self.hook_flags = list(flags)
        self.admit_flags = strip_options(flags, HOOK_ONLY)
        self.deadline = deadline
        self.metrics = Metrics()
        self.jobs: queue.Queue[Job | None] = queue.Queue()
        self.stopping = threading.Event()

    def check_flags(self) -> None:
        """Refuse at start a flag a decision would refuse (each request would fail otherwise)."""
        for argv in (["hook", "claude-code", *self.hook_flags], ["admit", "x", *self.admit_flags]):
            try:
                common.build_parser(COMMANDS, argv[0]).parse_args(argv)
            except SystemExit as exc:
                raise UsageError(f"serve cannot forward these flags to {argv[0]}: "
                                 f"{' '.join(self.hook_flags)}") from exc

    # -- the main thread ---------------------------------------------------------------------------
    def run_jobs(self, done: Callable[[], bool]) -> None:
        """Answer jobs, on this (the main) thread, until ``done()`` holds and none is waiting."""
        while True:
            try:
                job = self.jobs.get(timeout=0.1)
            except queue.Empty:
                if done():
                    return
                continue
            if job is None:
                continue
            try:
                job.answer = job.work()
            except BaseException as err:  # noqa: BLE001 - a job always gets an answer
                job.answer = Response(500, {"error": f"internal error: {type(err).__name__}"})
            job.done.set()

    def stop(self) -> None:
        self.stopping.set()
        self.jobs.put(None)

    def submit(self, work: Callable[[], Response], late: Callable[[], Response]) -> Response:
        """Run ``work`` on the main thread; ``late()`` answers when it is not done by the deadline."""
        job = Job(work)
        self.jobs.put(job)
        if job.done.wait(self.deadline) and job.answer is not None:
            return job.answer
        return late()

    # -- routes ------------------------------------------------------------------------------------
    def handle(self, method: str, path: str, query: dict[str, str], headers: dict[str, str],
               body: bytes) -> Response:
        if path == "/healthz" and method == "GET":
            return Response(200, {"status": "ok", "version": __version__})
        if path == "/metrics" and method == "GET":
            return Response(200, self.metrics.text(HITS[0]), "text/plain; version=0.0.4")
        if path.startswith("/v1/hooks/"):
            agent = path[len("/v1/hooks/"):]
            if agent not in AGENTS:
                return Response(404, {"error": f"no hook format {agent!r}; expected one of {', '.join(AGENTS)}"})
            return self._post(method, lambda: self._hook(agent, query, headers, body))
        routes: dict[str, Callable[[], Response]] = {
            "/v1/admit": lambda: self._admit(body),
            "/v1/check-call": lambda: self._check_call(body),
            "/v1/compile": lambda: self._compile(body),
        }
        if path in routes:
            return self._post(method, routes[path])
        return Response(404, {"error": f"no such endpoint: {path}"})

    def _post(self, method: str, route: Callable[[], Response]) -> Response:
        if method != "POST":
            return Response(405, {"error": f"expected POST, actual {method}"}, headers={"Allow": "POST"})
        return route()

    def _hook(self, agent: str, query: dict[str, str], headers: dict[str, str], body: bytes) -> Response:
        command_form = query.get("form") == "command"
        flags = self.hook_flags
        cwd = path_env = None
        if command_form and "x-atip-argv" in headers:  # a thin client's own flags (cli/hook_client.py)
            if headers.get("x-atip-env") != decision_env(os.environ).encode("utf-8", "surrogateescape").hex():
                # Its environment names another policy, org policy, CI or state than this process reads:
                # the CLI there could decide otherwise, so the client decides itself (any non-200).
                return Response(409, {"error": "the client's decision environment differs from the service's"})
            words = bytes.fromhex(headers["x-atip-argv"]).decode("utf-8", "surrogateescape")
            flags = [w for w in words.split("\0") if w] if words else []
            cwd = bytes.fromhex(headers.get("x-atip-cwd", "")).decode("utf-8", "surrogateescape") or None
            path_env = bytes.fromhex(headers.get("x-atip-path", "")).decode("utf-8", "surrogateescape") or None

        def work() -> Response:
            run = run_cli(["hook", agent, *flags], body, cwd=cwd, path_env=path_env)
            self.metrics.decided(f"hooks/{agent}", _hook_outcome(run.out, run.code))
            return self._hook_response(run.out, run.err, run.code, command_form)

        def late() -> Response:
            answer = render_error(agent, f"the service gave no answer within {self.deadline:g} s")
            self.metrics.decided(f"hooks/{agent}", "error")
            return self._hook_response(answer.stdout, answer.stderr, answer.exit_code, command_form)

        if len(body) > STDIN_CAP:
            return self._hook_response(
                *_error_triple(agent, f"the hook input is larger than {STDIN_CAP} bytes"), command_form)
        return self.submit(work, late)

    @staticmethod
    def _hook_response(out: str, err: str, code: int, command_form: bool) -> Response:
        if command_form:  # the thin client replays stdout, stderr and the exit status
            return Response(200, out, "application/octet-stream",
                            {"X-Atip-Exit-Code": str(code), "X-Atip-Stderr": err.encode("utf-8").hex()})
        # An http hook (Claude Code): an empty 2xx body is no opinion, a JSON object is the answer; an
        # error's answer is the deny JSON render_error printed (exit 2 has no meaning over HTTP).
        return Response(200, out, "application/json")

    def _admit(self, body: bytes) -> Response:
        req = _json_object(body)
        if isinstance(req, Response):
            return req
        argv = _admit_argv(req, self.admit_flags)
        if isinstance(argv, Response):
            return argv

        def work() -> Response:
            run = run_cli(argv)
            self.metrics.decided("admit", OUTCOMES.get(run.code, "error"))
            try:
                admission = json.loads(run.out) if run.out.strip() else None
            except ValueError:
                admission = None
            return Response(200, {"exitCode": run.code, "behavior": OUTCOMES.get(run.code, "error"),
                                  "admission": admission, "stderr": run.err})

        return self.submit(work, lambda: Response(
            200, {"exitCode": 2, "behavior": "error", "admission": None,
                  "stderr": f"atip-trust: error: no answer within {self.deadline:g} s"}))

    def _check_call(self, body: bytes) -> Response:
        req = _json_object(body)
        if isinstance(req, Response):
            return req
        return self.submit(lambda: self._check_call_work(req), lambda: Response(
            200, {"exitCode": 2, "behavior": "deny", "error": f"no answer within {self.deadline:g} s"}))

    def _check_call_work(self, req: dict[str, Any]) -> Response:
        code, doc = check_call_request(req, self.admit_flags)
        self.metrics.decided("check-call", OUTCOMES.get(code, "error") if code != 2 else "error")
        return Response(200, doc)

    def _compile(self, body: bytes) -> Response:
        req = _json_object(body)
        if isinstance(req, Response):
            return req
        provider, metadata = req.get("provider"), req.get("metadata", [])
        if not isinstance(provider, str) or not isinstance(metadata, list) \
                or not all(isinstance(m, str) for m in metadata):
            return Response(400, {"error": "expected {\"provider\": str, \"metadata\": [paths]}"})
        flags = [w for w in self.admit_flags if w not in ("--min-trust-level",)]
        argv = ["compile", "--provider=" + provider, *_compile_flags(flags), "--", *metadata]

        def work() -> Response:
            run = run_cli(argv)
            self.metrics.decided("compile", OUTCOMES.get(run.code, "error"))
            try:
                tools = json.loads(run.out) if run.out.strip() else None
            except ValueError:
                tools = None
            return Response(200, {"exitCode": run.code, "tools": tools, "stderr": run.err})

        return self.submit(work, lambda: Response(200, {"exitCode": 2, "tools": None,
                                                        "stderr": "no answer in time"}))


#: compile takes only these of the forwarded flags (and their values).
_COMPILE_TAKES = {"--policy": 1, "--org-policy": 1, "--trusted-root": 1, "--custom-trusted-root": 1,
                  "--staging": 0, "--audit-log": 1, "--no-audit": 0, "--no-cache": 0, "--shim-dir": 1}


def _compile_flags(flags: Sequence[str]) -> list[str]:
    out: list[str] = []
    take = 0
    for word in flags:
        if take:
            out.append(word)
            take -= 1
            continue
        name = word.partition("=")[0]
        if name in _COMPILE_TAKES:
            out.append(word)
            take = _COMPILE_TAKES[name] if "=" not in word else 0
    return out


def _error_triple(agent: str, message: str) -> tuple[str, str, int]:
    answer = render_error(agent, message)
    return answer.stdout, answer.stderr, answer.exit_code


def _json_object(body: bytes) -> dict[str, Any] | Response:
    try:
        doc = json.loads(body)
    except ValueError as err:
        return Response(400, {"error": f"the body is not JSON: {err}"})
    if not isinstance(doc, dict):
        return Response(400, {"error": f"expected a JSON object, actual {type(doc).__name__}"})
    return doc


def _admit_argv(req: dict[str, Any], defaults: Sequence[str]) -> list[str] | Response:
    """``admit``'s command line for a /v1/admit request (docs/serve.md lists the fields)."""
    tool, command = req.get("tool"), req.get("command")
    if not isinstance(tool, str) or not tool:
        return Response(400, {"error": "expected \"tool\": a non-empty string"})
    unknown = sorted(set(req) - set(ADMIT_FIELDS) - {"tool", "command"})
    if unknown:  # fail closed: a field we would ignore might be one the caller relies on
        return Response(400, {"error": f"unknown fields: {', '.join(unknown)}"})
    # Every value rides in its flag's own word (``--command=--help``) and the tool comes after ``--``:
    # a model names both, and a word like ``--help`` or ``--policy=FILE`` must never be read as admit's
    # own flag (``--help`` exits 0, which would read as "allow").
    argv = ["admit", "--format", "json"]
    if isinstance(command, list) and all(isinstance(w, str) and w and not any(c.isspace() for c in w)
                                         for w in command):
        argv += ["--command=" + " ".join(command)]
    elif isinstance(command, str):
        argv += ["--command=" + command]
    elif command is not None:
        return Response(400, {"error": "expected \"command\": a string or a list of words without spaces"})
    for field, flag in ADMIT_FIELDS.items():
        value = req.get(field)
        values = value if isinstance(value, list) else [] if value is None else [value]
        if not all(isinstance(v, str) for v in values):
            return Response(400, {"error": f"expected {field!r}: a string or a list of strings"})
        argv += [f"{flag}={v}" for v in values]
    return [*argv, *defaults, "--", tool]


__all__ = ["COMMANDS", "CliRun", "Response", "Service", "forwarded_flags", "run_cli", "strip_options"]
