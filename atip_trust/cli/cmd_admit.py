"""``atip-trust admit TOOL [--command "pr merge"] --policy FILE``: allow (0), deny (1), ask (3).

Steps: (1) load and compose the policies (org, local, CLI flags); (2) resolve the tool once and hash it;
(3) find evidence: ``--metadata``, ``--bundle``, or a shim by digest in ``--shim-dir``
(``sha256/<hex>.json`` with ``.json.bundle``, RFC §4.3/§4.9); (4) verify the tool with the policy's
anchors (evaluate.py) and, separately, the metadata's own signature: a shim against the registry signers
policy names, ``--metadata-bundle`` against the policy's signers; only verified metadata may relax
capability gating (DESIGN.md principle 10); (5) decide; (6) append the audit line; print.
Any error is exit 2 and never an allow; an error after the policy loaded is audited too (a deny line
with the error), so a tool that makes evaluation fail leaves the same trace as one that is denied.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..artifact import Artifact, resolve
from ..errors import AtipTrustError, UsageError
from ..policy import (
    PolicyLayer,
    append_audit,
    audit_record,
    cli_layer,
    compose,
    load_layer,
    to_agent_tool,
)
from ..policy.constraints import constraints_from_policy, trusted_root_choice
from ..policy.effects import command_states
from ..policy.load import default_policy_path, org_layers
from ..policy.model import Policy
from ..policy.rules import split_command
from ..policy.audit import audit_error_record
from ..report import TrustLevel, TrustReport
from .main import error_code, is_interactive
from .output import dump_json


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "admit",
        parents=[common],
        help="decide whether a tool (or one of its commands) may run: allow / ask / deny",
        description="Verify a tool with the policy's trust anchors and decide. Exit 0 allow, 1 deny, "
        "2 cannot evaluate (a denial too), 3 ask. The managed org policy is applied automatically when "
        "it exists: /etc/atip-trust/org-policy.json (Linux), /Library/Application Support/atip-trust/"
        "org-policy.json (macOS); it must be owned by root or you and not group/other-writable. "
        "ATIP_TRUST_ORG_POLICY=FILE and --org-policy FILE add further org layers; org layers only "
        "tighten, and a local policy never widens them.",
    )
    p.add_argument("tool", metavar="TOOL", help="tool name (looked up on PATH once) or path")
    p.add_argument("--command", dest="command_words", metavar="WORDS", help='the command to decide for, e.g. "pr merge"')
    p.add_argument("--policy", metavar="FILE", help="local policy (default: the embedded default.json)")
    p.add_argument("--org-policy", metavar="FILE",
                   help="an additional managed policy layer (the standard org policy still applies); "
                   "refused if group/other-writable or not owned by root or you")
    p.add_argument("--metadata", metavar="FILE", help="ATIP metadata or shim for the tool")
    p.add_argument("--metadata-bundle", metavar="FILE",
                   help="Sigstore bundle over the metadata file, checked against the policy's signers")
    p.add_argument("--bundle", action="append", default=[], metavar="FILE",
                   help="Sigstore bundle for the tool (repeatable)")
    p.add_argument("--key", action="append", default=[], metavar="FILE",
                   help="PEM public key; when policy states trust.publicKeys it counts only if listed there")
    p.add_argument("--signature", metavar="FILE", help="detached signature for --key")
    p.add_argument("--shim-dir", metavar="DIR", help="local shim folder, looked up by digest")
    p.add_argument("--trusted-root", metavar="FILE", help="a Sigstore trusted_root.json")
    p.add_argument("--staging", action="store_true", help="use the embedded staging root")
    p.add_argument("--min-trust-level", metavar="LEVEL",
                   choices=[lvl.name for lvl in TrustLevel], help="tighten: require at least LEVEL")
    p.add_argument("--non-interactive", action="store_true",
                   help="no one can answer a prompt: ask becomes deny (also when CI is set)")
    p.add_argument("--audit-log", metavar="FILE", help="audit log (default: the user state dir)")
    p.add_argument("--no-audit", action="store_true", help="do not write an audit line")
    p.set_defaults(func=run)


def load_policies(args: argparse.Namespace) -> Policy:
    layers: list[PolicyLayer] = [load_layer(args.policy or default_policy_path(), source="local")]
    layers.extend(org_layers([args.org_policy] if args.org_policy else []))
    if args.min_trust_level:
        layers.append(cli_layer(min_trust_level=args.min_trust_level))
    return compose(layers)


def _find_shim(shim_dir: str, hexdigest: str) -> tuple[Path | None, Path | None]:
    base = Path(shim_dir)
    for cand in (base / "sha256" / f"{hexdigest}.json", base / f"{hexdigest}.json"):
        if cand.is_file():
            bundle = Path(str(cand) + ".bundle")
            return cand, bundle if bundle.is_file() else None
    return None, None


def _metadata_verified(
    metadata: Path, bundle: Path | None, signers: list[Any], trust_root: Any
) -> bool:
    """True only when the metadata file's own bundle verifies against ``signers`` named in policy."""
    if bundle is None or not signers:
        return False
    from ..evaluate import Constraints, Evidence, evaluate
    from ..identity import IdentityRule

    constraints = Constraints(signers=tuple(IdentityRule.coerce(s) for s in signers))
    with Artifact.open(metadata) as art:
        rep = evaluate(art, Evidence(bundles=(bundle,)), constraints, trust_root)
    return rep.trust_level is TrustLevel.VERIFIED


@dataclass
class _Known:
    """What is known so far about this admission, for the audit line of a failed evaluation."""

    tool: str
    words: list[str] = field(default_factory=list)
    path: str | None = None
    digest: str | None = None
    policy: Policy | None = None
    audited: bool = False


def _audit_failure(args: argparse.Namespace, known: _Known, err: Exception) -> None:
    """Append the deny line for an evaluation that failed; never masks the original error."""
    if isinstance(err, AtipTrustError):
        message = err.diagnostics()
        where = err.path
    else:  # an unexpected exception's text could hold anything: record its type only
        message, where = f"internal error: {type(err).__name__}", None
    record = audit_error_record(
        code=error_code(err), error_type=type(err).__name__, message=message, where=where,
        tool=known.tool, command=known.words, path=known.path, digest=known.digest,
        policy_digest=known.policy.digest if known.policy is not None else None,
        mode=known.policy.mode if known.policy is not None else None,
    )
    try:
        append_audit(record, args.audit_log)
    except AtipTrustError as audit_err:
        sys.stderr.write(f"atip-trust: warning: {audit_err.diagnostics()}\n")


def run(args: argparse.Namespace) -> int:
    known = _Known(tool=Path(args.tool).name if "/" in args.tool else args.tool)
    # (1) Policies.
    try:
        known.policy = load_policies(args)
    except Exception as err:
        # No policy, so no policy digest and no word from the policy on auditing: record the failure
        # only where the caller explicitly asked for a log. Writing to the default state directory for
        # every mistyped --policy would bury real decisions in noise (and create per-user state on
        # machines that never ran a decision); an operator who passes --audit-log wants every attempt.
        if args.audit_log and not args.no_audit:
            _audit_failure(args, known, err)
        raise
    try:
        return _admit(args, known.policy, known)
    except Exception as err:
        if not args.no_audit and not known.audited:
            _audit_failure(args, known, err)
        raise  # exit 2 from the one catch point (cli/main.py)


def _admit(args: argparse.Namespace, policy: Policy, known: _Known) -> int:
    interactive = is_interactive(args)
    if args.staging and args.trusted_root:
        raise UsageError("give --staging or --trusted-root, not both")
    from ..trustroot import default_trust_root

    staging, root_path = trusted_root_choice(policy)
    trust_root = default_trust_root(
        staging=args.staging or (staging and not args.trusted_root),
        path=args.trusted_root or root_path,
    )
    words = list(split_command(args.command_words))
    known.words = words

    # (2) Resolve once, open once, hash from the descriptor.
    path = resolve(args.tool)
    known.path = str(path)
    tool_name = known.tool
    with Artifact.open(path) as art:
        hexdigest = str(art.digest("sha256")).split(":", 1)[1]
        known.digest = hexdigest

        # (3) Evidence.
        metadata = Path(args.metadata) if args.metadata else None
        metadata_bundle = Path(args.metadata_bundle) if args.metadata_bundle else None
        shim_bundle: Path | None = None
        from_shim = False
        if metadata is None and args.shim_dir:
            metadata, shim_bundle = _find_shim(args.shim_dir, hexdigest)
            from_shim = metadata is not None

        # (4) Verify the tool with the policy's anchors, then the metadata's own signature.
        from ..evaluate import Constraints, Evidence, evaluate

        base = Constraints(keys=tuple(Path(k) for k in args.key))
        constraints = constraints_from_policy(policy, base)
        evidence = Evidence(
            bundles=tuple(Path(b) for b in args.bundle),
            signature=Path(args.signature) if args.signature else None,
            metadata=metadata,
        )
        report: TrustReport = evaluate(art, evidence, constraints, trust_root)

    effects_verified = False
    states = None
    effects_unknown: str | None = None
    if metadata is not None:
        from ..digest import Digest
        from ..metadata import load_metadata

        doc = load_metadata(
            metadata, lookup_digest=Digest.parse(f"sha256:{hexdigest}") if from_shim else None
        )
        states, effects_unknown = command_states(doc.doc, words)
        if from_shim:
            registry_signers = [s for reg in policy.registries for s in reg.signers]
            effects_verified = _metadata_verified(metadata, shim_bundle, registry_signers, trust_root)
        elif metadata_bundle is not None:
            effects_verified = _metadata_verified(
                metadata, metadata_bundle, list(policy.signers), trust_root
            )

    # (5) Decide.
    decision = policy.decide(
        report,
        tool_name=tool_name,
        command=words,
        effects=states,
        effects_verified=effects_verified,
        interactive=interactive,
        effects_unknown=effects_unknown,
    )
    report.decision = decision

    # (6) Audit, then output.
    if not args.no_audit:
        known.audited = True  # one line per decision, even if writing it fails below
        append_audit(audit_record(decision, report, tool=tool_name, command=words), args.audit_log)
    if args.format == "json":
        out = report.to_json()
        out["tool"] = tool_name
        out["command"] = words
        out["effects_verified"] = effects_verified
        out["agent_tool_decision"] = to_agent_tool(decision)
        dump_json(out)
    elif args.format == "sarif":
        from .. import __version__
        from .output import reports_to_sarif

        dump_json(reports_to_sarif([report], version=__version__))
    else:
        line = " ".join([tool_name, *words])
        sys.stdout.write(f"{decision.behavior}: {line} ({report.trust_level.name}, "
                         f"sha256:{hexdigest})\n")
        for r in decision.reasons:
            extra = ""
            if r.expected is not None or r.actual is not None:
                extra = f" (expected {r.expected!r}, actual {r.actual!r})"
            sys.stdout.write(f"  {r.code}: {r.message}{extra}" + (f" [{r.rule}]" if r.rule else "")
                             + "\n")
    return decision.exit_code
