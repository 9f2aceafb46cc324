"""The audit log: one JSON line per decision, appended and fsynced.

Written to ``--audit-log FILE`` or ``<platformdirs user_state_dir("atip-trust")>/audit.jsonl``. Lines
carry digests, the signer identity, the decision and its reasons; never environment or key material.
Arguments appear as the command words an admission decided for, and ``exec`` adds the ``argv`` it ran
(docs/cli-guide.md, "exec": the line records what ran).
"""

from __future__ import annotations

import errno
import os
from typing import TYPE_CHECKING

from atip_trust._base.files import open_regular
from atip_trust._base.jsonio import canonical_json
from atip_trust._base.times import utc_text
from atip_trust.errors import ArtifactAccessError
from atip_trust.facts.report import Decision, TrustReport
from atip_trust.state import dirs

try:  # POSIX; elsewhere lines are appended without the truncate-back guard
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

if TYPE_CHECKING:
    from datetime import datetime
    from typing import Any


def default_audit_path() -> str:
    return os.path.join(dirs.user_state_dir(), "audit.jsonl")


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
    ns: int | None = None,
) -> dict[str, Any]:
    """The line for one decision; its ``time`` is ``when``, else ``ns`` (epoch nanoseconds: when the
    admission decided, admission/admit.py), else now."""
    return {
        "time": when.isoformat() if when is not None else utc_text(ns),
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
        "time": when.isoformat() if when is not None else utc_text(),
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


def _open_log(target: str) -> int:
    """Open the log for appending: a regular file only, never a symlink, never blocking.

    ``O_NONBLOCK``: opening a FIFO for writing fails at once (ENXIO) when nobody reads it, and one that
    has a reader is refused by the ``fstat`` below, so a FIFO planted at the log path cannot hang
    ``admit``. ``O_NOFOLLOW``: a symlink at the log path is refused rather than followed.
    """
    try:
        # As Path.mkdir(parents=True, mode=0o700): the mode is the last folder's (paths as text: no
        # pathlib on a warm admission, docs/caching.md).
        os.makedirs(os.path.dirname(target) or ".", mode=0o700, exist_ok=True)
    except OSError as err:
        raise ArtifactAccessError(f"cannot open audit log: {err.strerror}", path=target) from err
    fd, _ = open_regular(target, what="audit log", write=True, follow_links=False)
    return fd


def _write_all(fd: int, line: bytes) -> None:
    """Write the whole line or leave the file as it was: a partial line is never left behind.

    Under an exclusive ``flock`` (other ``admit`` processes wait), the end of the file is noted, the
    line is written in a loop (a short write, e.g. at a file-size limit or a full disk, continues
    where it stopped), and on any failure the file is truncated back to that end. A log whose last
    line was cut short (a writer killed mid-line, a log without locks) does not swallow the new
    record: it starts on a fresh line, and the fragment stays visible on its own line.
    """
    locked = False
    if fcntl is not None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            locked = True
        except OSError:
            locked = False  # a file system without locks: still append, without the rollback guard
    try:
        start = os.fstat(fd).st_size
        if start and _torn(fd, start):
            line = b"\n" + line
        view = memoryview(line)
        try:
            while view:
                n = os.write(fd, view)
                if n <= 0:
                    raise OSError(errno.EIO, "the audit log accepted no bytes")
                view = view[n:]
            os.fsync(fd)
        except OSError:
            if locked:
                try:
                    os.ftruncate(fd, start)
                except OSError:
                    pass  # the write error below is what the caller must see
            raise
    finally:
        if locked:
            fcntl.flock(fd, fcntl.LOCK_UN)


def _torn(fd: int, size: int) -> bool:
    """Whether the log's last byte is not a newline (False when it cannot be read: a write-only log)."""
    try:
        return os.pread(fd, 1, size - 1) != b"\n"
    except (OSError, AttributeError):  # EBADF on a write-only descriptor; no pread (Windows)
        return False


def append_audit(record: dict[str, Any], path: str | os.PathLike[str] | None = None) -> str:
    """Append one line and fsync it; the file is created 0600 (it names tools and identities).

    Raises ``NotARegularFileError`` for anything but a regular file (FIFO, device, directory, symlink)
    and ``ArtifactAccessError`` when the line cannot be written whole; the caller treats either as a
    failed decision (exit 2), never as success.
    """
    target = os.fspath(path) if path is not None else default_audit_path()
    line = canonical_json(record, stringify=True) + b"\n"
    fd = _open_log(target)
    try:
        _write_all(fd, line)
    except OSError as err:
        raise ArtifactAccessError(f"cannot write audit log: {err.strerror}", path=str(target)) from err
    finally:
        os.close(fd)
    return target


__all__ = ["append_audit", "audit_error_record", "audit_record"]
