"""Who can answer an ``ask``: the one reading of ``--interactive`` for the CLI, hooks and runtimes.

Kept apart from the pipelines so that reading it imports nothing heavy (the CLI consults it for
every command)."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Literal

from atip_trust.errors import UsageError

if TYPE_CHECKING:
    Interactive = Literal["auto", "always", "never"]


def can_ask(mode: bool | Interactive = "auto") -> bool:
    """Whether an ``ask`` can reach a person (otherwise ask becomes deny).

    ``auto``: only with a terminal on stdin and outside CI (``CI`` set to anything but false/0/no);
    ``always``: the caller puts the question to its user itself (an agent runtime or a hook with no
    terminal), so ``ask`` is returned as ask; ``never``: nobody can answer. A bool is taken as given.
    """
    if isinstance(mode, bool):
        return mode
    if mode == "always":
        return True
    if mode == "never":
        return False
    if mode != "auto":
        raise UsageError(f"interactive must be auto, always or never, not {mode!r}")
    if os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no"):
        return False
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except (AttributeError, ValueError):
        return False


def stdin_provides(need: Literal["tty", "stdin"]) -> bool:
    """Whether this process's standard input can give what ``effects.interactive_need`` names: a
    terminal for ``tty``; for ``stdin``, a terminal, a pipe or a file, never a closed descriptor or
    ``/dev/null`` (what CI and agent runtimes hand a child)."""
    try:
        st = os.fstat(0)
    except OSError:
        return False  # closed
    if os.isatty(0):
        return True
    if need == "tty":
        return False
    try:
        null = os.stat(os.devnull)
    except OSError:
        return True
    return not (st.st_rdev == null.st_rdev and st.st_ino == null.st_ino and st.st_dev == null.st_dev)


__all__ = ["Interactive", "can_ask", "stdin_provides"]
