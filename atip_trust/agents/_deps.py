"""The deferred imports of ``atip_trust.agents``, each written once (docs/adr/0001-start-up.md).

Every name below is a module imported on its first attribute read (_base/lazy.py); the package's
modules take it from here (``from atip_trust.agents._deps import ...``) rather than importing it, so
that a cache-hit admission, which never reads it, never pays for it. The comment says when it is read.
"""

from __future__ import annotations

from atip_trust._base.lazy import lazy_import

TYPE_CHECKING = False  # typing's constant without importing typing at run time
if TYPE_CHECKING:
    import hashlib
    import shlex

    import tree_sitter
    import tree_sitter_bash
else:
    shlex = lazy_import("shlex")  # only for --pin
    hashlib = lazy_import("hashlib")  # identity.py: only when a program has a named program's size
    # Bash's grammar: on the hook path only; admission and verification never parse shell.
    tree_sitter = lazy_import("tree_sitter")
    tree_sitter_bash = lazy_import("tree_sitter_bash")  # (with tree_sitter)

__all__ = [
    "hashlib",
    "shlex",
    "tree_sitter",
    "tree_sitter_bash",
]
