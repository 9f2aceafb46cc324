"""The decision as an Agent Tool permission decision (``to_agent_tool``): the ``decision_id`` its schema
requires, an ``expires_at`` the caller sets, and a passthrough typed as what it is — no rule matched, so
the host decides — never as a matched rule (issue 27)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from atip_trust.policy.decide import to_agent_tool

from test_policy_decide import decide, pol

NOW = datetime(2026, 11, 23, tzinfo=UTC)


def test_every_decision_has_an_id_the_caller_may_give() -> None:
    d = decide(pol({"permissions": {"allow": ["gh pr view *"]}}), command="pr view 1")
    a, b = to_agent_tool(d, decided_at=NOW), to_agent_tool(d, decided_at=NOW)
    assert re.fullmatch(r"atd_[0-9a-f]{32}", a["decision_id"]) and a["decision_id"] != b["decision_id"]
    assert to_agent_tool(d, decision_id="dec-7")["decision_id"] == "dec-7"


def test_expires_at_is_the_callers_and_absent_otherwise() -> None:
    d = decide(pol({"permissions": {"allow": ["gh pr view *"]}}), command="pr view 1")
    assert "expires_at" not in to_agent_tool(d)
    later = NOW + timedelta(minutes=5)
    assert to_agent_tool(d, decided_at=NOW, expires_at=later)["expires_at"] == later.isoformat()


def test_a_passthrough_is_not_typed_as_a_matched_rule() -> None:
    silent = decide(pol({}), command="pr view", interactive=False)
    out = to_agent_tool(silent, passthrough_on_no_match=True)
    assert out["behavior"] == "passthrough"
    assert out["reason"]["type"] == "policy" and out["reason"]["rule_ref"] is None, out
    # The no-match default that denies is the policy speaking, not a rule either.
    assert to_agent_tool(silent)["reason"]["type"] == "policy"
    # A rule that matched stays a rule.
    denied = decide(pol({"permissions": {"deny": ["gh pr view *"]}}), command="pr view")
    assert to_agent_tool(denied, passthrough_on_no_match=True)["reason"]["type"] == "rule"


def test_invocation_id_is_always_carried_null_for_a_decision_about_a_tool() -> None:
    d = decide(pol({"permissions": {"allow": ["gh pr view *"]}}), command="pr view 1")
    assert to_agent_tool(d, invocation_id="call_7")["invocation_id"] == "call_7"
    out = to_agent_tool(d)
    assert "invocation_id" in out and out["invocation_id"] is None
