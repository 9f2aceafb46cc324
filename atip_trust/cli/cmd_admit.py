"""``atip-trust admit TOOL [--command "pr merge"] --policy FILE``: allow (0), deny (1), ask (3).

Steps: (1) load and compose the policies (org, local, CLI flags); (2) resolve the tool once (a bare
name through PATH only, artifact.py) and hash it; (3) find evidence: ``--metadata``, ``--bundle``, or a
shim by digest in ``--shim-dir`` (``sha256/<hex>.json`` with ``.json.bundle``, RFC §4.3/§4.9), the
metadata read once; (4) verify the tool with the policy's anchors (evaluate.py) and, separately, the
metadata's own signature over the bytes that were read, and its binding to this tool's digest and name
(metadata_trust.py): a shim against the registry signers policy names, ``--metadata-bundle`` against the
policy's signers; only verified, bound metadata may relax capability gating (DESIGN.md principle 10) or
establish a ``requirements.metadataSources`` source; (5) decide; (6) render the output, append the audit
line, print.

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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from atip_trust._version import __version__
from atip_trust.cli.main import error_code, is_interactive
from atip_trust.cli.output import (
    json_text,
    one_line,
    reason_line,
    reports_to_sarif,
)
from atip_trust.errors import ArtifactAccessError, AtipTrustError, UsageError
from atip_trust.evaluate import Constraints, Evidence, evaluate
from atip_trust.facts.artifact import Artifact, resolve
from atip_trust.facts.effects import command_states
from atip_trust.facts.metadata import MetadataDocument, load_metadata
from atip_trust.facts.report import Decision, TrustLevel, TrustReport
from atip_trust.gate.metadata_trust import verify_metadata
from atip_trust.policy.compose import cli_layer, compose
from atip_trust.policy.constraints import choose_trusted_root, constraints_from_policy
from atip_trust.policy.decide import decide, to_agent_tool
from atip_trust.policy.load import default_policy_path, load_layer, org_layers
from atip_trust.policy.model import Policy, PolicyLayer
from atip_trust.policy.rules import split_command
from atip_trust.state.audit import append_audit, audit_error_record, audit_record


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


@dataclass
class _Known:
    """What is known so far about this admission, for the audit line of a failed evaluation."""

    tool: str
    words: list[str] = field(default_factory=list)
    path: str | None = None
    digest: str | None = None
    policy: Policy | None = None
    #: The decision's own line was written (a later failure adds an error line after it).
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
        sys.stderr.write(f"atip-trust: warning: {one_line(audit_err.diagnostics())}\n")


def run(args: argparse.Namespace) -> int:
    known = _Known(tool=Path(args.tool).name if "/" in args.tool else args.tool)
    try:
        # (1) Policies. A policy that fails to load is a decision too (a denial, exit 2): it is
        # audited like any other, to --audit-log or the default log, so that breaking the policy file
        # cannot make admissions leave no trace.
        known.policy = load_policies(args)
        return _admit(args, known.policy, known)
    except Exception as err:
        if not args.no_audit:
            _audit_failure(args, known, err)
        raise  # exit 2 from the one catch point (cli/main.py)


def _admit(args: argparse.Namespace, policy: Policy, known: _Known) -> int:
    interactive = is_interactive(args)
    # The policy's pinned root; a flag may only pick one of the roots it pins (exit 2 otherwise).
    trust_root = choose_trusted_root(policy, args.trusted_root, args.staging)
    words = list(split_command(args.command_words))
    known.words = words

    # (2) Resolve once, open once, hash from the descriptor.
    path = resolve(args.tool)
    known.path = str(path)
    tool_name = known.tool
    if args.metadata_bundle and not args.metadata:
        raise UsageError("--metadata-bundle needs --metadata: the file it signs")
    with Artifact.open(path) as art:
        digests = art.digests(("sha256", "sha512"))
        hexdigest = digests["sha256"].hex
        known.digest = hexdigest

        # (3) Evidence. The metadata file is read once: its signature is checked over these bytes and
        # its claims and effects are parsed from them (metadata_trust.py).
        meta_path = Path(args.metadata) if args.metadata else None
        meta_bundle = Path(args.metadata_bundle) if args.metadata_bundle else None
        from_shim = False
        if meta_path is None and args.shim_dir:
            meta_path, meta_bundle = _find_shim(args.shim_dir, hexdigest)
            from_shim = meta_path is not None
        doc: MetadataDocument | None = None
        if meta_path is not None:
            # A shim found by digest must carry that digest (RFC §4.5); a mismatch is exit 2.
            doc = load_metadata(meta_path, lookup_digest=digests["sha256"] if from_shim else None)

        # (4) Verify the tool with the policy's anchors.

        base = Constraints(keys=tuple(Path(k) for k in args.key))
        constraints = constraints_from_policy(policy, base)
        evidence = Evidence(
            bundles=tuple(Path(b) for b in args.bundle),
            signature=Path(args.signature) if args.signature else None,
            metadata=doc,
        )
        report: TrustReport = evaluate(art, evidence, constraints, trust_root)

    # ... then the metadata's own signature and its binding to this tool.
    effects_verified = False
    metadata_source: str | None = None
    states = None
    effects_unknown: str | None = None
    if doc is not None:
        states, effects_unknown = command_states(doc.doc, words)
        signers = ([s for reg in policy.registries for s in reg.signers] if from_shim
                   else list(policy.signers))
        trust = verify_metadata(doc, meta_bundle, signers, trust_root, digests=digests,
                                tool_name=tool_name, signer_kind="registry" if from_shim else "policy")
        report.checks.extend(trust.checks)
        effects_verified = trust.verified
        metadata_source = trust.source

    # (5) Decide.
    decision = decide(
        policy,
        report,
        tool_name=tool_name,
        command=words,
        effects=states,
        effects_verified=effects_verified,
        interactive=interactive,
        metadata_source=metadata_source,
        effects_unknown=effects_unknown,
    )
    report.decision = decision

    # (6) Render, audit, print: the line is written only for output that is ready to go, and a
    # failure to print after it is recorded by run() as a second (error) line.
    text = _render(args, report, decision, tool_name, words, effects_verified, metadata_source)
    if not args.no_audit:
        append_audit(audit_record(decision, report, tool=tool_name, command=words), args.audit_log)
        known.audited = True
    _emit(text)
    return decision.exit_code


def _render(
    args: argparse.Namespace,
    report: TrustReport,
    decision: Decision,
    tool_name: str,
    words: list[str],
    effects_verified: bool,
    metadata_source: str | None,
) -> str:
    if args.format == "json":
        out = report.to_json()
        out["tool"] = tool_name
        out["command"] = words
        out["effects_verified"] = effects_verified
        out["metadata_source"] = metadata_source
        out["agent_tool_decision"] = to_agent_tool(decision)
        return json_text(out)
    if args.format == "sarif":
        return json_text(reports_to_sarif([report], version=__version__))
    line = " ".join([tool_name, *words])
    lines = [one_line(f"{decision.behavior}: {line} ({report.trust_level.name}, "
                      f"sha256:{report.digests.get('sha256')})")]
    lines.extend(reason_line(r) for r in decision.reasons)
    return "".join(x + "\n" for x in lines)


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
