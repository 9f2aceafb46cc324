"""SLSA Verification Summary Attestations (VSA v1): the statement ``verify --emit-vsa`` writes, and the
checks ``verify-vsa`` and admission apply to one, as slsa-verifier applies them.

Spec: https://slsa.dev/spec/v1.0/verification_summary (predicate ``https://slsa.dev/verification_summary/v1``
in an in-toto Statement v1). slsa-verifier's checks (``verifiers/internal/vsa/verifier.go``), in its order,
after the signature: every expected subject digest is some subject's digest (any digest type, e.g.
``gce_image_id``); ``verifier.id`` equals the expected one; ``resourceUri`` equals the expected one;
``verificationResult`` is ``PASSED``; every expected SLSA track level ``SLSA_<TRACK>_LEVEL_<N>`` is met by
the highest level of that track in ``verifiedLevels`` (at least N), and every other expected level is
listed exactly. Nothing else is checked.

No crypto here: the envelope's signature is ``signature/envelope.py``'s; the two meet in ``admission/vsa.py``.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from atip_trust._base.jsonio import parse_json
from atip_trust._base.record import Record
from atip_trust._base.times import parse_rfc3339
from atip_trust.errors import BundleError
from atip_trust.provenance.slsa import INTOTO_PAYLOAD_TYPE, STATEMENT_V1, Statement, parse_statement

if TYPE_CHECKING:
    from typing import Any

VSA_PREDICATE_TYPE = "https://slsa.dev/verification_summary/v1"
#: The N of ``SLSA_<TRACK>_LEVEL_<N>``: Go ``strconv.Atoi`` syntax in ASCII, bounded (Atoi is int64).
_LEVEL_NUMBER = re.compile(r"[+-]?[0-9]{1,18}")
PASSED = "PASSED"
FAILED = "FAILED"


class VsaProblem(Record):
    """One expectation a VSA does not meet: a stable code (for reasons), expected and actual."""

    code: str
    message: str
    expected: Any
    actual: Any


class Vsa(Record):
    """The fields of a parsed VSA that verification and admission read."""

    #: Each subject's digests, every digest type, as ``{type: value}``.
    subjects: tuple[dict[str, str], ...]
    verifier_id: str
    time_verified: datetime | None
    resource_uri: str
    policy_uri: str | None
    #: ``policy.digest`` as ``{type: value}``.
    policy_digest: dict[str, str]
    result: str
    levels: tuple[str, ...]

    def has_digest(self, alg: str, value: str) -> bool:
        return any(s.get(alg) == value for s in self.subjects)


def build_level(level: int | None) -> list[str]:
    """``verifiedLevels`` for a PASSED verification: the SLSA Build level the trusted-builder map gave
    (provenance/slsa.py), or none when no provenance earned one (a VSA never claims more than we saw)."""
    return [f"SLSA_BUILD_LEVEL_{level}"] if level is not None else []


def vsa_statement(*, digests: dict[str, str], name: str, verifier_id: str, time_verified: datetime,
                  resource_uri: str, policy_uri: str, policy_digest: dict[str, str],
                  inputs: list[tuple[str, dict[str, str]]], passed: bool, levels: list[str],
                  version: str) -> dict[str, Any]:
    """The in-toto Statement v1 of a VSA (spec "Schema"); ``inputs``: (uri, digest) of each bundle used.

    A FAILED VSA lists no levels: a level is a claim that something was verified at it."""
    return {
        "_type": STATEMENT_V1,
        "subject": [{"name": name or "_", "digest": dict(digests)}],
        "predicateType": VSA_PREDICATE_TYPE,
        "predicate": {
            "verifier": {"id": verifier_id, "version": {"atip-trust": version}},
            "timeVerified": time_verified.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "resourceUri": resource_uri,
            "policy": {"uri": policy_uri, "digest": dict(policy_digest)},
            "inputAttestations": [{"uri": uri, "digest": dict(d)} for uri, d in inputs],
            "verificationResult": PASSED if passed else FAILED,
            "verifiedLevels": list(levels) if passed else [],
        },
    }


#: The fields slsa-verifier's typed VSA reads (``verifiers/internal/vsa/v1.0/vsa.go``), by object, with
#: the JSON type each must have: Go's ``json.Unmarshal`` refuses any other type, so a value we would
#: read as empty or coerce is one slsa-verifier refuses (``null`` is absent for both).
_STATEMENT_FIELDS: dict[str, type] = {"_type": str, "subject": list, "predicateType": str, "predicate": dict}
_PREDICATE_FIELDS: dict[str, type] = {"verifier": dict, "timeVerified": str, "resourceUri": str, "policy": dict,
                     "inputAttestations": list, "verificationResult": str, "verifiedLevels": list,
                     "dependencyLevels": dict, "slsaVersion": str}
_MATERIAL_FIELDS: dict[str, type] = {"uri": str, "digest": dict}
_SUBJECT_FIELDS: dict[str, type] = {"name": str, "digest": dict}
_VERIFIER_FIELDS: dict[str, type] = {"id": str, "version": dict}


def _fields(obj: Any, known: dict[str, type], path: str) -> dict[str, Any]:
    """``obj`` as an object whose known fields have their types. Go matches JSON keys to fields
    case-insensitively, the last match winning: ``"VerificationResult": "FAILED"`` after
    ``"verificationResult": "PASSED"`` is FAILED to slsa-verifier. A key that differs from a field only
    in case, or two keys equal but for case, is refused, so both readers see one value."""
    if obj is None:
        return {}
    if not isinstance(obj, dict):
        raise BundleError(f"expected an object, got {type(obj).__name__}", path=path)
    folded: dict[str, str] = {}
    fields = {k.casefold(): k for k in known}
    for key in obj:
        twin = folded.setdefault(key.casefold(), key)
        if twin != key or (key.casefold() in fields and fields[key.casefold()] != key):
            raise BundleError(f"key {key!r} differs only in case from {twin if twin != key else fields[key.casefold()]!r}"
                              " (a reader that matches keys case-insensitively would read another value)",
                              path=f"{path}.{key}")
    for key, kind in known.items():
        value = obj.get(key)
        if value is not None and (not isinstance(value, kind) or isinstance(value, bool)):
            raise BundleError(f"expected {kind.__name__}, got {type(value).__name__}", path=f"{path}.{key}")
    return obj


def _string_map(value: Any, path: str, kind: type = str) -> dict[str, Any]:
    """A JSON object whose values are all ``kind`` (Go ``map[string]string`` / ``map[string]int``)."""
    if value is None:
        return {}
    bad = [k for k, v in value.items() if not isinstance(v, kind) or isinstance(v, bool)]
    if bad:
        raise BundleError(f"expected {kind.__name__} values, got {type(value[bad[0]]).__name__}",
                          path=f"{path}.{bad[0]}")
    return dict(value)


def _material(value: Any, path: str) -> dict[str, str]:
    """A ``ProvenanceMaterial`` (``{"uri", "digest"}``): the policy and each input attestation."""
    obj = _fields(value, _MATERIAL_FIELDS, path)
    return _string_map(obj.get("digest"), f"{path}.digest")


def _time(value: Any) -> datetime | None:
    """``timeVerified``: absent is None (its age cannot be known; admission then ignores the VSA); any
    other value must be an RFC 3339 date-time with ``T`` within a sane range (_base/times.py)."""
    if value is None:
        return None
    try:
        return parse_rfc3339(value)
    except ValueError as err:
        raise BundleError(str(err), path="$.predicate.timeVerified") from None


def _strs(value: Any, path: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise BundleError("expected a list of strings", path=path)
    return tuple(value)


def parse_vsa(payload_type: str, payload: bytes) -> Vsa:
    """A VSA from a (signature-checked) DSSE payload, typed as slsa-verifier types it; ``BundleError``
    when it is not one (the JSON itself: strict, no duplicate keys, _base/jsonio.py)."""
    if payload_type != INTOTO_PAYLOAD_TYPE:
        raise BundleError(f"payloadType is {payload_type!r}, expected {INTOTO_PAYLOAD_TYPE!r}",
                          path="$.payloadType")
    stmt: Statement = parse_statement(payload_type, payload)
    if stmt.predicate_type != VSA_PREDICATE_TYPE:
        raise BundleError(f"predicateType is {stmt.predicate_type!r}, expected {VSA_PREDICATE_TYPE!r}",
                          path="$.predicateType")
    top = _fields(parse_json(payload, what="VSA statement"), _STATEMENT_FIELDS, "$")
    for i, subject in enumerate(top.get("subject") or ()):
        _string_map(_fields(subject, _SUBJECT_FIELDS, f"$.subject[{i}]").get("digest"), f"$.subject[{i}].digest")
    p = _fields(stmt.predicate, _PREDICATE_FIELDS, "$.predicate")
    verifier = _fields(p.get("verifier"), _VERIFIER_FIELDS, "$.predicate.verifier")
    _string_map(verifier.get("version"), "$.predicate.verifier.version")
    _string_map(p.get("dependencyLevels"), "$.predicate.dependencyLevels", int)
    for i, item in enumerate(p.get("inputAttestations") or ()):
        _material(item, f"$.predicate.inputAttestations[{i}]")
    policy = _fields(p.get("policy"), _MATERIAL_FIELDS, "$.predicate.policy")
    subjects = tuple({**{a: d.hex for a, d in s.digests.items()}, **s.other} for s in stmt.subjects)
    return Vsa(
        subjects=subjects,
        verifier_id=verifier.get("id") or "",
        time_verified=_time(p.get("timeVerified")),
        resource_uri=p.get("resourceUri") or "",
        policy_uri=policy.get("uri") or None,
        policy_digest=_material(p.get("policy"), "$.predicate.policy"),
        result=p.get("verificationResult") or "",
        levels=_strs(p.get("verifiedLevels"), "$.predicate.verifiedLevels"),
    )


def track_levels(levels: tuple[str, ...] | list[str]) -> dict[str, int]:
    """slsa-verifier ``extractSLSALevels``: ``SLSA_<TRACK>_LEVEL_<N>`` -> the highest N per track;
    a malformed ``SLSA_`` level is an error (``BundleError``), other names are not track levels."""
    ladder: dict[str, int] = {}
    for level in levels:
        if not level.startswith("SLSA_"):
            continue
        parts = level.split("_", 3)
        # strconv.Atoi's syntax, ASCII digits only: str.isdigit would take "³" (and int() then raise)
        # or a full-width "３" (read as 3).
        if len(parts) != 4 or parts[2] != "LEVEL" or not _LEVEL_NUMBER.fullmatch(parts[3]):
            raise BundleError(f"invalid SLSA level {level!r} (expected SLSA_<TRACK>_LEVEL_<N>)",
                              path="verifiedLevels")
        ladder[parts[1]] = max(ladder.get(parts[1], int(parts[3])), int(parts[3]))
    return ladder


def subject_problem(vsa: Vsa, expected: list[str]) -> VsaProblem | None:
    """Every ``ALG:VALUE`` expected must be some subject's digest of that type (exact string)."""
    if not expected:
        return VsaProblem("VSA_NO_SUBJECT_DIGEST", "no subject digest to match (--subject-digest)",
                          "at least one", None)
    for want in expected:
        alg, sep, value = want.partition(":")
        if not sep:
            return VsaProblem("VSA_BAD_SUBJECT_DIGEST", f"{want!r} is not <digest type>:<digest value>",
                              "ALG:VALUE", want)
        if not vsa.has_digest(alg, value):
            return VsaProblem("VSA_SUBJECT_MISMATCH", f"expected digest not found: {want}", want,
                              list(vsa.subjects))
    return None


def level_problem(vsa: Vsa, expected: list[str]) -> VsaProblem | None:
    """slsa-verifier ``matchVerifiedLevels``: track levels at least, other levels exactly."""
    try:
        want, got = track_levels(expected), track_levels(vsa.levels)
    except BundleError as err:
        return VsaProblem("VSA_BAD_LEVEL", err.message, expected, list(vsa.levels))
    for track, n in sorted(want.items()):
        if got.get(track, -1) < n:
            return VsaProblem("VSA_LEVEL_TOO_LOW", f"SLSA {track} level must be at least {n}",
                              f"SLSA_{track}_LEVEL_{n}", list(vsa.levels))
    for level in expected:
        if not level.startswith("SLSA_") and level not in vsa.levels:
            return VsaProblem("VSA_LEVEL_MISSING", f"expected verified level not found: {level}", level,
                              list(vsa.levels))
    return None


def check_vsa(vsa: Vsa, *, digests: list[str], verifier_id: str, resource_uri: str,
              levels: list[str]) -> list[VsaProblem]:
    """slsa-verifier's matches after the signature, in its order; the first failure ends it (as there)."""
    checks: list[VsaProblem | None] = [subject_problem(vsa, digests)]
    if not checks[-1]:
        checks.append(None if vsa.verifier_id == verifier_id else VsaProblem(
            "VSA_VERIFIER_MISMATCH", "verifier ID mismatch", verifier_id, vsa.verifier_id or None))
    if not checks[-1]:
        checks.append(None if vsa.resource_uri and vsa.resource_uri == resource_uri else VsaProblem(
            "VSA_RESOURCE_MISMATCH", "resource URI mismatch", resource_uri, vsa.resource_uri or None))
    if not checks[-1]:
        checks.append(None if vsa.result == PASSED else VsaProblem(
            "VSA_NOT_PASSED", "verification result is not PASSED", PASSED, vsa.result or None))
    if not checks[-1]:
        checks.append(level_problem(vsa, levels))
    return [c for c in checks if c is not None]


__all__ = ["FAILED", "PASSED", "VSA_PREDICATE_TYPE", "Vsa", "VsaProblem", "build_level", "check_vsa",
           "level_problem", "parse_vsa", "subject_problem", "track_levels", "vsa_statement"]
