"""What a file held, remembered in this process by its stat identity: the verdict cache's stat fast path
(state/verdict_cache.py), in memory.

Why: a runtime that admits a tool before every call reads the same small files each time — the bundle,
the trusted root, the cache entry itself — and hashing or parsing them again was most of a cache hit's
cost (docs/caching.md). A file whose (dev, inode, size, mtime_ns, ctime_ns) are those it had
when it was read is taken to hold the same bytes: the same rule, and the same limit, as the on-disk
stat fast path. ctime cannot be set back by any user, so a same-size rewrite that restores the mtime
is still seen. A file changed within ``RACY_NS`` of being read (a coarse file-system clock may not
tick between two writes) is not remembered: its next use reads it again.
"""

from __future__ import annotations

import os
import stat
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Hashable
    from typing import Any, TypeVar

    K = TypeVar("K", bound=Hashable)
    V = TypeVar("V")

__all__ = ["RACY_NS", "Ident", "forget_all", "ident_of", "memo_get", "memo_put", "regular_ident", "settled"]

#: (dev, inode, size, mtime_ns, ctime_ns): a file with the same five is taken to hold the same bytes.
Ident = tuple[int, int, int, int, int]

#: A file whose mtime or ctime is this close to "now" may still change within the same timestamp tick
#: (coarse file-system clocks); what it held is not remembered, so its next use reads it again.
RACY_NS = 2_000_000_000


def ident_of(st: os.stat_result) -> Ident:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def settled(ident: Ident) -> bool:
    """The file's last change is older than ``RACY_NS``: what it holds now may be remembered."""
    return time.time_ns() - max(ident[3], ident[4]) >= RACY_NS


def regular_ident(path: str, *, follow_links: bool = True) -> Ident | None:
    """The identity of the regular file at ``path`` now, or None (absent, unreadable metadata, not a
    regular file): then the caller reads it the ordinary way, with its ordinary errors."""
    try:
        st = os.stat(path) if follow_links else os.lstat(path)
    except (OSError, ValueError):
        return None
    return ident_of(st) if stat.S_ISREG(st.st_mode) else None


# A memo is a plain dict from a key (a path, usually) to (identity, value), typed where it is defined
# (``_ROOTS: dict[str, tuple[Ident, TrustRoot]] = {}``), read and filled only through these two.
def memo_get(memo: dict[K, tuple[Ident, V]], key: K, ident: Ident | None) -> V | None:
    """The value remembered for ``key``, handed out only for the identity it was stored with."""
    if ident is None:
        return None
    item = memo.get(key)
    return item[1] if item is not None and item[0] == ident else None


def memo_put(memo: dict[K, tuple[Ident, V]], key: K, ident: Ident, value: V, max_items: int = 256) -> None:
    """Remember ``value`` for ``key`` at ``ident``, only when that identity is ``settled``; at most
    ``max_items`` entries (past it the memo is emptied and refilled by the files still in use)."""
    if not settled(ident):
        return
    if len(memo) >= max_items and key not in memo:
        memo.clear()
    memo[key] = (ident, value)
    if not any(m is memo for m in _MEMOS):  # a handful of memos: a list, by identity (dicts are unhashable)
        _MEMOS.append(memo)


#: Every memo ``memo_put`` filled (module-level dicts that live as long as the process).
_MEMOS: list[dict[Any, Any]] = []


def forget_all() -> None:
    """Empty every memo: the next use of each file reads it again (``atip-trust serve`` on SIGHUP)."""
    for memo in _MEMOS:
        memo.clear()
