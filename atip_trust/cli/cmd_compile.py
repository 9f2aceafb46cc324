"""``atip-trust compile --provider P [--strict] [--policy FILE | --all] [METADATA...] [--tool NAME]``.

JSON ``{"provider", "tools", "blocked", "trust"}`` on standard output. Without ``--all`` each metadata
file's tool is admitted as ``admit`` admits it (its name looked up on PATH once, the bytes verified with
the policy's anchors and the tool's evidence, ``--bundle``, ``--bundle-dir`` and ``--key`` as ``admit``
and ``exec`` take them; the metadata file's signature ``FILE.bundle`` checked when present), then every
command is decided and only what policy allows (or asks about, as ``bridge.askAs`` says) is compiled
(bridge/surface.py); ``trust`` lists what was verified. ``--all`` compiles every command without a trust
decision, as the reference atip-bridge does, and says so: ``"trust": "not evaluated (--all)"``.

``--tool NAME`` takes the metadata from the tool itself, ``NAME --agent``, run only when policy lets it
be probed (bridge/probed.py: verify before probe; a registry-signed shim is used instead of running
it). A tool policy does not vouch for is never run: exit 1 with the reason.

Exit 0 when the surface was compiled, 1 when policy blocked every command, 2 when something could not
be evaluated (a tool not found, invalid metadata, a bad policy, a probe without usable metadata):
never a partial surface.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from atip_trust.admission.admit import Admission, load_admission_policy, write_audit
from atip_trust.admission.options import AdmitOptions
from atip_trust.bridge.compile import PROVIDERS, compile_tools
from atip_trust.bridge.probed import ProbeRefused, probe_surface_tool
from atip_trust.bridge.surface import SurfaceTool, compile_surface
from atip_trust.cli.common import add_common_options
from atip_trust.cli.output import dump_json, one_line
from atip_trust.errors import UsageError
from atip_trust.evaluation.inputs import Evidence
from atip_trust.execution.exec import admit_file, locate
from atip_trust.facts.metadata import MetadataDocument, load_metadata
from atip_trust.policy.model import Policy

NOT_EVALUATED = "not evaluated (--all)"


def register(sub: Any) -> None:
    p = add_common_options(sub.add_parser(
        "compile",
        help="compile ATIP metadata into OpenAI / Gemini / Anthropic tool definitions, only the "
        "commands policy admits",
        description="Provider tool definitions (one per leaf command, named tool_sub_command) for the "
        "commands the policy admits; denied ones are listed under 'blocked' with their reasons. Each "
        "tool is found on PATH by its metadata's name and verified as 'admit' verifies it. Output is "
        "JSON. Exit 0 compiled, 1 every command blocked, 2 cannot evaluate.",
    ))
    p.add_argument("metadata", nargs="*", metavar="METADATA", help="ATIP metadata file (a tool's --agent output)")
    p.add_argument("--tool", action="append", default=[], metavar="NAME",
                   help="take NAME's metadata from 'NAME --agent', run only when policy lets NAME be probed "
                   "(verified first); repeatable")
    ev = p.add_argument_group("the tools' evidence (as admit takes it)")
    ev.add_argument("-b", "--bundle", action="append", default=[], metavar="FILE",
                    help="Sigstore bundle for a METADATA file's tool (repeatable; a bundle about another "
                    "file does not apply to it)")
    ev.add_argument("--bundle-dir", metavar="DIR",
                    help="Sigstore bundles by digest (sha256/<hex>.sigstore.json), for every tool")
    ev.add_argument("--key", action="append", default=[], metavar="FILE",
                    help="PEM public key; when policy states trust.publicKeys it counts only if listed there")
    p.add_argument("--shim-dir", metavar="DIR",
                   help="signed shims by digest for --tool tools (then the tool is not run)")
    p.add_argument("--fetch", action="store_true",
                   help="for --tool tools, ask the policy's remote shim registries too")
    p.add_argument("--provider", required=True, choices=PROVIDERS, help="the provider's tool format")
    p.add_argument("--strict", action="store_true", help="OpenAI strict mode (ignored for other providers)")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--policy", metavar="FILE", help="local policy (default: the embedded default.json)")
    which.add_argument("--all", action="store_true",
                       help="compile every command with no trust decision (the reference atip-bridge's behaviour)")
    p.add_argument("--org-policy", metavar="FILE", help="an additional managed policy layer")
    p.add_argument("--trusted-root", "--custom-trusted-root", metavar="FILE", help="a Sigstore trusted_root.json")
    p.add_argument("--staging", action="store_true", help="use the embedded staging root")
    p.add_argument("--audit-log", metavar="FILE", help="audit log for the tools' admissions")
    p.add_argument("--no-audit", action="store_true", help="do not write the admissions' audit lines")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the verdict cache")
    p.set_defaults(func=run)


def _bundle_for(path: str) -> str | None:
    bundle = Path(path + ".bundle")
    return str(bundle) if bundle.is_file() else None


def run(args: argparse.Namespace) -> int:
    if args.format == "sarif":
        raise UsageError("compile prints provider tool definitions as JSON: --format sarif is not available")
    if not args.metadata and not args.tool:
        raise UsageError("give METADATA files or --tool NAME")
    docs: list[MetadataDocument] = [load_metadata(path) for path in args.metadata]
    if args.all:
        if args.tool:
            raise UsageError("--all makes no trust decision, and --tool needs one before the tool may run")
        if args.org_policy is not None:
            raise UsageError("--all makes no trust decision: --org-policy cannot apply to it")
        out = compile_tools(docs, args.provider, args.strict)
        dump_json({**out, "blocked": [], "trust": NOT_EVALUATED})
        return 0
    policy = load_admission_policy(args.policy, org_policy=args.org_policy)
    tools: list[SurfaceTool] = []
    trust: list[dict[str, Any]] = []
    for path, doc in zip(args.metadata, docs, strict=True):
        if doc.name is None:
            raise UsageError("the metadata names no tool to look up on PATH", path=path)
        tool = _admit_metadata_tool(args, policy, path, doc)
        assert tool.admission is not None
        tools.append(tool)
        trust.append(_trust_row(tool.admission, path))
    for name in args.tool:
        try:
            probed = probe_surface_tool(
                name, policy, bundle_dir=args.bundle_dir, shim_dir=args.shim_dir,
                trusted_root=args.trusted_root, staging=args.staging, audit=not args.no_audit,
                audit_log=args.audit_log, cache=not args.no_cache, fetch=args.fetch)
        except ProbeRefused as refused:
            sys.stderr.write(one_line(f"atip-trust: compile --tool {name}: {refused}") + "\n")
            return refused.exit_code
        assert probed.admission is not None
        tools.append(probed)
        trust.append(_trust_row(probed.admission, f"{name} --agent"
                                if probed.evidence.metadata is not None else "signed shim"))
    surface = compile_surface(tools, policy, args.provider, args.strict)
    dump_json({**surface, "trust": trust})
    return 1 if surface["blocked"] and not surface["tools"] else 0


def _admit_metadata_tool(args: argparse.Namespace, policy: Policy, path: str,
                         doc: MetadataDocument) -> SurfaceTool:
    """Admit the tool a METADATA file names (found on PATH once) with the tool's own evidence, as
    ``admit`` and ``exec`` take it: ``--bundle``, bundles by its digest in ``--bundle-dir``, ``--key``;
    the metadata's own signature is ``FILE.bundle``. The evidence is kept with the tool, so a call
    through the bridge admits it again the same way (bridge/loop.py)."""
    assert doc.name is not None
    evidence = Evidence(metadata=path, metadata_bundle=_bundle_for(path), bundles=list(args.bundle))
    options = AdmitOptions(name=doc.name, keys=list(args.key), trusted_root=args.trusted_root,
                           staging=args.staging, audit=not args.no_audit, audit_log=args.audit_log,
                           cache=not args.no_cache)
    opened = admit_file(locate(doc.name), policy=policy, command=[], evidence=evidence, options=options,
                        bundle_dir=args.bundle_dir)
    opened.art.close()
    if not args.no_audit:
        write_audit(opened.admission)
    return SurfaceTool.from_admission(opened.admission, doc, evidence, options, args.bundle_dir)


def _trust_row(admission: Admission, metadata: str) -> dict[str, Any]:
    return {
        "tool": admission.tool,
        "metadata": metadata,
        "path": admission.path,
        "sha256": admission.report.digests.get("sha256"),
        "trust_level": admission.report.trust_level.name,
        "effects_verified": admission.effects_verified,
    }
