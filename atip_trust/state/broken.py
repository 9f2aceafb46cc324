"""Digests whose tool broke its own declaration at run time: marked until a person clears the mark.

A verified tool that tried something its signed effects rule out (execution/sandbox.py ``attempt_seen``:
``EFFECT_VIOLATION``) is no longer believed: AIP-14 "the host MUST surface a spec violation". Its
sha256 is written here, one small JSON file per digest (``<state dir>/broken-declarations/<hex>.json``,
0600 in a 0700 folder), and every later admission of the same bytes is denied (admission/admit.py
``decided``: one ``stat`` per admission) until ``atip-trust cache clear-broken sha256:<hex>`` removes
it. ``scan`` lists the marks. Like the verdict cache, the folder is as trustworthy as the user's own
files: the mark protects the user from the tool, not from themselves.

Location: ``ATIP_STATE_DIR`` when set, else ``<user state dir>/broken-declarations``.
"""

from __future__ import annotations

import json
import os
import time
from typing import TYPE_CHECKING

from atip_trust.state.dirs import user_state_dir

if TYPE_CHECKING:
    from typing import Any

_HEX = frozenset("0123456789abcdef")


def marks_dir() -> str:
    base = os.environ.get("ATIP_STATE_DIR")
    if not base:
        base = user_state_dir()
    return os.path.join(base, "broken-declarations")


def _hex(digest: str | None) -> str | None:
    text = (digest or "").removeprefix("sha256:").lower()
    return text if len(text) == 64 and set(text) <= _HEX else None


def _file(digest: str | None) -> str | None:
    hexd = _hex(digest)
    return os.path.join(marks_dir(), f"{hexd}.json") if hexd is not None else None


def broken_mark(digest: str | None) -> dict[str, Any] | None:
    """The mark for ``digest`` (``sha256:<hex>`` or the bare hex), or None. A mark that cannot be read
    as JSON still counts (fail closed): its presence is the finding."""
    path = _file(digest)
    if path is None:
        return None
    try:
        with open(path, "rb") as fh:
            data = fh.read(65536)
    except FileNotFoundError:
        return None
    except OSError as err:
        return {"attempt": f"unreadable mark ({err.strerror})"}
    try:
        parsed = json.loads(data)
    except ValueError:
        return {"attempt": "unreadable mark"}
    return parsed if isinstance(parsed, dict) else {"attempt": "unreadable mark"}


def mark_broken(digest: str, *, tool: str, attempt: str, declared: dict[str, Any] | None) -> str | None:
    """Write the mark; returns its path, or None when ``digest`` is not a sha256 (nothing to mark)."""
    path = _file(digest)
    if path is None:
        return None
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    record = {"digest": f"sha256:{_hex(digest)}", "tool": tool, "attempt": attempt, "declared": declared,
              "time": int(time.time())}
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as fh:
        json.dump(record, fh, sort_keys=True)
    os.replace(tmp, path)
    return path


def clear_broken(digest: str) -> bool:
    """Remove the mark (a person's decision); True when there was one."""
    path = _file(digest)
    if path is None:
        return False
    try:
        os.unlink(path)
    except FileNotFoundError:
        return False
    return True


def all_marks() -> list[dict[str, Any]]:
    """Every mark, sorted by digest (``scan``, ``cache list-broken``)."""
    try:
        names = sorted(os.listdir(marks_dir()))
    except OSError:
        return []
    return [m for n in names if n.endswith(".json") and (m := broken_mark(n[:-5])) is not None]


__all__ = ["all_marks", "broken_mark", "clear_broken", "mark_broken", "marks_dir"]
