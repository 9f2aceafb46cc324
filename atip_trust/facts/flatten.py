"""The flat command list: one name per leaf command, the name providers and validators share (RFC §8.2).

A model sees ``gh_pr_create``; the validator, the tool call -> argv mapping and the compiled surface all
have to agree on which declared command that name is. This module is the one place that answers it:
leaf commands depth-first in declaration order, path words joined with ``_`` after the tool's name.

Where it differs from the reference bridge (listed in docs/bridge.md):

* the root command ``""`` (RFC §4.5) is named after the tool alone (``tool``, not ``tool_``);
* two commands whose flat names collide, or a name outside the providers' limit
  (``^[a-zA-Z0-9_-]{1,64}$``), is an error naming the JSON path, never a silent override: a model
  calling ``a_b`` must reach exactly one command.

Each entry carries the effects objects on its path, tool level first, so that callers merge them with
``effects.merge_states`` and the value adding risk wins (RFC §3.6).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from atip_trust._base.record import Record
from atip_trust.errors import MetadataError

if TYPE_CHECKING:
    from typing import Any

#: The provider function-name limit shared by OpenAI, Gemini and Anthropic tool names.
NAME_RE = re.compile(r"[a-zA-Z0-9_-]{1,64}")


class FlatCommand(Record):
    """One leaf command: its flat name, path words, declaration and effects levels (tool first)."""

    name: str
    path: tuple[str, ...]
    command: Mapping[str, Any]
    effect_levels: tuple[Mapping[str, Any], ...]
    #: JSON path of the declaration, for error messages (``commands.pr.commands.create``).
    json_path: str

    @property
    def argv_prefix(self) -> tuple[str, ...]:
        """The words that select this command on a command line (none for the root command)."""
        return tuple(w for w in self.path if w)


def _walk(
    nodes: Mapping[str, Any],
    path: tuple[str, ...],
    levels: tuple[Mapping[str, Any], ...],
    json_path: str,
) -> Iterator[tuple[tuple[str, ...], Mapping[str, Any], tuple[Mapping[str, Any], ...], str]]:
    for key, node in nodes.items():
        where = f"{json_path}.{key}" if key else f"{json_path}[\"\"]"
        if not isinstance(node, Mapping):
            raise MetadataError(f"{where}: a command must be an object, got {type(node).__name__}")
        eff = node.get("effects")
        here = levels + ((eff,) if isinstance(eff, Mapping) else ())
        sub = node.get("commands")
        if isinstance(sub, Mapping) and sub:
            yield from _walk(sub, path + (key,), here, f"{where}.commands")
        else:
            yield path + (key,), node, here, where


def flat_name(tool_name: str, path: tuple[str, ...]) -> str:
    words = [w for w in path if w]
    return "_".join([tool_name, *words])


def flatten_commands(metadata: Mapping[str, Any]) -> list[FlatCommand]:
    """Every leaf command of ``metadata`` with its flat name; MetadataError on a bad or colliding name."""
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        raise MetadataError(f"name: the tool needs a non-empty string name, got {name!r}")
    commands = metadata.get("commands")
    if commands is None:
        return []
    if not isinstance(commands, Mapping):
        raise MetadataError(f"commands: must be an object, got {type(commands).__name__}")
    tool_eff = metadata.get("effects")
    top: tuple[Mapping[str, Any], ...] = (tool_eff,) if isinstance(tool_eff, Mapping) else ()
    out: list[FlatCommand] = []
    seen: dict[str, str] = {}
    for path, node, levels, where in _walk(commands, (), top, "commands"):
        flat = flat_name(name, path)
        if not NAME_RE.fullmatch(flat):
            raise MetadataError(
                f"{where}: flattened name {flat!r} is outside the providers' limit "
                f"^[a-zA-Z0-9_-]{{1,64}}$ ({len(flat)} characters)"
            )
        if flat in seen:
            raise MetadataError(
                f"{where}: flattened name {flat!r} collides with {seen[flat]}; a tool call must name "
                "exactly one command"
            )
        seen[flat] = where
        out.append(FlatCommand(flat, path, node, levels, where))
    return out


def find_command(metadata: Mapping[str, Any], flat: str) -> FlatCommand | None:
    """The leaf command a provider's tool name refers to, or None (an unknown name is never guessed)."""
    return next((c for c in flatten_commands(metadata) if c.name == flat), None)
