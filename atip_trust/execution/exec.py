"""Run exactly the bytes that were verified: admission, then ``execve`` of the verified descriptor.

``exec_verified`` is ``atip-trust exec``'s pipeline (docs/cli-guide.md, "exec"; architecture.md principle 6):

(1) resolve the tool once (a bare name through PATH only, ``facts.artifact.which``) and open it once;
(1a) ``expect_digest`` (``--expect-digest sha256:<hex>``, what an agent hook pins when it rewrites an
    allowed command): the opened file's sha256 must be that one, or nothing is admitted or run
    (``EXPECTED_DIGEST_MISMATCH``). An extra condition, never a bypass: the admission still decides;
(2) admit that open ``Artifact`` with the same library admission as ``admit`` (admission/admit.py), the
    tool's arguments as the command words, so capability gates see ``repo delete``;
(3) a ``#!`` script: policy ``exec.scripts`` refuses it (``deny``) or resolves, opens and admits its
    interpreter too (``verify-interpreter``, the default: it is never weaker than ``deny``, since the
    interpreter must pass the same policy as any tool). ``#!/usr/bin/env NAME`` looks NAME up on the
    tool's PATH once and runs that verified interpreter directly: env's own bytes never run, so only
    the interpreter is admitted. The verified interpreter descriptor is executed on ``/dev/fd/N``,
    where N is a sealed copy of the script (``Artifact.sealed_copy``: a ``memfd`` no one can write,
    grow or shrink, holding exactly the bytes hashed), never the script's own file: an interpreter
    reads its script lazily (bash a command at a time), so a same-size rewrite in place would run
    new bytes after every check here (issue 22);
(4) the environment by policy ``exec.env`` (execution/env.py);
(5) the audit line (the admission's, plus ``argv`` and what is about to run), written before exec;
(6) right before exec, for each descriptor: its identity (``Artifact.exec_fd``), the path it was
    found at still naming that file (a rename over it or a symlink swapped in its directory is
    refused, though the descriptor would still run the old bytes), and its digest again from the
    descriptor (an in-place rewrite keeps the inode: only the bytes tell);
(7) ``os.execve`` on the descriptor (``fexecve``; on Linux ``execveat(fd, "", AT_EMPTY_PATH)``), or,
    where the platform has none, on the resolved path after the same checks. Never through PATH again.

A refusal raises :class:`ExecRefused` (exit 1 deny, 3 ask) after its audit line; an error raises
``AtipTrustError`` (exit 2). On success this function does not return: the process is the tool, its
exit status and signals are the caller's.

What no check here can close: a writer who changes a *binary* in place between the last hash and the
``execve`` (microseconds; Linux refuses the exec with ETXTBSY while the file is open for writing). A
script's bytes are copied and sealed after their last hash, so it has no such window.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from atip_trust._base.files import path_name, path_texts
from atip_trust._base.record import Record, field, replace
from atip_trust.admission.admit import Admission, admit, audit_failure, audit_target, tool_name_of
from atip_trust.admission.interactive import stdin_provides
from atip_trust.admission.options import AdmitOptions, split_keywords
from atip_trust.admission.verdict_key import hash_artifact, open_cache
from atip_trust.errors import ArtifactAccessError, AtipTrustError, MalformedInputError, UsageError
from atip_trust.evaluation.inputs import Evidence
from atip_trust.execution import sandbox
from atip_trust.execution.confined import run_confined
from atip_trust.execution.env import exec_environment
from atip_trust.facts.artifact import Artifact, FileIdentity, which
from atip_trust.facts.digest import Digest, hash_fd
from atip_trust.facts.effects import command_interactive_need
from atip_trust.facts.report import Reason
from atip_trust.policy.model import Policy
from atip_trust.state.audit import append_audit
from atip_trust.state.broken import mark_broken

PathLike = str | os.PathLike[str]

#: The longest ``#!`` line the kernel reads (Linux BINPRM_BUF_SIZE since 5.1).
SHEBANG_MAX = 256
EXIT_DENY, EXIT_ASK = 1, 3
#: ``admit_file``'s defaults: no evidence, the default options (records are immutable: one will do).
NO_EVIDENCE, DEFAULT_OPTIONS = Evidence(), AdmitOptions()


class ExecRefused(AtipTrustError):
    """The tool was not run: a denial (exit 1) or a question (exit 3), with its reasons."""

    def __init__(self, behavior: str, reasons: Sequence[Reason], admission: Admission | None = None):
        self.behavior = behavior
        self.reasons = list(reasons)
        self.admission = admission
        super().__init__("; ".join(r.message for r in self.reasons) or behavior)

    @property
    def exit_code(self) -> int:
        return EXIT_ASK if self.behavior == "ask" else EXIT_DENY


class Opened(Record, frozen=False):
    """One file about to run: the path it was found at (as text), its open descriptor, its admission."""

    found: str
    art: Artifact
    admission: Admission


class ExecPlan(Record, frozen=False):
    """What is about to be executed: shown to ``before_exec`` (a test's or runtime's hook point)."""

    _no_repr = frozenset({"audit_record"})
    argv: list[str]
    env: dict[str, str]
    tool: Opened
    interpreter: Opened | None = None
    audit_record: dict[str, Any] = field(default_factory=dict)
    #: A ``#!`` script's sealed copy (``sealed_script``), read by the interpreter at ``/dev/fd/N``; -1.
    script_fd: int = -1
    #: The boundary entered right before ``execve`` (execution/sandbox.py ``Prepared``), or None.
    sandbox: Any = None

    @property
    def exec_target(self) -> Opened:
        return self.interpreter if self.interpreter is not None else self.tool


def find_bundles(bundle_dir: PathLike | None, hexdigest: str,
                 suffixes: tuple[str, ...] = (".sigstore.json", ".sigstore.jsonl")) -> list[str]:
    """A tool's Sigstore bundles kept by digest: ``DIR/sha256/<hex>.sigstore.json`` (or ``.jsonl``),
    or the same names directly in ``DIR``: how exec and agent hooks find evidence for any tool. Paths
    as text (no pathlib on an agent hook's path, docs/caching.md). ``suffixes``
    ``(".vsa.jsonl",)``: its VSAs kept the same way (docs/vsa.md)."""
    if bundle_dir is None:
        return []
    base = os.fspath(bundle_dir)
    found: list[str] = []
    for folder in (os.path.join(base, "sha256"), base):
        for suffix in suffixes:
            cand = os.path.join(folder, f"{hexdigest}{suffix}")
            if os.path.isfile(cand):
                found.append(cand)
    return found


def locate(tool: PathLike, path_env: str | None = None) -> str:
    """Where ``tool`` is: a bare name through PATH once (never the current directory), else the path
    as given. Not resolved further: the checks before exec look at this very path again."""
    text = os.fspath(tool)
    if not text:
        raise UsageError("empty tool name")
    if isinstance(tool, str) and "/" not in text:
        return which(text, path_env)
    return text


def admit_file(
    found: PathLike,
    *,
    policy: Policy,
    command: Sequence[str],
    evidence: Evidence = NO_EVIDENCE,
    options: AdmitOptions = DEFAULT_OPTIONS,
    bundle_dir: PathLike | None = None,
    expect_digest: Digest | None = None,
) -> Opened:
    """Open ``found`` once and admit that open file with ``evidence`` and ``options`` (admission/options.py;
    ``options.name`` is the name the rules match), bundles found by its digest in ``bundle_dir`` added to
    ``evidence.bundles``; the caller owns the descriptor. The audit line is deferred to the caller.
    Records, not keywords: the keyword form is the public functions' (``admit``, ``exec_verified``), so a
    misspelt option is a ``TypeError`` there and nowhere else.
    ``found`` is a file (a bare name is one in the current directory), never looked up on PATH again.
    ``expect_digest``: the file's sha256 must be this one, checked before admission
    (``ExecRefused`` deny, ``EXPECTED_DIGEST_MISMATCH``, naming both digests; nothing admitted)."""
    art = Artifact.open(found, lookup=False)
    try:
        more: list[str] = []
        kept: list[str] = []
        if bundle_dir is not None or expect_digest is not None:
            digest = hash_artifact(art, open_cache(options.cache))["sha256"]
            # Public values, compared as bytes: Digest's constant-time == would load OpenSSL (digest.py).
            if expect_digest is not None and (digest.algorithm, digest.value) != \
                    (expect_digest.algorithm, expect_digest.value):
                raise ExecRefused("deny", [Reason(
                    "EXPECTED_DIGEST_MISMATCH",
                    f"{os.fspath(found)} has other bytes than the ones this command was pinned to "
                    f"(--expect-digest): expected {expect_digest}, actual {digest}",
                    rule="--expect-digest", expected=str(expect_digest), actual=str(digest))])
            if bundle_dir is not None:
                more = find_bundles(bundle_dir, digest.hex)
                # VSAs by digest beside the bundles (docs/vsa.md)
                kept = find_bundles(bundle_dir, digest.hex, suffixes=(".vsa.jsonl",))
        given = evidence
        if more:
            given = replace(given, bundles=[*path_texts(evidence.bundles, "bundles"), *more])
        if kept:
            given = replace(given, vsas=[*path_texts(evidence.vsas, "vsas"), *kept])
        admission = admit(art, policy=policy, command=list(command), evidence=given,
                          options=replace(options, defer_audit=True))
    except BaseException:
        art.close()
        raise
    return Opened(found=os.fspath(found), art=art, admission=admission)


def interpreter_options(options: AdmitOptions, path: str) -> AdmitOptions:
    """What a ``#!`` script's interpreter at ``path`` is admitted with, from the script's own ``options``:
    the same trust roots, shims, cache, audit and interactivity, under the interpreter's own name, and
    none of the script's evidence or keys, which are about the script's bytes (the interpreter's bundles
    are found by its digest in the same ``bundle_dir``). The one rule for ``exec``, hooks, the bridge's
    call loop and probes."""
    return AdmitOptions(name=path_name(path), shim_dir=options.shim_dir, trusted_root=options.trusted_root,
                        staging=options.staging, interactive=options.interactive, audit=options.audit,
                        audit_log=options.audit_log, cache=options.cache)


def expected_digest(text: str | Digest | None) -> Digest | None:
    """``--expect-digest``'s value: ``sha256:<64 lowercase hex>`` (the digest admissions record), or a
    ``Digest``; anything else is a usage error, never ignored."""
    if text is None or isinstance(text, Digest):
        if isinstance(text, Digest) and text.algorithm != "sha256":
            raise UsageError(f"--expect-digest must be a sha256 digest, got {text.algorithm}")
        return text
    try:
        digest = Digest.parse(text)
    except MalformedInputError as err:
        raise UsageError(f"--expect-digest: {err.message}") from None
    if digest.algorithm != "sha256":
        raise UsageError(f"--expect-digest must be 'sha256:<hex>', got {text!r:.80}")
    return digest


def pinned_argv(path: str, digest: str | Digest, args: Sequence[str], *,
                program: Sequence[str] = ("atip-trust",), options: Sequence[str] = ()) -> list[str]:
    """The command an agent hook runs instead of an allowed program (Claude Code ``updatedInput``):
    ``PROGRAM exec --expect-digest sha256:<hex> [OPTIONS] -- PATH ARGS...``, so what runs is the file
    admitted, with exactly these bytes, and admitted again. ``path``: the absolute path the program was
    found at (as the shell would find it: not resolved further, so a multi-call binary keeps its name);
    ``options``: exec's own (``--policy FILE``, ``--bundle-dir DIR``: the evidence the hook used).
    ``shlex.join`` of it is one shell command whose words reach the tool unchanged."""
    if not os.path.isabs(path):
        raise UsageError(f"a pinned command needs the program's absolute path, got {path!r:.200}")
    pin = expected_digest(digest)
    assert pin is not None
    return [*program, "exec", "--expect-digest", str(pin), *options, "--", path, *args]


def sealed_script(script: Opened) -> int:
    """A sealed copy of the admitted ``#!`` script for its interpreter to read at ``/dev/fd/N``
    (``Artifact.sealed_copy``), holding exactly the bytes whose digest the admission verified; the
    caller closes it. Bytes that no longer hash to that digest are refused (``CHANGED_SINCE_VERIFIED``)."""
    admitted = script.admission.report.digests.get("sha256")
    try:
        if admitted is None:
            raise ArtifactAccessError("the admission recorded no sha256", path=script.found)
        return script.art.sealed_copy(Digest.parse(_sha(admitted)))
    except ArtifactAccessError as err:
        raise ExecRefused("deny", [Reason(
            "CHANGED_SINCE_VERIFIED", f"{script.found}'s bytes differ from the bytes verified: {err.message}",
            expected=_sha(admitted or "?"), actual="other bytes")], script.admission) from None


def read_shebang(art: Artifact) -> tuple[str, str | None] | None:
    """The interpreter and its one optional argument from a ``#!`` line, as the kernel splits it
    (execve(2): everything after the interpreter up to the newline is one argument), or None."""
    head = os.pread(art.fd, SHEBANG_MAX, 0)
    if not head.startswith(b"#!"):
        return None
    line = head[2:].split(b"\n", 1)[0]
    if b"\n" not in head[2:] and len(head) == SHEBANG_MAX:
        raise ExecRefused("deny", [Reason("SCRIPT_SHEBANG_TOO_LONG",
                                          f"the #! line is longer than {SHEBANG_MAX} bytes",
                                          expected=f"<= {SHEBANG_MAX} bytes", actual="longer")])
    try:
        text = line.decode("utf-8").strip(" \t")
    except UnicodeDecodeError:
        raise ExecRefused("deny", [Reason("SCRIPT_INTERPRETER_UNKNOWN",
                                          "the #! line is not UTF-8 text")]) from None
    parts = text.split(None, 1)
    if not parts:
        raise ExecRefused("deny", [Reason("SCRIPT_INTERPRETER_UNKNOWN", "the #! line names no interpreter")])
    return parts[0], (parts[1].strip(" \t") if len(parts) > 1 else None)


def _interpreter_path(interp: str, arg: str | None, env: Mapping[str, str]) -> tuple[str, list[str]]:
    """The interpreter file to open and the argv words before the script: ``#!/abs/path [arg]``, or
    ``#!/usr/bin/env NAME`` with NAME looked up once on the tool's PATH (env itself is not run)."""
    if not os.path.isabs(interp):
        raise ExecRefused("deny", [Reason(
            "SCRIPT_INTERPRETER_UNKNOWN", f"the #! interpreter {interp!r} is not an absolute path",
            expected="an absolute path or /usr/bin/env NAME", actual=interp)])
    if os.path.basename(interp) == "env":
        if arg is None or any(c.isspace() for c in arg) or arg.startswith("-") or "=" in arg or "/" in arg:
            raise ExecRefused("deny", [Reason(
                "SCRIPT_INTERPRETER_UNKNOWN",
                f"'#!{interp} {arg or ''}' is not the form '#!/usr/bin/env NAME': refused rather than "
                "guess what env would run", expected="#!/usr/bin/env NAME", actual=f"{interp} {arg or ''}")])
        return which(arg, env.get("PATH", os.defpath)), [arg]
    return interp, [interp, *([arg] if arg is not None else [])]


def admit_interpreter(
    script: Opened,
    shebang: tuple[str, str | None],
    *,
    policy: Policy,
    env: Mapping[str, str],
    options: AdmitOptions,
    bundle_dir: PathLike | None = None,
) -> tuple[Opened, list[str]]:
    """Open and admit the interpreter of a ``#!`` script (``exec.scripts: verify-interpreter``), with
    no command words (the rules see its name) and ``interpreter_options`` of the script's ``options``;
    returns it and the argv words before the script."""
    path, words = _interpreter_path(*shebang, env)
    return admit_file(path, policy=policy, command=(), options=interpreter_options(options, path),
                      bundle_dir=bundle_dir), words


def script_interpreter(
    script: Opened, *, policy: Policy, env: Mapping[str, str], options: AdmitOptions,
    bundle_dir: PathLike | None = None,
) -> tuple[Opened, list[str]] | None:
    """The one rule for running a ``#!`` file (``exec``, hooks, the bridge's call loop, probes): None
    for a binary; ``ExecRefused`` under ``exec.scripts: deny``; otherwise the interpreter opened and
    admitted (the caller closes it and applies ``interpreter_refusal``) and the argv words before the
    script's ``/dev/fd/N`` (N: the script's ``sealed_script`` copy, never its own file). ``options``:
    the script's own admission options (``interpreter_options`` derives the interpreter's)."""
    shebang = read_shebang(script.art)
    if shebang is None:
        return None
    if policy.exec_settings.scripts == "deny":
        raise script_denied(script, shebang)
    return admit_interpreter(script, shebang, policy=policy, env=env, options=options, bundle_dir=bundle_dir)


def interpreter_refusal(script: Opened, interp: Opened) -> ExecRefused | None:
    """Why a script may not run on this interpreter, or None when it may."""
    verdict = interp.admission
    if verdict.behavior != "allow":
        return ExecRefused(verdict.behavior, [Reason(
            "SCRIPT_INTERPRETER_NOT_ADMITTED",
            f"the interpreter {interp.found} of #! script {script.found} is not admitted "
            f"({verdict.report.trust_level.name}, {verdict.behavior}): "
            + "; ".join(r.message for r in verdict.decision.reasons),
            rule="exec.scripts", expected="allow", actual=verdict.behavior)], script.admission)
    if read_shebang(interp.art) is not None:
        return ExecRefused("deny", [Reason(
            "SCRIPT_INTERPRETER_UNKNOWN", f"the interpreter {interp.found} is itself a #! script",
            expected="a binary interpreter", actual="a #! script")], script.admission)
    return None


def script_denied(script: Opened, shebang: tuple[str, str | None]) -> ExecRefused:
    return ExecRefused("deny", [Reason(
        "SCRIPT_DENIED", f"{script.found} is a #! script and policy exec.scripts is deny",
        rule="exec.scripts", expected="a binary", actual=f"#!{shebang[0]}")], script.admission)


def _identity_now(path: str) -> FileIdentity | None:
    try:
        return FileIdentity.from_stat(os.stat(path))
    except OSError:
        return None


def check_unchanged(opened: Opened) -> list[Reason]:
    """Right before exec: the descriptor's identity, the path it was found at, the digest again."""
    art, admitted = opened.art, opened.admission.report.digests.get("sha256")
    what = f"{opened.found}"
    now = _identity_now(opened.found)
    moved = now is None or (now.dev, now.inode) != (art.identity.dev, art.identity.inode)
    if moved:
        return [Reason(
            "REPLACED_SINCE_VERIFIED",
            f"{what} now names a different file than the one verified (replaced, renamed over, or a "
            "symlink changed): refused rather than run either", expected=art.identity.describe(),
            actual=now.describe() if now is not None else "missing")]
    try:
        art.exec_fd()
    except ArtifactAccessError as err:
        return [Reason("CHANGED_SINCE_VERIFIED", f"{what} was modified in place after it was verified: "
                       f"{err.message}", expected=art.identity.describe(), actual="modified")]
    if not art.unchanged():
        return [Reason("REPLACED_SINCE_VERIFIED", f"{what} (resolved to {art.path}) now names a different "
                       "file than the one verified", expected=art.identity.describe(), actual="another file")]
    again = hash_fd(art.fd, ("sha256",))["sha256"]
    if admitted is None or str(again) != _sha(admitted):
        return [Reason("CHANGED_SINCE_VERIFIED",
                       f"{what}'s bytes differ from the bytes verified", expected=_sha(admitted or "?"),
                       actual=str(again))]
    return []


def _sha(value: str) -> str:
    return value if value.startswith("sha256:") else f"sha256:{value}"


def _refusal_record(base: dict[str, Any], reasons: Sequence[Reason], behavior: str) -> dict[str, Any]:
    record = dict(base)
    record["decision"] = behavior
    record["reasons"] = [*record.get("reasons", []), *(r.to_json() for r in reasons)]
    return record


def _refuse_interactive(main: Opened, name: str, args: list[str]) -> None:
    """RFC §3.6 interactive: a command that needs input nobody provides is refused, never run silently."""
    need = command_interactive_need(main.admission.metadata.doc if main.admission.metadata else None, args)
    if need is not None and not stdin_provides(need[0]):
        raise ExecRefused("deny", [Reason(
            "INTERACTIVE_REQUIRED", f"{name} {' '.join(args)} needs {need[1]}, and none is provided",
            rule="builtin:interactive", expected=need[1],
            actual="stdin closed, /dev/null or not a terminal")], main.admission)


def _make_plan(main: Opened, argv: list[str], env: dict[str, str], policy: Policy, options: AdmitOptions,
               bundle_dir: PathLike | None, sandbox: str | None, record: dict[str, Any],
               opened: list[Opened]) -> ExecPlan:
    """What runs: the tool, or a script's admitted interpreter (added to ``opened``), inside the boundary
    its verified effects give; ``record`` gains the exec and sandbox fields."""
    plan = ExecPlan(argv=argv, env=env, tool=main)
    planned = script_interpreter(main, policy=policy, env=env, options=options, bundle_dir=bundle_dir)
    if planned is not None:
        opened.append(planned[0])
        _plan_script(plan, *planned, record)
    record["exec"] = {"path": plan.exec_target.admission.path, "argv": plan.argv}
    plan.sandbox, sandbox_record = exec_boundary(main.admission, policy, sandbox)
    if sandbox_record is not None:
        record["sandbox"] = sandbox_record
    plan.audit_record = record
    return plan


def exec_verified(
    tool: PathLike,
    args: Sequence[str] = (),
    *,
    policy: Policy,
    evidence: Evidence | None = None,
    options: AdmitOptions | None = None,
    environ: Mapping[str, str] | None = None,
    bundle_dir: PathLike | None = None,
    before_exec: Callable[[ExecPlan], None] | None = None,
    expect_digest: str | Digest | None = None,
    sandbox: str | None = None,
    **keywords: Any,
) -> None:
    """Admit ``tool`` for ``args`` (its arguments, ``argv[1:]``) and replace this process with exactly
    the verified bytes (module docstring). Never returns normally.

    ``evidence`` and ``options`` are the tool's, as :func:`admission.admit.admit` takes them (their
    fields may also be given as keywords, ``bundles=[...]``, ``audit=False``: routed by name,
    admission/options.py ``split_keywords``, anything else a ``TypeError``); ``options.name`` defaults
    to the tool's name. ``environ``: the environment to filter through policy ``exec.env`` (default:
    this process's). ``bundle_dir`` finds bundles by digest for the tool and for a script's
    interpreter. ``before_exec`` is called with the plan after the audit line and before the last
    checks (a runtime's, or a test's, hook point). ``expect_digest`` (``"sha256:<hex>"``): the tool
    file must have exactly these bytes, else ``ExecRefused`` (deny, ``EXPECTED_DIGEST_MISMATCH``)
    before admission; when they match, the admission still decides.
    """
    evidence, options = split_keywords("exec_verified", evidence, options, AdmitOptions, keywords)
    args = [str(a) for a in args]
    name = options.name or tool_name_of(tool)
    argv0 = os.fspath(tool)
    env = exec_environment(policy, environ)
    audit = options.audit
    target_log = audit_target(policy, audit, options.audit_log)
    log = os.fspath(target_log) if target_log is not None else None
    options = replace(options, name=name, audit_log=target_log)
    opened: list[Opened] = []
    #: The line for this exec so far (the admission's plus what runs); None until admission.
    record: dict[str, Any] | None = None
    written = False
    plan: ExecPlan | None = None
    found: str | None = None
    try:
        pinned = expected_digest(expect_digest)
        found = locate(tool, (os.environ if environ is None else environ).get("PATH", os.defpath))
        main = admit_file(found, policy=policy, command=args, evidence=evidence, options=options,
                          bundle_dir=bundle_dir, expect_digest=pinned)
        opened.append(main)
        record = dict(main.admission.audit_record, argv=[argv0, *args])
        if pinned is not None:
            record["expect_digest"] = str(pinned)  # the bytes an agent hook admitted this command for
        if main.admission.behavior != "allow":
            # The admission's own line says why (its reasons): nothing to add.
            raise ExecRefused(main.admission.behavior, main.admission.decision.reasons, main.admission)
        _refuse_interactive(main, name, args)
        plan = _make_plan(main, [argv0, *args], env, policy, options, bundle_dir, sandbox, record, opened)
        if audit:
            append_audit(record, log)
            written = True
        if before_exec is not None:
            before_exec(plan)
        problems = [p for o in opened for p in check_unchanged(o)]
        if problems:
            raise ExecRefused("deny", problems, main.admission)
        _execute(plan)
    except ExecRefused as refused:
        if audit:
            if record is None:
                record = {"tool": name, "argv": [argv0, *args], "decision": refused.behavior,
                          "reasons": [], **({"path": found} if found is not None else {})}
            own = refused.admission is not None and not written and \
                refused.reasons == refused.admission.decision.reasons
            append_audit(record if own else _refusal_record(record, refused.reasons, refused.behavior), log)
        raise
    except Exception as err:
        if audit:
            audit_failure(err, tool=name, command=args, policy=policy,
                          path=opened[0].admission.path if opened else None,
                          digest=opened[0].admission.report.digests.get("sha256") if opened else None,
                          audit_log=target_log)
        raise
    finally:
        for o in opened:
            o.art.close()
        if plan is not None and plan.script_fd >= 0:
            os.close(plan.script_fd)
        if plan is not None and plan.sandbox is not None:
            plan.sandbox.close(keep_tmp=False)


def planned_boundary(admission: Admission, policy: Policy, flag: str | None) -> tuple[Any, str]:
    """The boundary a run of ``admission`` gets and the mode (policy ``exec.sandbox`` tightened by
    ``flag``): ``(None, mode)`` under ``off`` or without a verified declaration. Refused (``ExecRefused``
    deny) when the declaration cannot become a boundary (``SANDBOX_PROFILE_INVALID``), or ``required``
    meets a kernel without what it needs (``SANDBOX_UNAVAILABLE``, naming the feature). ``exec``, the
    bridge's call loop and ``admit -v`` all ask here (execution/sandbox.py owns the rules)."""
    mode = sandbox.stricter_mode(policy.exec_settings.sandbox, flag)
    if mode == "off":
        return None, mode
    try:
        boundary = sandbox.boundary_for(admission)
    except sandbox.BoundaryError as err:
        raise ExecRefused("deny", [Reason(
            "SANDBOX_PROFILE_INVALID", f"the declared effects cannot become a boundary: {err.message}",
            rule="exec.sandbox", expected="declared paths that exist inside the working tree",
            actual=err.path or "?")], admission) from None
    missing = sandbox.missing_feature(boundary) if boundary is not None and mode == "required" else None
    if missing is not None:
        raise _unavailable(admission, missing)
    return boundary, mode


def _unavailable(admission: Admission, feature: str) -> ExecRefused:
    return ExecRefused("deny", [Reason(
        "SANDBOX_UNAVAILABLE", f"exec.sandbox is required and the kernel lacks {feature}",
        rule="exec.sandbox", expected=feature, actual="missing")], admission)


def exec_boundary(admission: Admission, policy: Policy, flag: str | None) -> tuple[Any, dict[str, Any] | None]:
    """``planned_boundary``, built (execution/sandbox.py ``arrange``): the ``Prepared`` boundary ``exec``
    enters (or None) and the record its audit line carries."""
    boundary, mode = planned_boundary(admission, policy, flag)
    try:
        return sandbox.arrange(boundary, mode)
    except sandbox.SandboxUnavailable as err:
        raise _unavailable(admission, err.feature) from None


EXIT_VIOLATION = 4


class EffectViolation(ExecRefused):
    """The tool ran and tried something its verified declaration rules out (``EFFECT_VIOLATION``):
    exit 4, an audit line, and its digest marked (state/broken.py)."""

    @property
    def exit_code(self) -> int:
        return EXIT_VIOLATION


def _execute_confined(plan: ExecPlan, fd: int, timeout_ms: int | None) -> None:
    """Run the tool inside ``plan.sandbox`` as a child (execution/confined.py) and end with its status,
    or raise ``EffectViolation`` when it tried to leave its boundary."""
    prepared = plan.sandbox
    code, tail = run_confined(prepared, fd, plan.argv, prepared.env(plan.env), timeout_ms)
    seen = sandbox.attempt_seen(prepared.boundary, code if code >= 0 else None, -code if code < 0 else None, tail)
    if seen is None:
        # As after execve, nothing of this process is left to run: its private folder is removed and
        # its output flushed, then it ends with the tool's status (a shell's 128+N for signal N),
        # without the interpreter's shutdown (~0.1 s of the wall clock, docs/adr/0002-sandbox.md).
        prepared.close()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError, AttributeError):
                pass
        os._exit(code if code >= 0 else 128 - code)
    admission = plan.tool.admission
    digest = _sha(admission.report.digests.get("sha256", "?"))
    mark_broken(digest, tool=admission.tool, attempt=seen, declared=prepared.boundary.to_json())
    raise EffectViolation("deny", [Reason(
        "EFFECT_VIOLATION", f"{admission.tool} {' '.join(admission.command)} tried {seen}, outside its "
        f"declared boundary ({prepared.boundary.describe()}); {digest} is marked and denied until "
        "'atip-trust cache clear-broken' clears it", rule="exec.sandbox",
        expected=prepared.boundary.describe(), actual=seen)], admission)


def _plan_script(plan: ExecPlan, interp: Opened, words: list[str], record: dict[str, Any]) -> None:
    """A ``#!`` tool (step 3) whose interpreter ``script_interpreter`` opened and admitted: recorded in
    ``record``, refused unless admitted, and ``plan`` set to run it on a sealed copy of the script."""
    script = plan.tool
    verdict = interp.admission
    record["interpreter"] = {"path": verdict.path, "digest": _sha(verdict.report.digests.get("sha256", "?")),
                             "trust_level": verdict.report.trust_level.name, "decision": verdict.behavior}
    refusal = interpreter_refusal(script, interp)
    if refusal is not None:
        raise refusal
    plan.interpreter = interp
    plan.script_fd = sealed_script(script)
    plan.argv = [*words, f"/dev/fd/{plan.script_fd}", *plan.argv[1:]]


def _execute(plan: ExecPlan) -> None:
    """Replace the process. A script's sealed copy stays open for its interpreter (``/dev/fd/N``);
    the script's own file and a binary's own descriptor are closed by the exec. Python ignores
    SIGPIPE and SIGXFSZ, and ignored signals survive execve(2): the tool gets the default
    dispositions a shell would give it."""
    target = plan.exec_target
    fd = target.art.fd
    if plan.script_fd >= 0:
        os.set_inheritable(plan.script_fd, True)  # the interpreter reads the sealed copy at /dev/fd/N
    os.set_inheritable(plan.tool.art.fd, False)  # never the script's own file (read lazily by path)
    os.set_inheritable(fd, False)  # a binary needs no descriptor of its own after exec
    for name in ("SIGPIPE", "SIGXFSZ"):
        sig = getattr(signal, name, None)
        if sig is not None:
            signal.signal(sig, signal.SIG_DFL)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
    contract = plan.tool.admission.contract
    if plan.sandbox is not None:  # a child (its timer is set there: fork(2) does not inherit timers)
        _execute_confined(plan, fd, contract.timeout_ms if contract is not None else None)
    if contract is not None and contract.timeout_ms is not None and hasattr(signal, "setitimer"):
        # AIP-14 timeout_ms is a hard ceiling: an interval timer survives execve(2) and SIGALRM's
        # default action ends the tool when it runs out.
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        signal.setitimer(signal.ITIMER_REAL, contract.timeout_ms / 1000)
    try:
        if os.execve in os.supports_fd:
            os.execve(fd, plan.argv, plan.env)
        else:  # no fexecve: the path, right after check_unchanged found it naming the verified file
            os.execve(target.art.path, plan.argv, plan.env)
    except OSError as err:
        raise ArtifactAccessError(f"cannot execute: {err.strerror}", path=str(target.found)) from err


__all__ = ["EXIT_VIOLATION", "EffectViolation", "ExecPlan", "ExecRefused", "exec_boundary", "planned_boundary", "Opened", "admit_file", "admit_interpreter", "interpreter_options",
           "interpreter_refusal",
           "script_denied", "check_unchanged", "exec_verified", "expected_digest", "find_bundles",
           "locate", "pinned_argv", "read_shebang", "sealed_script"]
