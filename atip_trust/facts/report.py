"""Facts produced by verification: trust levels, checks, and the trust report (docs/architecture.md).

Verification produces a ``TrustReport``; it never decides. The policy engine turns a report into a
``Decision``. Both serialise to the JSON keys docs/contract.md documents.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import IntEnum
from typing import TYPE_CHECKING

from atip_trust._base.jsonio import canonical_digest
from atip_trust._base.record import Record, field, fields_json

if TYPE_CHECKING:
    from typing import Any, Literal

    CheckStatus = Literal["pass", "fail", "skip", "error"]
    #: What a failing check means for the trust level (principle 2).
    Impact = Literal["compromised", "unsigned", "unverified", "provenance", "none"]
    SignatureStatus = Literal["valid", "invalid", "absent", "unchecked"]
    ProvenanceStatus = Literal["valid", "invalid", "absent", "unchecked", "fail"]
    Behavior = Literal["allow", "ask", "deny"]


class TrustLevel(IntEnum):
    """RFC §3.2.2 trust levels, ordered: a higher value is more trusted.

    COMPROMISED: evidence of tampering (invalid signature over this artifact, digest mismatch).
    UNSIGNED: no applicable signature material.
    UNVERIFIED: material exists but could not be checked, or the signer is not one policy trusts.
    PROVENANCE_FAIL: signature trusted, but required provenance is missing or fails.
    VERIFIED: everything policy requires holds.
    """

    COMPROMISED = 0
    UNSIGNED = 1
    UNVERIFIED = 2
    PROVENANCE_FAIL = 3
    VERIFIED = 4

    @classmethod
    def parse(cls, name: str) -> TrustLevel:
        try:
            return cls[name.upper()]
        except KeyError:
            raise ValueError(
                f"unknown trust level {name!r}; expected one of {', '.join(m.name for m in cls)}"
            ) from None


class Check(Record):
    """One check run during verification, with what was expected and what was found."""

    name: str
    status: CheckStatus
    message: str = ''
    expected: Any = None
    actual: Any = None
    #: Which piece of evidence (bundle file, ``bundle.jsonl#3``, key file) the check was about.
    evidence: str | None = None
    impact: Impact = 'none'

    @property
    def failed(self) -> bool:
        return self.status in ("fail", "error")

    def to_json(self, *, full: bool = False) -> dict[str, Any]:
        """The JSON docs/contract.md documents; ``full`` adds ``impact`` (kept by the verdict cache, so that a
        report read back is the report that was written)."""
        out: dict[str, Any] = {"name": self.name, "status": self.status}
        if self.message:
            out["message"] = self.message
        if self.expected is not None or self.actual is not None:
            out["expected"] = self.expected
            out["actual"] = self.actual
        if self.evidence is not None:
            out["evidence"] = self.evidence
        if full:
            out["impact"] = self.impact
        return out

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Check:
        return cls(name=doc["name"], status=doc["status"], message=doc.get("message", ""),
                   expected=doc.get("expected"), actual=doc.get("actual"),
                   evidence=doc.get("evidence"), impact=doc.get("impact", "none"))


#: The plain sentence for a signature over other bytes (a bundle whose signed digest is not this file's):
#: the level stays COMPROMISED (docs/decisions.md), and the reader is told what that means here.
OTHER_BYTES = ("the signature is for other bytes: the bundle signs another digest than this file's, so "
               "this file is not the one that was signed (it changed after signing, or the bundle belongs "
               "to another file)")


class CheckFailure(Exception):
    """A verification step failed: raised inside a verifier, turned into a failed ``Check`` at its
    boundary. Not an ``AtipTrustError``: the input was well-formed; it just does not verify.

    ``TAMPER_CHECKS`` names the checks whose failure is evidence of tampering (COMPROMISED,
    principle 2); any other failure means "cannot vouch" (UNVERIFIED). Subclasses set their own.
    """

    TAMPER_CHECKS: frozenset[str] = frozenset()

    def __init__(self, message: str, *, check: str, expected: Any = None, actual: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.check = check
        self.expected = expected
        self.actual = actual

    def to_check(self, *, evidence: str | None = None) -> Check:
        return Check(
            name=self.check,
            status="fail",
            message=self.message,
            expected=self.expected,
            actual=self.actual,
            evidence=evidence,
            impact="compromised" if self.check in self.TAMPER_CHECKS else "unverified",
        )


class SignatureResult(Record, frozen=False):
    """The signature verdict of a report: status and the signer's certificate facts."""

    status: SignatureStatus = 'absent'
    identity: str | None = None
    issuer: str | None = None
    #: ``keyless`` (Fulcio certificate), ``key`` (public key), or None.
    kind: str | None = None
    evidence: str | None = None
    #: Fulcio extensions of the signing certificate (GitHub claims and the like), by short name.
    extensions: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out = fields_json(self)
        extensions = out.pop("extensions")
        if extensions:
            out["extensions"] = dict(extensions)
        return out

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> SignatureResult:
        return cls(**{**_stored_fields(cls, doc), "extensions": dict(doc.get("extensions") or {})})


class ProvenanceResult(Record, frozen=False):
    """The provenance verdict of a report: status, builder, source and SLSA level."""

    status: ProvenanceStatus = 'absent'
    predicate_type: str | None = None
    builder_id: str | None = None
    build_type: str | None = None
    slsa_level: int | None = None
    #: ``{"uri": ..., "ref": ..., "digest": {...}, "workflow": ...}`` or None.
    source: dict[str, Any] | None = None
    evidence: str | None = None

    to_json = fields_json  # its fields are JSON data already

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> ProvenanceResult:
        return cls(**_stored_fields(cls, doc))


def _stored_fields(cls: type[Record], doc: Mapping[str, Any]) -> dict[str, Any]:
    """A verdict's fields read back from its ``to_json``: ``status`` must be there, any other field
    absent is None."""
    return {name: doc["status"] if name == "status" else doc.get(name) for name in cls._fields}


class Reason(Record):
    """Why a decision came out as it did (principle 8)."""

    code: str
    message: str
    rule: str | None = None
    expected: Any = None
    actual: Any = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.rule is not None:
            out["rule"] = self.rule
        if self.expected is not None or self.actual is not None:
            out["expected"] = self.expected
            out["actual"] = self.actual
        return out


class Decision(Record, frozen=False):
    """allow / ask / deny, with its reasons and the digests of the policy and report decided on."""

    behavior: Behavior
    reasons: list[Reason] = field(default_factory=list)
    policy_digest: str | None = None
    #: Stored ``report_digest`` (the property; the constructor and ``replace`` take it by that name),
    #: None until known.
    _report_digest: str | None = field(default=None, alias="report_digest")
    #: Where the deciding rule came from (``org``, ``local``, ``cli``, ``default``).
    rule_source: str | None = None
    mode: str = "enforce"
    #: ``report=``: the report decided on, when its digest is not given: the digest (~15 µs of
    #: canonical JSON) is then worked out on first read of ``report_digest`` — the audit line and the
    #: output read it at once; a runtime that only wants allow/deny never pays for it. Internal state,
    #: no compared field; dropped once the digest is known.
    _report: TrustReport | None = field(default=None, alias="report")

    @property
    def report_digest(self) -> str | None:
        """sha256 of the report decided on (``TrustReport.digest``). Reports are complete before they
        are decided on and are not changed after (evaluate builds them, the cache hands out copies)."""
        if self._report_digest is None and self._report is not None:
            self._report_digest = self._report.digest()
            self._report = None
        return self._report_digest

    @report_digest.setter
    def report_digest(self, value: str | None) -> None:
        self._report_digest = value
        self._report = None

    def to_json(self) -> dict[str, Any]:
        return {
            "behavior": self.behavior,
            "reasons": [r.to_json() for r in self.reasons],
            "policy_digest": self.policy_digest,
            "report_digest": self.report_digest,
            "rule_source": self.rule_source,
            "mode": self.mode,
        }

    @property
    def exit_code(self) -> int:
        return {"allow": 0, "deny": 1, "ask": 3}[self.behavior]


class EvidenceSummary(Record):
    """What one piece of evidence (a bundle, a detached signature) showed, as a typed fact.

    ``applies``: it names this artifact (an attestation about another file says nothing about this one,
    principle 2); ``signer_trusted``: its signer matched the anchors verification was given. Decisions
    read these fields; the report's headline ``signature`` is a summary for people.
    """

    evidence: str
    route: str
    content: str
    applies: bool = True
    valid: bool = False
    compromised: bool = False
    signer_trusted: bool = False
    identity: str | None = None
    issuer: str | None = None
    #: ``sha256:<hex>`` of the DER public key, for key-based signatures.
    key: str | None = None
    #: Fulcio claims of the signing certificate: a policy signer rule may constrain them.
    extensions: Mapping[str, str] = field(default_factory=dict)
    predicate_type: str | None = None
    provenance: ProvenanceResult | None = None
    checks: tuple[Check, ...] = ()

    @property
    def vouches(self) -> bool:
        """Valid, about this artifact, and from a trusted signer: the only material a qualifier counts."""
        return self.valid and self.applies and self.signer_trusted

    def to_json(self, *, full: bool = False) -> dict[str, Any]:
        return {
            "evidence": self.evidence,
            "route": self.route,
            "content": self.content,
            "applies": self.applies,
            "valid": self.valid,
            "compromised": self.compromised,
            "signer_trusted": self.signer_trusted,
            "identity": self.identity,
            "issuer": self.issuer,
            "key": self.key,
            "extensions": dict(self.extensions),
            "predicate_type": self.predicate_type,
            "provenance": self.provenance.to_json() if self.provenance else None,
            "checks": [c.to_json(full=full) for c in self.checks],
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> EvidenceSummary:
        prov = doc.get("provenance")
        return cls(
            evidence=doc["evidence"], route=doc["route"], content=doc["content"],
            applies=bool(doc["applies"]), valid=bool(doc["valid"]),
            compromised=bool(doc["compromised"]), signer_trusted=bool(doc["signer_trusted"]),
            identity=doc.get("identity"), issuer=doc.get("issuer"), key=doc.get("key"),
            extensions=dict(doc.get("extensions") or {}),
            predicate_type=doc.get("predicate_type"),
            provenance=ProvenanceResult.from_json(prov) if prov is not None else None,
            checks=tuple(Check.from_json(c) for c in doc.get("checks") or ()),
        )


class TrustReport(Record, frozen=False):
    """Everything verification found about one artifact: complete when ``evaluate`` returns it, and
    not changed after (evidence checked later is added to a copy, :meth:`adding`). It holds no
    decision: an admission's or a verification's ``Decision`` is made about it and kept beside it
    (``Admission.decision``, ``Verification.decision``), so the report a cache keeps is the same facts
    whichever decision was made about them."""

    path: str
    digests: dict[str, str]
    size: int | None = None
    trust_level: TrustLevel = TrustLevel.UNSIGNED
    signature: SignatureResult = field(default_factory=SignatureResult)
    provenance: ProvenanceResult = field(default_factory=ProvenanceResult)
    checks: list[Check] = field(default_factory=list)
    #: One entry per piece of evidence examined (bundle, key signature), each with its own checks.
    attestations: list[EvidenceSummary] = field(default_factory=list)
    #: Claims made by metadata (RFC §3.2.2), reported, never used as expectations.
    claims: dict[str, Any] | None = None

    def to_json(self, *, full: bool = False, decision: Decision | None = None) -> dict[str, Any]:
        """The JSON docs/contract.md documents; ``full`` adds each check's ``impact`` (see ``from_json``);
        ``decision``: the decision made about this report, the output's ``decision`` key (None without)."""
        return {
            "artifact": {"path": self.path, "digest": dict(self.digests), "size": self.size},
            "trust_level": self.trust_level.name,
            "signature": self.signature.to_json(),
            "provenance": self.provenance.to_json(),
            "checks": [c.to_json(full=full) for c in self.checks],
            "attestations": [a.to_json(full=full) for a in self.attestations],
            "claims": self.claims,
            "decision": decision.to_json() if decision is not None else None,
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> TrustReport:
        """The facts of ``to_json(full=True)`` read back (the verdict cache, state/verdict_cache.py); the
        decision is never read back: it is made fresh on every call. Raises ``KeyError``,
        ``TypeError`` or ``ValueError`` on a document of another shape."""
        art = doc["artifact"]
        return cls(
            path=art["path"],
            digests={str(k): str(v) for k, v in dict(art["digest"]).items()},
            size=art.get("size"),
            trust_level=TrustLevel[doc["trust_level"]],
            signature=SignatureResult.from_json(doc["signature"]),
            provenance=ProvenanceResult.from_json(doc["provenance"]),
            checks=[Check.from_json(c) for c in doc.get("checks") or ()],
            attestations=[EvidenceSummary.from_json(a) for a in doc.get("attestations") or ()],
            claims=doc.get("claims"),
        )

    def copy(self) -> TrustReport:
        """A report with the same facts that can be changed without changing this one: its lists,
        dicts and result objects are new; the checks and attestations (immutable) are shared. The
        verdict cache hands out copies of a report it keeps in memory (admission/verdict_key.py)."""
        sig, prov = self.signature, self.provenance
        return TrustReport(
            self.path, dict(self.digests), self.size, self.trust_level,
            SignatureResult(sig.status, sig.identity, sig.issuer, sig.kind, sig.evidence,
                            dict(sig.extensions)),
            ProvenanceResult(prov.status, prov.predicate_type, prov.builder_id, prov.build_type,
                             prov.slsa_level, _json_copy(prov.source), prov.evidence),
            list(self.checks), list(self.attestations), _json_copy(self.claims),
        )

    def adding(self, checks: Sequence[Check], trust_level: TrustLevel | None = None) -> TrustReport:
        """A copy with ``checks`` added (and its level set to ``trust_level`` when given): evidence
        checked after the evaluation (the metadata's own signature, a registry's answer, VSAs, an
        AIP-14 contract) never changes a report already handed out or kept by the verdict cache."""
        out = self.copy()
        out.checks.extend(checks)
        if trust_level is not None:
            out.trust_level = trust_level
        return out

    def digest(self) -> str:
        """sha256 of the canonical JSON of the report's facts (a decision reads this very digest,
        ``Decision.report_digest``: the facts alone, without the ``decision`` key)."""
        body = self.to_json()
        del body["decision"]
        return canonical_digest(body, stringify=True)


def _json_copy(value: Any) -> Any:
    """A copy of a JSON value (dicts and lists new, all the way down)."""
    if isinstance(value, dict):
        return {k: _json_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_copy(v) for v in value]
    return value


__all__ = [
    "OTHER_BYTES",
    "EvidenceSummary",
    "TrustLevel",
    "Check",
    "CheckFailure",
    "CheckStatus",
    "Impact",
    "SignatureResult",
    "ProvenanceResult",
    "Reason",
    "Decision",
    "Behavior",
    "TrustReport",
]
