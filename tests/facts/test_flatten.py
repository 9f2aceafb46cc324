"""The flat command list every provider name resolves through (RFC §8.2)."""

from __future__ import annotations

import pytest

from atip_trust.errors import MetadataError
from atip_trust.facts.flatten import find_command, flatten_commands

GH = {
    "atip": {"version": "0.6"},
    "name": "gh",
    "version": "2.0",
    "description": "GitHub CLI",
    "effects": {"network": True},
    "commands": {
        "pr": {
            "description": "pull requests",
            "commands": {
                "create": {"description": "create", "effects": {"destructive": False}},
                "list": {"description": "list", "effects": {"destructive": False}},
            },
        },
        "repo": {"description": "repos", "commands": {"delete": {"description": "d", "effects": {"destructive": True}}}},
    },
}


def test_leaf_commands_are_flattened_depth_first_with_underscores() -> None:
    names = [c.name for c in flatten_commands(GH)]
    assert names == ["gh_pr_create", "gh_pr_list", "gh_repo_delete"]
    assert find_command(GH, "gh_repo_delete").argv_prefix == ("repo", "delete")  # type: ignore[union-attr]


def test_tool_level_effects_come_first_on_every_command() -> None:
    c = find_command(GH, "gh_pr_create")
    assert c is not None and c.effect_levels[0] == {"network": True}


def test_root_command_is_named_after_the_tool_alone() -> None:
    doc = {"name": "jq", "commands": {"": {"description": "filter"}}}
    [c] = flatten_commands(doc)
    assert c.name == "jq" and c.argv_prefix == ()


def test_colliding_flat_names_are_an_error_not_a_silent_override() -> None:
    doc = {"name": "t", "commands": {"a_b": {"description": "x"}, "a": {"commands": {"b": {"description": "y"}}}}}
    with pytest.raises(MetadataError, match="collides"):
        flatten_commands(doc)


def test_name_outside_provider_limit_is_an_error_naming_the_path() -> None:
    doc = {"name": "t", "commands": {"has space": {"description": "x"}}}
    with pytest.raises(MetadataError, match=r"commands\.has space"):
        flatten_commands(doc)


def test_unknown_flat_name_is_never_guessed() -> None:
    assert find_command(GH, "gh_pr") is None
    assert find_command(GH, "gh_pr_delete") is None
