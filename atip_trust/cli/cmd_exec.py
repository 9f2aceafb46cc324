"""``atip-trust exec [--policy FILE] [--expect-digest sha256:HEX] [flags] -- TOOL [ARGS...]``: admit, then
become exactly the verified bytes.

Flags -> ``execution.exec.exec_verified`` (its steps are documented there). Everything after TOOL is the
tool's, word for word (a ``--``, an option of this command's, anything): an agent hook that rewrites
``git diff -- -x`` into ``atip-trust exec --expect-digest sha256:... -- /usr/bin/git diff -- -x`` must
run exactly that ``git`` command line. On success this process IS the
tool after ``execve``: the tool's exit status and signals are what the caller sees. A refusal prints
the reasons on stderr and exits 1 (deny) or 3 (ask); an error exits 2. Either leaves an audit line.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from atip_trust.admission.admit import audit_failure
from atip_trust.admission.options import AdmitOptions
from atip_trust.cli.common import add_common_options, is_interactive
from atip_trust.cli.output import evidence_hint, one_line, reason_line
from atip_trust.cli.policy_flags import add_audit_flags, add_evidence_flags, add_policy_flags, policy_from_args
from atip_trust.errors import UsageError
from atip_trust.evaluation.inputs import Evidence
from atip_trust.execution.exec import EXIT_VIOLATION, ExecRefused, exec_verified


def register(sub: Any) -> None:
    p = add_common_options(sub.add_parser(
        "exec",
        help="admit a tool, then run exactly the bytes that were verified",
        description="Admit TOOL for ARGS as 'admit' does, then replace this process with the verified "
        "file descriptor (never the name again). The tool's exit status and signals pass through; a "
        "refusal exits 1 (deny) or 3 (ask) with reasons on stderr, an error 2. Policy 'exec.scripts' "
        "and 'exec.env' say how #! scripts and the environment are handled.",
    ))
    add_policy_flags(p)
    add_evidence_flags(p)
    p.add_argument("--bundle-dir", metavar="DIR",
                   help="Sigstore bundles by digest (DIR/sha256/<hex>.sigstore.json) for the tool and a "
                   "script's interpreter")
    p.add_argument("--interactive", choices=("auto", "always", "never"), default="auto",
                   help="who can answer an ask (as for admit); exec never runs a tool on ask: exit 3")
    p.add_argument("--non-interactive", action="store_true", help="the same as --interactive never")
    p.add_argument("--expect-digest", metavar="sha256:HEX",
                   help="run TOOL only if its bytes have this sha256 (what an agent hook pins when it "
                   "rewrites an allowed command); the policy's admission still applies")
    p.add_argument("--sandbox", choices=("off", "preferred", "required"),
                   help="the run-time boundary from the tool's verified effects (docs/sandbox.md): only "
                   "tightens policy exec.sandbox (the strictest of the two applies); a tool that tries "
                   "to leave its boundary exits 4 (EFFECT_VIOLATION)")
    add_audit_flags(p)
    p.add_argument("tool", metavar="TOOL", help="tool name (looked up on PATH once) or path")
    p.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS", help="the tool's arguments")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # argparse has taken the '--' before TOOL; what follows TOOL is passed through untouched, a
    # leading '--' included ('exec -- /bin/rm -- -rf' removes the file named '-rf').
    tool_args = list(args.args)
    try:
        if args.tool.startswith("-"):
            raise UsageError(f"expected the tool after '--', actual option {args.tool!r}")
        policy = policy_from_args(args)
    except Exception as err:
        if not args.no_audit:
            audit_failure(err, tool=args.tool, command=tool_args, audit_log=args.audit_log)
        raise
    try:
        evidence = Evidence(bundles=args.bundle, signature=args.signature, metadata=args.metadata,
                            metadata_bundle=args.metadata_bundle, contract=args.contract,
                            contract_bundle=args.contract_bundle, vsas=args.vsa)
        options = AdmitOptions(keys=args.key, shim_dir=args.shim_dir, trusted_root=args.trusted_root,
                               staging=args.staging, interactive=is_interactive(args), audit=not args.no_audit,
                               audit_log=args.audit_log, cache=not args.no_cache)
        exec_verified(args.tool, tool_args, policy=policy, evidence=evidence, options=options,
                      bundle_dir=args.bundle_dir, expect_digest=args.expect_digest, sandbox=args.sandbox)
    except ExecRefused as refused:
        line = " ".join([args.tool, *tool_args])
        what = "stopped (EFFECT_VIOLATION)" if refused.exit_code == EXIT_VIOLATION else f"refused ({refused.behavior})"
        sys.stderr.write(one_line(f"atip-trust: exec {what}: {line}") + "\n")
        for r in refused.reasons:
            sys.stderr.write(reason_line(r) + "\n")
        report = refused.admission.report if refused.admission is not None else None
        hint = evidence_hint(report.trust_level.name, len(report.attestations)) if report is not None else None
        if hint:
            sys.stderr.write(f"  {hint}\n")
        return refused.exit_code
    raise UsageError("exec returned without running the tool")  # unreachable: execve replaces us


__all__ = ["register", "run"]
