"""``/v1/check-call``: the two library calls an agent runtime makes before it runs a model's call —
``admit`` the tool with its metadata, then ``check_call`` the call's command and arguments against
the admitted report and the same policy (agents/calls.py; docs/library.md) — for runtimes that are not
written in Python.

The policy and options come from ``serve``'s flags, parsed by ``admit``'s own parser, so a check-call
decides under exactly the policy an ``admit`` request would.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from atip_trust._base.files import read_capped
from atip_trust.admission.admit import admit
from atip_trust.admission.options import AdmitOptions
from atip_trust.agents.calls import check_call
from atip_trust.cli import cmd_admit
from atip_trust.cli.common import build_parser
from atip_trust.cli.policy_flags import policy_from_args
from atip_trust.errors import AtipTrustError
from atip_trust.evaluation.evaluate import Evidence

#: The request's fields: tool (required), name (the command path: words or one string), arguments, the
#: tool's evidence (paths, as admit takes them) and what the runtime gives the command's stdin.
FIELDS = frozenset({"tool", "name", "arguments", "metadata", "metadataBundle", "bundles", "stdin"})


def _words(value: Any) -> list[str] | None:
    if isinstance(value, str):
        return value.split()
    if isinstance(value, list) and all(isinstance(w, str) for w in value):
        return list(value)
    return None


def _refuse(message: str) -> tuple[int, dict[str, Any]]:
    return 2, {"exitCode": 2, "behavior": "deny", "error": message}


def check_call_request(req: dict[str, Any], flags: Sequence[str]) -> tuple[int, dict[str, Any]]:
    """Exit code (admit's meanings) and the JSON answer for one /v1/check-call request."""
    unknown = sorted(set(req) - FIELDS)
    if unknown:
        return _refuse(f"unknown fields: {', '.join(unknown)}")
    tool, name, arguments = req.get("tool"), _words(req.get("name", [])), req.get("arguments", {})
    bundles, stdin = req.get("bundles", []), req.get("stdin", "none")
    if not isinstance(tool, str) or not tool or name is None or not isinstance(arguments, dict):
        return _refuse("expected tool: string, name: words, arguments: object")
    if not isinstance(bundles, list) or not all(isinstance(b, str) for b in bundles) \
            or stdin not in ("none", "pipe", "tty"):
        return _refuse("expected bundles: [paths], stdin: none|pipe|tty")
    for key in ("metadata", "metadataBundle"):
        if req.get(key) is not None and not isinstance(req.get(key), str):
            return _refuse(f"expected {key}: a path")
    try:
        return _decide(req, tool, name, arguments, bundles, stdin, flags)
    except AtipTrustError as err:  # fails closed, with the library's own reason
        return _refuse(err.diagnostics())


def _decide(req: dict[str, Any], tool: str, name: list[str], arguments: dict[str, Any], bundles: list[str],
            stdin: Any, flags: Sequence[str]) -> tuple[int, dict[str, Any]]:
    args = build_parser({"admit": cmd_admit}, "admit").parse_args(["admit", tool, *flags])
    policy = policy_from_args(args)
    metadata_path = req.get("metadata")
    metadata = None
    if metadata_path is not None:
        metadata = read_capped(metadata_path, 4 << 20, what="metadata")
    admission = admit(
        tool, policy=policy, command=name,
        # The bytes read once serve both calls: check_call counts the effects as verified only for the
        # very bytes admit verified (agents/calls.py).
        evidence=Evidence(bundles=bundles, metadata=metadata, metadata_bundle=req.get("metadataBundle")),
        options=AdmitOptions(keys=args.key, shim_dir=args.shim_dir, trusted_root=args.trusted_root,
                             staging=args.staging, interactive=True, audit=not args.no_audit,
                             audit_log=args.audit_log, cache=not args.no_cache))
    decision = check_call(admission, metadata, name, arguments, policy, stdin=stdin)
    return decision.exit_code, {"exitCode": decision.exit_code, **decision.to_json(),
                                "admission": admission.to_json()}


__all__ = ["FIELDS", "check_call_request"]
