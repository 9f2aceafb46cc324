"""``constraints_from_policy`` (policy/constraints.py) builds ``evaluate.Constraints`` field by field:
the flags' values it does not tighten must all reach verification unchanged."""

from __future__ import annotations

import inspect
from pathlib import Path

from atip_trust.evaluation.evaluate import Constraints
from atip_trust.policy.compose import compose
from atip_trust.policy.constraints import constraints_from_policy
from atip_trust.policy.load import layer_from_document


def test_constraints_from_policy_keeps_every_flag_it_does_not_tighten() -> None:
    policy = compose([layer_from_document({"version": 1}, source="local")])
    flags = Constraints(keys=(), builder_id="https://builder.example/b", source_uri="git+https://e/x",
                        source_tag="v1", source_branch="main", predicate_type="https://slsa.dev/provenance/v1",
                        min_slsa_level=2, require_provenance=True)
    out = constraints_from_policy(policy, flags)
    assert out == flags
    # Every field of Constraints is one the function names: a new field cannot be dropped silently.
    named = set(inspect.signature(Constraints).parameters)
    source = inspect.getsource(constraints_from_policy)
    assert {f for f in named if f"{f}=" not in source} == set()


def test_a_policy_signer_list_replaces_the_flags_and_keys_pass_through() -> None:
    doc = {"version": 1, "trust": {"signers": [{"identity": "a@example.com", "issuer": "https://i.example"}]}}
    policy = compose([layer_from_document(doc, source="local")])
    out = constraints_from_policy(policy, Constraints(keys=(Path("k.pem"),)))
    assert [s.identity for s in out.signers] == ["a@example.com"] and out.keys == (Path("k.pem"),)
