"""``atip-trust admit TOOL [--command "pr merge"] --policy FILE``: allow (0), deny (1), ask (3).

Flags -> ``admission.admit.admit`` (the library pipeline; its steps are documented there) -> render ->
exit code. The decision's audit line is written once the output is rendered, then the output is printed.

Any error is exit 2 and never an allow, and leaves an audit line (a deny with the error), also when the
policy itself failed to load; a failed audit write is such an error. If printing fails after the
decision's line was written, a second line records the failure, so the log's last word for the
invocation is the exit status the caller saw.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
from typing import TYPE_CHECKING, Any

from atip_trust._base.lazy import lazy_import
from atip_trust._version import __version__
from atip_trust.admission.admit import (
    Admission,
    admit,
    audit_failure,
    write_audit,
)
from atip_trust.admission.options import AdmitOptions
from atip_trust.cli.common import add_common_options, is_interactive
from atip_trust.cli.output import (
    add_report_file_flags,
    check_line,
    evidence_hint,
    json_text,
    one_line,
    reason_line,
    report_files,
    reports_to_sarif,
    write_report_files,
)
from atip_trust.cli.policy_flags import add_audit_flags, add_evidence_flags, add_policy_flags, policy_from_args
from atip_trust.errors import ArtifactAccessError
from atip_trust.evaluation.inputs import Evidence
from atip_trust.policy.model import Policy

if TYPE_CHECKING:
    from atip_trust.execution import exec, sandbox
else:
    # Only `admit -v`, which says which run-time boundary `exec` would give (docs/sandbox.md).
    exec = lazy_import("atip_trust.execution.exec")
    sandbox = lazy_import("atip_trust.execution.sandbox")


def register(sub: Any) -> None:
    p = add_common_options(sub.add_parser(
        "admit",
        help="decide whether a tool (or one of its commands) may run: allow / ask / deny",
        description="Verify a tool with the policy's trust anchors and decide. Exit 0 allow, 1 deny, "
        "2 cannot evaluate (a denial too), 3 ask. The managed org policy is applied automatically when "
        "it exists: /etc/atip-trust/org-policy.json (Linux), /Library/Application Support/atip-trust/"
        "org-policy.json (macOS); it must be owned by root or you and not group/other-writable. "
        "ATIP_TRUST_ORG_POLICY=FILE and --org-policy FILE add further org layers; org layers only "
        "tighten, and a local policy never widens them.",
    ))
    p.add_argument("tool", metavar="TOOL", help="tool name (looked up on PATH once) or path")
    p.add_argument("--command", dest="command_words", metavar="WORDS",
                   help='the command to decide for, e.g. "pr merge"')
    add_policy_flags(p)
    add_evidence_flags(p)
    p.add_argument("--fetch", action="store_true",
                   help="ask the policy's remote shim registries (trust.registries) for a shim by the "
                   "tool's digest; without it only cached verified shims and folder registries are "
                   "read (ATIP_OFFLINE forbids the network whatever is given)")
    p.add_argument("--interactive", choices=("auto", "always", "never"), default="auto",
                   help="who can answer an ask: auto (a terminal on stdin and CI unset), always (the "
                   "caller asks its user: a hook or agent runtime; exit 3), never (ask becomes deny)")
    p.add_argument("--non-interactive", action="store_true", help="the same as --interactive never")
    add_audit_flags(p)
    add_report_file_flags(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    policy = None
    try:
        # (1) Policies. A policy that fails to load is a decision too (a denial, exit 2): it is
        # audited like any other, to --audit-log or the default log, so that breaking the policy file
        # cannot make admissions leave no trace.
        policy = policy_from_args(args)
    except Exception as err:
        _audit_failure(args, err, policy)
        raise  # exit 2 from the one catch point (cli/common.py)
    # (2)-(5) in the library; the decision's own line waits until the output is ready (6).
    admission = admit(
        args.tool, policy=policy, command=args.command_words,
        evidence=Evidence(
            bundles=args.bundle, signature=args.signature, metadata=args.metadata,
            metadata_bundle=args.metadata_bundle, contract=args.contract, contract_bundle=args.contract_bundle,
            vsas=args.vsa),
        options=AdmitOptions(
            keys=args.key, shim_dir=args.shim_dir, trusted_root=args.trusted_root, staging=args.staging,
            fetch=args.fetch, interactive=is_interactive(args), audit=not args.no_audit,
            audit_log=args.audit_log, defer_audit=True, cache=not args.no_cache),
    )
    # (6) Render, audit, print: the line is written only for output that is ready to go, and a
    # failure to print after it is recorded as a second (error) line.
    try:
        text = _render(args.format, admission, verbose=getattr(args, "verbose", False))
        if getattr(args, "verbose", False) and args.format == "text":
            text += boundary_line(admission, policy)
        if not args.no_audit:
            write_audit(admission)
    except Exception as err:
        _audit_failure(args, err, policy, admission)
        raise
    try:
        write_report_files(report_files(args), lambda fmt: _render(fmt, admission))
        _emit(text)
    except Exception as err:
        _audit_failure(args, err, policy, admission)
        raise
    return admission.exit_code


def _audit_failure(args: argparse.Namespace, err: BaseException, policy: Policy | None,
                   admission: Admission | None = None) -> None:
    if args.no_audit:
        return
    warning = audit_failure(err, tool=args.tool, command=args.command_words, policy=policy,
                            path=admission.path if admission else None,
                            digest=admission.report.digests.get("sha256") if admission else None,
                            audit_log=admission.audit_log if admission else args.audit_log)
    if warning is not None:
        sys.stderr.write(f"atip-trust: warning: {one_line(warning)}\n")


def _render(fmt: str, admission: Admission, *, verbose: bool = False) -> str:
    """The output in ``fmt``; text with ``verbose`` also lists every check that did not pass (why a
    file that is present does not count: an unsigned or stale metadata file, an override ignored)."""
    report, decision = admission.report, admission.decision
    if fmt == "json":
        return json_text(admission.to_json())
    if fmt == "sarif":
        return json_text(reports_to_sarif([report.to_json(decision=decision)], version=__version__))
    line = " ".join([admission.tool, *admission.command])
    lines = [one_line(f"{decision.behavior}: {line} ({report.trust_level.name}, "
                      f"sha256:{report.digests.get('sha256')})")]
    lines.extend(reason_line(r) for r in decision.reasons)
    hint = evidence_hint(report.trust_level.name, len(report.attestations)) if decision.behavior != "allow" else None
    if hint:
        lines.append(f"  {hint}")
    if verbose:
        lines.extend(f"  {check_line(c)}" for c in report.checks if c.status != "pass")
    return "".join(x + "\n" for x in lines)


def boundary_line(admission: Admission, policy: Policy) -> str:
    """``admit -v``: the run-time boundary ``exec`` would give this command (docs/sandbox.md)."""
    try:
        boundary, mode = exec.planned_boundary(admission, policy, None)
    except exec.ExecRefused as refused:
        return "".join(reason_line(r) + "\n" for r in refused.reasons)
    if mode == "off":
        return "boundary: none (exec.sandbox off)\n"
    if boundary is None:
        return f"boundary: none (exec.sandbox {mode}; no verified declaration of effects to enforce)\n"
    missing = sandbox.missing_feature(boundary)
    tail = f"; NOT enforced here: the kernel lacks {missing}" if missing is not None else ""
    return one_line(f"boundary (exec.sandbox {mode}): {boundary.describe()}{tail}") + "\n"


def _emit(text: str) -> None:
    """Print the rendered decision; a failure (closed pipe, full disk) is an error, exit 2."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except (OSError, ValueError) as err:
        # Point fd 1 at /dev/null so the interpreter's own flush at exit cannot fail again and turn
        # the exit status into 120: exit 2 is what the caller must see.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
        except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
            pass
        reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        raise ArtifactAccessError(f"cannot write the decision to standard output: {reason}",
                                  path="<stdout>") from err
