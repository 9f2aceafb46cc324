"""A trust report is the facts ``evaluate`` found, complete when it is returned (issue 23 item 2):
it points at no decision, and evidence checked later (VSAs, an AIP-14 contract, the metadata's own
signature) is added to a copy (``TrustReport.adding``), so a report already handed out, or kept by the
verdict cache, never changes under its holder. The JSON output still carries the decision under
``decision`` (docs/contract.md), made from the admission's or verification's ``Decision``.
"""

from __future__ import annotations

from atip_trust.admission.vsa import apply_vsas
from atip_trust.facts.report import Check, Decision, Reason, TrustLevel, TrustReport


def _report() -> TrustReport:
    return TrustReport(path="/usr/bin/tool", digests={"sha256": "a" * 64}, trust_level=TrustLevel.PROVENANCE_FAIL,
                       checks=[Check("signature", "pass", "ok")])


def test_a_report_holds_no_decision_and_its_json_takes_one_beside_it() -> None:
    rep = _report()
    assert "decision" not in TrustReport._fields
    assert rep.to_json()["decision"] is None
    decision = Decision("deny", [Reason("UNSIGNED", "not signed")], report_digest=rep.digest())
    out = rep.to_json(decision=decision)
    assert out["decision"] == decision.to_json()
    assert set(out) == set(rep.to_json())  # the same keys, with or without a decision
    assert rep.digest() == decision.report_digest  # the facts' digest: the decision is not in it


def test_evidence_checked_later_does_not_change_a_report_already_handed_out() -> None:
    """Attack: a VSA (or contract) checked for one admission leaking into the report another holder
    has, or the cache keeps, as if that evidence had been given there too."""
    kept = _report()
    before = kept.to_json(full=True)
    failed = Check("vsa", "fail", "the verifier FAILED these bytes", expected="PASSED", actual="FAILED")
    capped = apply_vsas(kept, [failed])
    assert kept.to_json(full=True) == before
    assert capped.trust_level is TrustLevel.UNVERIFIED and capped.checks[-1] == failed
    passed = apply_vsas(kept, [Check("vsa", "pass", "PASSED by a trusted verifier")])
    assert passed.trust_level is TrustLevel.VERIFIED and kept.trust_level is TrustLevel.PROVENANCE_FAIL
    more = kept.adding([Check("contract.signature", "skip", "no bundle")])
    assert len(more.checks) == 2 and len(kept.checks) == 1
