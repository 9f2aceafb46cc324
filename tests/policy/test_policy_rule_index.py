"""The rule index ``decide`` uses (rules.rules_for_tool, rules.compile_matcher): compiled once per policy
and tool, it must answer exactly as the rule-by-rule matcher does and never leave out a rule that
matches some reading of the command (leading options removed, quoted tool names, optional tails)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from atip_trust.policy.rules import (
    command_line,
    command_variants,
    compile_matcher,
    compile_rule,
    rule_matches,
    rules_for_tool,
    split_command,
)

from conftest import examples

RULES: list[object] = [
    "Bash(gh pr view *)", "Bash(gh *)", "gh", "Bash(gh:*)", "Bash(g*)", "Bash(* --version)",
    "Bash(gh pr view)", "Bash", r"Bash(echo \*)", "Bash(git * main)", "Bash(git push *)",
    "Bash('my tool' run *)", "Bash('my tool')", "Bash(* --force *)", "Bash(* --force)",
    "Bash(git push *+*)", "Bash(*a*b*c*)", "Bash(gh * view * 1)", "terraform(plan *)", "Bash(:*)",
    {"prefix": ["gh", "pr"]}, {"prefix": [["gh", "git"]]}, {"prefix": ["git", "push", ["--force", "-f"]]},
]
LINES = [
    "gh", "gh pr view 1", "gh pr", "ghx pr view", "git -C . push origin main", "git push", "g",
    "'my tool' run x", "'my tool'", "my tool run", "echo *", "gh --version", "gh -R o/r pr view 2",
    "git push origin +main", "git push --force", "git -c a=b push -f x", "abc", "gh x view y 1",
    "terraform plan -out x", "terraform -chdir=a plan", "'' x",
]
WORDS = st.sampled_from(["gh", "git", "pr", "view", "push", "-f", "--force", "-C", ".", "main", "+main",
                         "my tool", "", "a", "b", "c", "*", "1", "--version", "terraform", "plan", "g"])


def _compiled(raw: object, behavior: str):  # type: ignore[no-untyped-def]
    return compile_rule(raw, behavior, "local", where="$.permissions.x[0]")  # type: ignore[arg-type]


def _check(words: list[str], behavior: str) -> int:
    tokens, line = command_line(words[0], words[1:])
    variants, _ = command_variants(tokens, line)
    rules = [_compiled(raw, behavior) for raw in RULES]
    kept = [rule for rule, _ in rules_for_tool(rules, words[0])]
    matchers = {id(rule): match for rule, match in rules_for_tool(rules, words[0])}
    for rule in rules:
        for vt, vl in variants:
            hit = rule_matches(rule, vt, vl)
            if hit:
                assert rule in kept, (rule.text, vl)
            if rule in kept:
                assert matchers[id(rule)](vt, vl) is hit, (rule.text, vl)
    # Order is the policy's (deny, ask and allow lists are evaluated in order).
    assert kept == [r for r in rules if r in kept]
    return len(rules) - len(kept)


def test_the_rule_index_never_leaves_out_a_rule_that_matches_a_listed_command() -> None:
    skipped = 0
    for behavior in ("allow", "ask", "deny"):
        for text in LINES:
            skipped += _check(split_command(text), behavior)
    assert skipped > 40  # the index does leave out other tools' rules


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(words=st.lists(WORDS, min_size=1, max_size=7), behavior=st.sampled_from(["allow", "deny"]))
def test_the_rule_index_never_leaves_out_a_rule_that_matches_any_command(words: list[str],
                                                                          behavior: str) -> None:
    _check(words, behavior)


@settings(max_examples=examples(300), deadline=None)
@given(pattern=st.lists(st.sampled_from(["a", "b", " ", "ab", "*", "gh ", " *"]), min_size=1, max_size=6),
       text=st.text(alphabet="ab *gh", max_size=12), behavior=st.sampled_from(["allow", "deny"]))
def test_a_compiled_matcher_answers_as_the_rule_matcher_does(pattern: list[str], text: str,
                                                             behavior: str) -> None:
    spec = "".join(pattern).strip()
    if not spec or spec.startswith("(") or spec == "Bash":
        return
    rule = _compiled(f"Bash({spec})", behavior)
    tokens = tuple(text.split(" "))
    assert compile_matcher(rule)(tokens, text) is rule_matches(rule, tokens, text), (spec, text)
