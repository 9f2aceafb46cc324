"""The audit log: one JSON line per decision, appended and fsynced (issue 5 item 7).

Written to ``--audit-log FILE`` or ``<platformdirs user_state_dir("atip-trust")>/audit.jsonl``. Lines
carry digests, the signer identity, the decision and its reasons; never environment, arguments beyond the
command words, or key material.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import platformdirs

from atip_trust.errors import ArtifactAccessError
from atip_trust.facts.report import Decision, TrustReport


def default_audit_path() -> Path:
    return Path(platformdirs.user_state_dir("atip-trust")) / "audit.jsonl"


def _sha256(value: str | None) -> str | None:
    """``sha256:<hex>``, the form every other digest in the line (and the CLI output) uses."""
    if value is None or value.startswith("sha256:"):
        return value
    return f"sha256:{value}"


def audit_record(
    decision: Decision,
    report: TrustReport,
    *,
    tool: str,
    command: list[str] | None = None,
    when: datetime | None = None,
) -> dict[str, Any]:
    return {
        "time": (when or datetime.now(UTC)).isoformat(),
        "tool": tool,
        "command": command or [],
        "path": report.path,
        "digest": _sha256(report.digests.get("sha256")),
        "trust_level": report.trust_level.name,
        "identity": report.signature.identity,
        "issuer": report.signature.issuer,
        "decision": decision.behavior,
        "mode": decision.mode,
        "rule_source": decision.rule_source,
        "reasons": [r.to_json() for r in decision.reasons],
        "policy_digest": decision.policy_digest,
        "report_digest": decision.report_digest,
    }


def audit_error_record(
    *,
    code: str,
    error_type: str,
    message: str,
    where: str | None = None,
    tool: str | None,
    command: list[str] | None = None,
    path: str | None = None,
    digest: str | None = None,
    policy_digest: str | None = None,
    mode: str | None = None,
    when: datetime | None = None,
) -> dict[str, Any]:
    """The line for a decision that could not be evaluated (exit 2): a denial, with the error.

    Same keys as ``audit_record`` (what is unknown is null) plus ``error``; the message is the error's
    one-line diagnostics, which name files and JSON paths, never their contents or the environment.
    """
    reason = {"code": code, "message": message, "rule": None, "expected": None, "actual": None}
    return {
        "time": (when or datetime.now(UTC)).isoformat(),
        "tool": tool,
        "command": command or [],
        "path": path,
        "digest": _sha256(digest),
        "trust_level": None,
        "identity": None,
        "issuer": None,
        "decision": "deny",
        "mode": mode,
        "rule_source": None,
        "reasons": [reason],
        "policy_digest": policy_digest,
        "report_digest": None,
        "error": {"code": code, "type": error_type, "message": message, "path": where},
    }


def append_audit(record: dict[str, Any], path: str | os.PathLike[str] | None = None) -> Path:
    """Append one line and fsync it; the file is created 0600 (it names tools and identities)."""
    target = Path(path) if path is not None else default_audit_path()
    line = (json.dumps(record, sort_keys=True, separators=(",", ":"), default=str) + "\n").encode()
    try:
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(
            target, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600
        )
    except OSError as err:
        raise ArtifactAccessError(f"cannot open audit log: {err.strerror}", path=str(target)) from err
    try:
        os.write(fd, line)  # one write of one line under O_APPEND: lines never interleave
        os.fsync(fd)
    except OSError as err:
        raise ArtifactAccessError(f"cannot write audit log: {err.strerror}", path=str(target)) from err
    finally:
        os.close(fd)
    return target


__all__ = ["append_audit", "audit_error_record", "audit_record"]
