"""`atip_trust.bridge.create_validator` (the reference bridge's API, docs/contract.md) answers exactly what the
call-time gate answers: the same violations, the same behaviour, never a pass for an unknown name."""

from __future__ import annotations

from atip_trust.agents.calls import validate_call
from atip_trust.bridge import SurfaceTool, create_validator
from atip_trust.facts.report import TrustLevel

from test_call_validator import TOOL, codes, make_policy, report


def _validator(level: TrustLevel, verified: bool = True):  # type: ignore[no-untyped-def]
    return create_validator([SurfaceTool(TOOL, report(level), effects_verified=verified)], make_policy())


def test_create_validator_gives_the_call_gates_answer_for_each_command() -> None:
    v = _validator(TrustLevel.UNVERIFIED)
    for name in ("tool_status", "tool_destroy", "tool_fetch", "tool_nuke"):
        direct = validate_call(TOOL, name, {}, policy=make_policy(), report=report(TrustLevel.UNVERIFIED),
                               effects_verified=True)
        got = v.validate(name, {})
        assert (got.behavior, codes(got), got.valid) == (direct.behavior, codes(direct), direct.valid)


def test_a_name_no_tool_declares_is_an_unknown_command_never_valid() -> None:
    for name in ("tool_no_such_command", "othertool_x", ""):
        got = _validator(TrustLevel.VERIFIED).validate(name, {})
        assert not got.valid and "UNKNOWN_COMMAND" in codes(got) and got.behavior == "deny", name
