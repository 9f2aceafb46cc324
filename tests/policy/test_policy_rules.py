"""Command rules in Claude Code and Codex syntax: every notation, its word boundaries, its traps."""

from __future__ import annotations

import shlex

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from atip_trust.errors import PolicyError
from atip_trust.policy.rules import (
    command_line,
    command_variants,
    compile_rule,
    may_match,
    rule_matches,
    split_command,
)

from conftest import examples


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


PREFILTER_RULES = [
    "Bash(gh pr view *)", "Bash(gh *)", "gh", "Bash(gh:*)", "Bash(g*)", "Bash(* --version)",
    "Bash(gh pr view)", "Bash", r"Bash(echo \*)", "Bash(git * main)", "Bash(git push *)",
    "Bash('my tool' run *)", "Bash('my tool')", {"prefix": ["gh", "pr"]}, {"prefix": [["gh", "git"]]},
]
PREFILTER_LINES = [
    "gh", "gh pr view 1", "gh pr", "ghx pr view", "git -C . push origin main", "git push", "g",
    "'my tool' run x", "'my tool'", "my tool run", "echo *", "gh --version", "gh -R o/r pr view 2",
]


@pytest.mark.parametrize("behavior", ["allow", "deny"])
def test_the_tool_word_precheck_never_skips_a_rule_that_matches(behavior: str) -> None:
    """``may_match`` lets decide skip the rules of other tools; it must hold for every reading of the
    command (leading options removed), quoted tool names and optional tails included."""
    skipped = 0
    for raw in PREFILTER_RULES:
        rule = compile_rule(raw, behavior, "local", where="$.permissions.x[0]")  # type: ignore[arg-type]
        for text in PREFILTER_LINES:
            words = split_command(text)
            tokens, line = command_line(words[0], words[1:])
            variants, _ = command_variants(tokens, line)
            if any(rule_matches(rule, vt, vl) for vt, vl in variants):
                assert may_match(rule, line), (raw, text)
            elif not may_match(rule, line):
                skipped += 1
    assert skipped > 20  # the pre-check does skip rules of other tools


@pytest.mark.parametrize("bad", ["Bash()", "Bash(gh pr", "gh) pr", "   "])
def test_malformed_rules_are_refused_with_their_path(bad: str) -> None:
    with pytest.raises(PolicyError) as info:
        compile_rule(bad, "deny", "local", where="$.permissions.deny[3]")
    assert info.value.path == "$.permissions.deny[3]"


@settings(max_examples=examples(2000), deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab-_./:=@%+,*;#&| \t\r\n\x0b\x0c\xa0'\"\\")), max_size=24))
def test_a_command_line_is_split_into_the_words_shlex_gives_whatever_its_characters(text: str) -> None:
    """split_command skips shlex for plain lines (a cache-hit admission's "--command status"); the
    words must be exactly shlex's for every line, so a rule never sees a different split (e.g. a
    no-break space or vertical tab is not a blank for shlex and must not become one here)."""
    try:
        expected = tuple(shlex.split(text))
    except ValueError:
        with pytest.raises(PolicyError):
            split_command(text)
        return
    assert split_command(text) == expected
