"""Command rules in Claude Code and Codex syntax: every notation, its word boundaries, its traps."""

from __future__ import annotations

import pytest

from atip_trust.errors import PolicyError
from atip_trust.policy.rules import (
    command_line,
    compile_rule,
    rule_matches,
    split_command,
)


def matches(rule: object, line: str) -> bool:
    compiled = compile_rule(rule, "allow", "local", where="$.permissions.allow[0]")
    words = split_command(line)
    tokens, text = command_line(words[0], words[1:])
    return rule_matches(compiled, tokens, text)


@pytest.mark.parametrize(
    ("rule", "line", "expected"),
    [
        # Claude Code Tool(specifier), trailing " *" optional with a word boundary.
        ("Bash(gh pr view *)", "gh pr view 12", True),
        ("Bash(gh pr view *)", "gh pr view", True),
        ("Bash(gh pr view *)", "gh pr viewer", False),
        ("Bash(gh pr view *)", "gh pr merge 12", False),
        ("Bash(ls *)", "lsof -i", False),
        # A plain pattern is the same as inside Bash(...).
        ("gh pr view *", "gh pr view 1 --json title", True),
        ("gh pr view *", "gh pr merge 1", False),
        # Exact match without a wildcard.
        ("Bash(npm install)", "npm install", True),
        ("Bash(npm install)", "npm install left-pad", False),
        # Legacy prefix form with :*, word boundary.
        ("Bash(npm:*)", "npm run build", True),
        ("Bash(npm:*)", "npm", True),
        ("Bash(npm:*)", "npmx run", False),
        # A star in the middle spans words: the rule is wider than it reads.
        ("Bash(git * main)", "git push origin main", True),
        ("Bash(* --version)", "anything --version", True),
        # Escaped star is literal.
        (r"Bash(echo \*)", "echo *", True),
        (r"Bash(echo \*)", "echo x", False),
        # Bare Bash matches every command.
        ("Bash", "rm -rf /", True),
        # Tool(specifier) with an ATIP tool name: the specifier is that tool's command.
        ("terraform(plan *)", "terraform plan -out x", True),
        ("terraform(plan *)", "terraform apply", False),
        # Codex token prefixes, with alternatives.
        ({"prefix": ["gh", "pr", ["view", "list"]]}, "gh pr list --state open", True),
        ({"prefix": ["gh", "pr", ["view", "list"]]}, "gh pr merge 1", False),
        ({"prefix": ["gh", "pr", ["view", "list"]]}, "gh pr", False),
        ({"prefix": ["git", "reset", "--hard"]}, "git reset --keep", False),
        # An argument with a space cannot pose as two words.
        ("gh pr view *", "gh 'pr view' 1", False),
    ],
)
def test_rule_matching(rule: object, line: str, expected: bool) -> None:
    assert matches(rule, line) is expected


@pytest.mark.parametrize("bad", ["Bash()", "Bash(gh pr", "gh) pr", "   "])
def test_malformed_rules_are_refused_with_their_path(bad: str) -> None:
    with pytest.raises(PolicyError) as info:
        compile_rule(bad, "deny", "local", where="$.permissions.deny[3]")
    assert info.value.path == "$.permissions.deny[3]"
