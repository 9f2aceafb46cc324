"""Where bash finds a bare program name: PATH as the agent's shell reads it, in the agent's directory.

A shell takes a relative PATH entry (``node_modules/.bin``, ``.``, an empty entry) relative to its
*current* directory (POSIX XCU 2.9.1.1). The hook runs in a directory of its own, so such an entry must
be read against the ``cwd`` the hook input names, the directory the line starts in (issue 32, item 6).
After a ``cd`` (or ``env -C``) the line is elsewhere, and without a ``cwd`` nobody knows where it is:
then a name the search reaches a relative entry for, before it finds the program, is unprovable (the
program may be in that unknown directory). ``facts.artifact.which`` does the search over the entries
made absolute.
"""

from __future__ import annotations

import os

from atip_trust.agents.words import Unprovable
from atip_trust.errors import ArtifactAccessError
from atip_trust.facts.artifact import which


def locate(name: str, path_env: str | None, cwd: str | None, moved: bool) -> str:
    """The file bash runs for the bare ``name`` (module docstring): ``ArtifactAccessError`` when there
    is none, :class:`Unprovable` when a relative entry that cannot be placed comes before it."""
    entries = (os.environ.get("PATH", os.defpath) if path_env is None else path_env).split(os.pathsep)
    placed: list[str] = []
    for entry in entries:
        if os.path.isabs(entry):
            placed.append(entry)
            continue
        if moved or cwd is None or not os.path.isabs(cwd):
            where = ("an earlier 'cd' (or a runner) changed the directory" if moved
                     else "the hook input names no absolute cwd")
            try:
                return which(name, os.pathsep.join(placed))
            except ArtifactAccessError:  # not found before it: the relative entry decides
                raise Unprovable(f"PATH has the relative entry {entry or '(empty)'!r} before any {name!r} and "
                                 f"{where}: which file runs is not known") from None
        placed.append(os.path.normpath(os.path.join(cwd, entry or ".")))
    return which(name, os.pathsep.join(placed))


__all__ = ["locate"]
