"""A provider's tool call -> the exact argv that runs it (the inverse of flattening, RFC §8.2 rule 3).

``gh_pr_create {"title": "x", "draft": true}`` -> ``["gh", "pr", "create", "--title", "x", "--draft"]``.
The flat name is resolved only through ``facts/flatten.py`` (the same list the provider compiler
published); the words are built by ``facts/arguments.py``, which the call validator checks with, so a
call the validator passes is the call that runs. No shell is involved: the result is an argv for
``execve``. How it differs from the reference executor (positional values starting with ``-`` go after
``--``, no coercion, unknown names and arguments refused) is in that module's docstring.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from atip_trust.errors import MetadataError, UsageError
from atip_trust.facts.arguments import command_argv
from atip_trust.facts.flatten import flatten_commands
from atip_trust.facts.metadata import MetadataDocument


def tool_call_to_argv(
    metadata: MetadataDocument | Mapping[str, Any], name: str, arguments: Mapping[str, Any] | None
) -> list[str]:
    """The argv for one tool call: ``[tool, *command words, *options, [--], *positionals]``.

    UsageError for a name the metadata does not declare and for arguments that do not fit (unknown,
    missing, wrong type, not in the enum); MetadataError for a declaration no argv can be built from.
    """
    doc = metadata.doc if isinstance(metadata, MetadataDocument) else metadata
    if not isinstance(doc, Mapping):
        raise MetadataError(f"metadata must be an object, got {type(doc).__name__}")
    if not isinstance(name, str):
        raise UsageError(f"a tool call's name must be a string, got {type(name).__name__}")
    commands = flatten_commands(doc)
    cmd = next((c for c in commands if c.name == name), None)
    if cmd is None:
        known = ", ".join(c.name for c in commands[:8]) + (", ..." if len(commands) > 8 else "")
        raise UsageError(f"unknown tool {name!r}: not a command of {doc.get('name')!r} "
                         f"(declared: {known or 'none'})")
    return command_argv(str(doc["name"]), cmd, arguments)


__all__ = ["tool_call_to_argv"]
