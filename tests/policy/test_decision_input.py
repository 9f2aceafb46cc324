"""``decide``'s input is one record, ``DecisionInput`` (issue 35, item 6); the keywords ``decide`` took
before are still taken, and go to ``_decided``'s parameters as they are (bound by the interpreter, not
by the record). So the field list is written twice — the record's fields and ``_decided``'s parameters —
and this test holds them to one: same names, order and defaults."""

from __future__ import annotations

import inspect

from atip_trust.policy.decide import DecisionInput, _decided


def test_decided_takes_exactly_the_input_records_fields_in_order_with_its_defaults() -> None:
    params = list(inspect.signature(_decided).parameters.values())[2:]  # after policy, report
    assert [p.name for p in params] == list(DecisionInput._inits)
    defaults = DecisionInput._defaults
    for p in params:
        if p.name in defaults:
            assert p.default == defaults[p.name], p.name
        else:
            assert p.default is inspect.Parameter.empty, p.name


def test_a_field_added_to_the_record_alone_would_be_caught() -> None:
    class _Grown(DecisionInput):
        extra: bool = False

    params = list(inspect.signature(_decided).parameters)[2:]
    assert params != list(_Grown._inits)
