"""Verification Summary Attestations as library calls: write one for a verification
(``verify --emit-vsa``), and check one as slsa-verifier ``verify-vsa`` does.

A CI job verifies a release once and signs what it found; a fleet machine then checks that one signed
summary instead of the original bundles (SLSA v1.0 "Verification Summary Attestation", "How to
verify"). The statement is ``provenance/vsa.py``'s, the envelope and its key-id rule
``signature/envelope.py``'s; this module joins them, as ``evaluate`` joins signatures and provenance.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

from atip_trust._base.files import read_capped, write_atomic
from atip_trust._base.jsonio import canonical_json, parse_json
from atip_trust._base.limits import LIMITS
from atip_trust._base.record import Record
from atip_trust._version import __version__
from atip_trust.errors import AtipTrustError, BundleError, EnvironmentFailure, UsageError
from atip_trust.facts.digest import Digest
from atip_trust.facts.report import Check, Decision, TrustLevel, TrustReport
from atip_trust.policy.verifiers import VerifierRule, verifier_rules
from atip_trust.provenance.slsa import INTOTO_PAYLOAD_TYPE
from atip_trust.provenance.vsa import (
    PASSED,
    Vsa,
    VsaProblem,
    build_level,
    check_vsa,
    level_problem,
    parse_vsa,
    vsa_statement,
)
from atip_trust.signature import bundle, keyless, keyless_sign, legacy_bundle
from atip_trust.signature.envelope import (
    envelope_signed_by,
    load_private_key,
    parse_envelope,
    sign_envelope,
)
from atip_trust.signature.identity import CertificateFacts, IdentityRule, match_identities
from atip_trust.signature.keys import load_public_key
from atip_trust.signature.trustroot import RootChoiceError, TrustRoot

if TYPE_CHECKING:
    from atip_trust.policy.model import Policy
    from atip_trust.signature.bundle import BundleInput

PathLike = str | os.PathLike[str]

#: A tool's VSAs kept by digest beside its bundles (``--bundle-dir``: ``<hex>.vsa.jsonl``).
VSA_SUFFIX = ".vsa.jsonl"

#: Without ``--policy`` the flags are the policy: this names them (the digest is of the flags).
FLAGS_POLICY_URI = "atip-trust:verify-flags"


def file_digest(path: PathLike, what: str) -> dict[str, str]:
    """``{"sha256": hex}`` of an input attestation, read capped like every bundle."""
    data = read_capped(path, LIMITS.bundle_bytes, what=what)
    return {"sha256": hashlib.sha256(data).hexdigest()}


def policy_reference(policy_digest: str | None, constraints_text: str, policy_uri: str | None) -> tuple[str, dict[str, str]]:
    """``policy.uri`` and ``policy.digest``: the composed policy's digest (``sha256:<hex>``), or, with
    flags alone, the SHA-256 of the flags' canonical form, so two CI jobs with different flags never
    write the same policy digest."""
    if policy_digest is not None:
        alg, _, value = policy_digest.partition(":")
        return policy_uri or "atip-trust:policy", {alg: value}
    raw = canonical_json({"constraints": constraints_text})
    return policy_uri or FLAGS_POLICY_URI, {"sha256": hashlib.sha256(raw).hexdigest()}


def emit_vsa(report: TrustReport, decision: Decision, *, key: PathLike | None, verifier_id: str, resource_uri: str,
             policy_uri: str, policy_digest: dict[str, str], bundles: Sequence[PathLike],
             key_id: str | None = None, now: datetime | None = None, keyless: bool = False,
             trust_config: PathLike | None = None, identity: Any = None) -> bytes:
    """The VSA of ``report`` as one JSON line, whatever the verdict: PASSED exactly when the
    verification allowed the artifact (its decision), FAILED otherwise. Signed with ``key`` (a DSSE
    envelope), or ``keyless`` with the CI's ambient OIDC identity (a Sigstore bundle;
    signature/keyless_sign.py, the instance of ``trust_config``; ``identity``: the token
    ``ambient_identity`` found, else it is looked for now)."""
    if not verifier_id or not resource_uri:
        raise EnvironmentFailure("a VSA needs a verifier id and a resource URI (--vsa-verifier-id, "
                                 "--vsa-resource-uri)")
    signer = None
    if keyless:
        identity = identity if identity is not None else ambient_identity()
    elif key is None:
        raise UsageError("a VSA is signed with a key (--vsa-key) or keylessly (--vsa-keyless)")
    else:
        signer = load_private_key(key)
    # PASSED only when enforce mode would allow too, with nothing waived: a warn/audit policy lets a
    # failure through (MODE_*, policy/decide.py), a waiver lifts a requirement until its expiry (WAIVED),
    # and a PASSED summary of either would be admitted by every machine that trusts this verifier,
    # whatever its own mode, for as long as its maxAge allows (a VSA carries no waiver's expiry).
    passed = decision.behavior == "allow" and report.trust_level is TrustLevel.VERIFIED \
        and not any(r.code.startswith("MODE_") or r.code == "WAIVED" for r in decision.reasons)
    level = report.provenance.slsa_level if report.provenance.status == "valid" else None
    stmt = vsa_statement(
        digests=dict(report.digests),
        name=os.path.basename(report.path) if report.path else "_",
        verifier_id=verifier_id,
        time_verified=now or datetime.now(timezone.utc),
        resource_uri=resource_uri,
        policy_uri=policy_uri,
        policy_digest=policy_digest,
        inputs=[(os.path.basename(os.fspath(b)), file_digest(b, "bundle")) for b in bundles],
        passed=passed,
        levels=build_level(level),
        version=__version__,
    )
    payload = canonical_json(stmt, ascii_only=False)
    if signer is None:
        signed = keyless_sign.sign_statement(payload, sha256=report.digests.get("sha256", ""),
                                             flag="--vsa-keyless", config=trust_config, token=identity)
        return canonical_json(json.loads(signed)) + b"\n"
    envelope = sign_envelope(signer, INTOTO_PAYLOAD_TYPE, payload, key_id=key_id)
    return canonical_json(envelope) + b"\n"


def ambient_identity() -> Any:
    """``--vsa-keyless``: the CI's ambient OIDC identity, or exit 2 naming what is missing
    (signature/keyless_sign.py); looked for before anything is verified."""
    return keyless_sign.ambient_identity("--vsa-keyless")


def write_vsa(path: PathLike, line: bytes) -> None:
    """Write the VSA all at once (a reader never sees half an envelope)."""
    try:
        write_atomic(path, line, mode=0o644)
    except OSError as err:
        raise EnvironmentFailure(f"cannot write the VSA: {err.strerror or err}", path=os.fspath(path)) from err


class VsaVerification(Record):
    """What ``verify-vsa`` found: the signing key's id (None: no signature by the key), the VSA
    (None when the signature did not verify: an unsigned statement is never read), the problems."""

    _no_repr = frozenset({"statement"})
    path: str
    key_id: str | None
    vsa: Vsa | None
    problems: tuple[VsaProblem, ...]
    #: The signed statement's bytes as signed (``--print-attestation``); empty when not signed.
    statement: bytes = b""

    @property
    def passed(self) -> bool:
        return self.vsa is not None and not self.problems

    def to_json(self) -> dict[str, Any]:
        vsa = self.vsa
        return {
            "command": "verify-vsa",
            "attestation": self.path,
            "result": "PASSED" if self.passed else "FAILED",
            "key_id": self.key_id,
            "vsa": None if vsa is None else {
                "subjects": list(vsa.subjects), "verifier_id": vsa.verifier_id,
                "time_verified": vsa.time_verified.isoformat() if vsa.time_verified else None,
                "resource_uri": vsa.resource_uri, "policy": {"uri": vsa.policy_uri, "digest": vsa.policy_digest},
                "verification_result": vsa.result, "verified_levels": list(vsa.levels)},
            "problems": [{"code": p.code, "message": p.message, "expected": p.expected, "actual": p.actual}
                         for p in self.problems],
            "exit_code": 0 if self.passed else 1,
        }


def vsa_documents(raw: bytes, label: str) -> list[tuple[str, bytes]]:
    """Every JSON document of a VSA file, each with its label: the whole file when it is one document
    (pretty-printed or one line), else one per non-empty line (a ``.jsonl``), labelled ``file#N``. A
    line that is not JSON is the file's error (``MalformedInputError``): no line is ever left unread."""
    try:
        parse_json(raw.strip(), what="VSA", max_depth=LIMITS.json_depth)
        return [(label, raw)]
    except AtipTrustError as whole:
        lines = [ln for ln in raw.splitlines() if ln.strip()]
        if len(lines) < 2:
            raise BundleError(f"not a VSA: {whole.message}", path=label) from whole
    if len(lines) > LIMITS.bundle_lines:
        raise BundleError(f"{len(lines)} VSAs in one file, over the cap of {LIMITS.bundle_lines}", path=label)
    out = []
    for i, line in enumerate(lines, 1):
        where = f"{label}#{i}"
        try:
            parse_json(line, what="VSA", max_depth=LIMITS.json_depth)
        except AtipTrustError as err:
            raise BundleError(f"line {i} is not a VSA: {err.message}", path=where) from err
        out.append((where, line))
    return out


def _one_document(path: PathLike) -> tuple[str, bytes]:
    """``verify-vsa``'s one VSA: a file holding more than one document is refused, as slsa-verifier
    refuses it (its ``json.Unmarshal`` of the whole file fails on a second value): which of several
    summaries would it vouch for?"""
    label = os.fspath(path)
    docs = vsa_documents(read_capped(path, LIMITS.bundle_bytes, what="VSA"), label)
    if len(docs) > 1:
        raise BundleError(f"the file holds {len(docs)} JSON documents; verify-vsa checks one VSA per file "
                          "(as slsa-verifier): split the file", path=label)
    return docs[0]


def read_signed_vsa(path: PathLike, public_key: PathLike, key_id: str | None
                    ) -> tuple[str | None, Vsa | None, bytes]:
    """The VSA in ``path`` (key id, VSA, statement bytes) if ``public_key`` signed it under the key-id
    rule (envelope.py), else ``(None, None, b"")``: an envelope the key did not sign is never parsed."""
    label, data = _one_document(path)
    env = parse_envelope(data, source=label)
    signed = envelope_signed_by(env, load_public_key(public_key), key_id)
    if signed is None:
        return None, None, b""
    return signed, parse_vsa(env.payload_type, env.payload), env.payload


def verify_vsa(path: PathLike, *, public_key: PathLike, key_id: str | None, digests: list[str],
               verifier_id: str, resource_uri: str, levels: list[str]) -> VsaVerification:
    """slsa-verifier ``VerifyVSA``: the signature (step 1, the key-id rule), the predicate type
    (step 3), then subject digests, verifier id, resource URI, PASSED and levels (``check_vsa``)."""
    signed, vsa, statement = read_signed_vsa(path, public_key, key_id)
    if vsa is None:
        want = key_id or "the key's SHA256 fingerprint"
        return VsaVerification(os.fspath(path), None, None, (VsaProblem(
            "VSA_SIGNATURE", f"no signature by the public key under key id {want}", want, None),))
    problems = check_vsa(vsa, digests=digests, verifier_id=verifier_id, resource_uri=resource_uri,
                         levels=levels)
    return VsaVerification(os.fspath(path), signed, vsa, tuple(problems), statement)


def verify_vsa_keyless(path: PathLike, *, trust_root: TrustRoot, signers: Sequence[IdentityRule],
                       digests: list[str], verifier_id: str, resource_uri: str,
                       levels: list[str]) -> VsaVerification:
    """A VSA in a Sigstore bundle (keyless: a Fulcio certificate and a log entry or signed timestamps),
    which slsa-verifier cannot check: the bundle is verified (``_verify_keyless``, bound to the
    ``sha256`` subject digest given), the certificate must match ``signers`` (cosign's identity rules),
    then the same checks as a key-signed VSA. ``key_id`` in the result is the signer identity. One
    bundle per file (``_one_document``; a GitHub attestations answer holding several is refused too)."""
    sha = [d.partition(":")[2] for d in digests if d.startswith("sha256:")]
    if not sha:
        raise UsageError("a keyless VSA is bound to its subject by sha256: give --subject-digest sha256:<hex>")
    if not signers:
        raise UsageError("a keyless VSA needs the signer identity (--certificate-identity or "
                         "--certificate-identity-regexp, and --certificate-oidc-issuer)")
    label, data = _one_document(path)
    found = bundle.bundles_from_bytes(label, data)
    if len(found) != 1:
        raise BundleError(f"the document holds {len(found)} bundles; verify-vsa checks one VSA per file",
                          path=label)
    got = _verify_keyless(found[0], trust_root, Digest.from_hex("sha256", sha[0]))
    if not isinstance(got, str):
        rule, _ = match_identities(signers, got.facts, evidence=found[0].label)
        if rule is None:
            got = f"{found[0].label}: signed by {got.facts.identity}, not an allowed identity"
    if isinstance(got, str):
        return VsaVerification(os.fspath(path), None, None, (VsaProblem(
            "VSA_SIGNATURE", f"no Sigstore bundle by an allowed signer verifies: {got}",
            [r.describe() for r in signers], None),))
    vsa = parse_vsa(got.payload_type, got.payload)
    problems = check_vsa(vsa, digests=digests, verifier_id=verifier_id, resource_uri=resource_uri,
                         levels=levels)
    return VsaVerification(os.fspath(path), got.facts.identity, vsa, tuple(problems), got.payload)


class _KeylessVsa(Record):
    """A keyless VSA bundle that verified: its certificate's facts, the DSSE payload, and the earliest
    time its signature is shown to have existed (a log's integrated time, or a timestamp authority's
    signed time: Rekor v2 entries and timestamp-only bundles have only the latter)."""

    facts: CertificateFacts
    payload_type: str
    payload: bytes
    signed_at: datetime | None


def _verify_keyless(b: BundleInput, trust_root: TrustRoot, sha256: Digest) -> _KeylessVsa | str:
    """One keyless VSA bundle, verified by the verifier that owns its shape (signature/bundle.py routes,
    as ``evaluate`` does): sigstore-python for a logged v0.2+ bundle, signature/legacy_bundle.py for a
    timestamp-only one (GitHub's instance: allowed only by a root without logs, or a policy's
    ``requireTransparencyLog: false``) and for legacy entries. The root is the admission's, or of a
    ``trusted_root.jsonl`` the one member that issued the certificate. Why not, as text."""
    if b.content != "dsse" or b.route not in ("sigstore", "timestamp", "legacy"):
        return f"{b.label}: " + (b.error.diagnostics() if b.error else "not a keyless DSSE bundle")
    try:
        root = trust_root.choose(b.signing_certificate(), b.log_ids()) if trust_root.check().members \
            else trust_root
    except RootChoiceError as err:
        return f"{b.label}: {err.message}"
    if b.route != "sigstore":
        return _verify_legacy(b, root)
    if not root.tlogs:
        return f"{b.label}: the bundle carries a log entry and trusted root {root.name} lists no log"
    out = keyless.KeylessVerifier(root).verify(b, {"sha256": sha256})
    if not out.valid or out.facts is None or out.payload is None or out.payload_type is None:
        failed = next((c for c in out.checks if c.failed), None)
        return f"{b.label}: {failed.message if failed else 'does not verify'}"
    times = keyless.signed_times(b.doc, out.integrated_time)
    return _KeylessVsa(out.facts, out.payload_type, out.payload, min(times) if times else None)


def _verify_legacy(b: BundleInput, root: TrustRoot) -> _KeylessVsa | str:
    """A timestamp-only or legacy-entry DSSE bundle (signature/legacy_bundle.py); its signing times are
    every verified one (the earliest is when the signature existed)."""
    timestamped = b.route == "timestamp"
    try:
        res = (legacy_bundle.verify_timestamped_dsse if timestamped else legacy_bundle.verify_legacy_dsse_detailed)(
            b.doc, root, evidence=b.label)
    except legacy_bundle.VERIFICATION_ERRORS as err:
        return f"{b.label}: {err.to_check(evidence=b.label).message} (trusted root {root.name})"
    except AtipTrustError as err:
        return f"{b.label}: {err.diagnostics()}"
    times = list(res.times) or [res.integrated_time]
    if max(times).timestamp() > datetime.now(timezone.utc).timestamp() + keyless.CLOCK_SKEW:
        return f"{b.label}: signed at {max(times).isoformat()}, in the future"
    return _KeylessVsa(CertificateFacts.from_certificate(res.certificate), res.payload_type, res.payload,
                       min(times))


# --- admission from VSAs (trust.verifiers) --------------------------------------------------------------

#: A VSA dated this far ahead of the local clock still counts (clock skew between CI and machine).
FUTURE_SKEW_SECONDS = 300


class _Signed(Record):
    """A VSA whose signature verified, with every ``trust.verifiers`` entry that signed it (several
    entries may share a key or an identity under different ids) and, keyless, the log's time."""

    vsa: Vsa
    rules: tuple[VerifierRule, ...]
    #: Keyless: the earliest verified time the signature existed (``_KeylessVsa``); None for a key.
    signed_at: datetime | None = None
    #: Which VSA of its file (``file#N`` when the file holds several), for its check's evidence.
    label: str = ""

    def rule(self) -> VerifierRule:
        """The entry for the VSA's own ``verifier.id`` when one signed it, else the first."""
        return next((r for r in self.rules if r.id == self.vsa.verifier_id), self.rules[0])


def _is_sigstore_bundle(data: bytes) -> bool:
    """A Sigstore bundle (keyless) rather than a bare DSSE envelope (key-signed): a ``mediaType`` of
    the bundle's, its ``dsseEnvelope`` or ``verificationMaterial``, or a GitHub attestations answer."""
    try:
        doc = parse_json(data.strip(), what="VSA", max_depth=LIMITS.json_depth)
    except AtipTrustError:
        return False  # not JSON: parse_envelope reports it
    return isinstance(doc, dict) and ("dsseEnvelope" in doc or "verificationMaterial" in doc
                                      or "attestations" in doc
                                      or str(doc.get("mediaType", "")).startswith("application/vnd.dev.sigstore.bundle"))


def _key_signed(data: bytes, where: str, rules: Sequence[VerifierRule]) -> _Signed | str:
    """One DSSE envelope of a VSA file, with the listed verifiers' keys that signed it."""
    env = parse_envelope(data, source=where)
    signed = tuple(r for r in rules if r.public_key is not None
                   and envelope_signed_by(env, load_public_key(r.public_key), r.key_id) is not None)
    if not signed:
        return f"VSA ignored: not signed by a verifier policy trusts (trust.verifiers) ({where})"
    return _Signed(parse_vsa(env.payload_type, env.payload), signed, label=where)


def _keyless_signed(bundles: Sequence[BundleInput], rules: Sequence[VerifierRule], trust_root: TrustRoot | None,
                    sha256: str) -> list[_Signed | str]:
    """Every VSA of these Sigstore bundles that verifies (``_verify_keyless``) and whose certificate
    matches a keyless entry's identity (signature/identity.py, as ``trust.signers``); all of them, not
    the first, so a trusted FAILED after a PASSED counts; for the others, why each is ignored."""
    identities = [r for r in rules if r.signer is not None]
    if not sha256:
        return ["VSA ignored: a keyless VSA is bound to its artifact by sha256, and none was computed"]
    if not identities or trust_root is None:
        return ["VSA ignored: not signed by a verifier policy trusts (trust.verifiers names no Sigstore identity)"]
    found: list[_Signed | str] = []
    for b in bundles:
        got = _verify_keyless(b, trust_root, Digest.from_hex("sha256", sha256))
        if isinstance(got, str):
            found.append(f"VSA ignored: not signed by a verifier policy trusts ({got})")
            continue
        signed = tuple(r for r in identities if r.signer is not None
                       and not IdentityRule.coerce(r.signer).mismatches(got.facts))
        found.append(_Signed(parse_vsa(got.payload_type, got.payload), signed, got.signed_at, b.label)
                     if signed else f"VSA ignored: not signed by a verifier policy trusts ({b.label}: signed by "
                     f"{got.facts.identity} from {got.facts.issuer}, not an identity trust.verifiers lists)")
    return found


def _why_not(signed: _Signed, now: datetime) -> str | None:
    """Why a PASSED VSA by a listed verifier does not vouch, or None: id, resource, level, policy, age."""
    vsa, rule = signed.vsa, signed.rule()
    if vsa.verifier_id != rule.id:
        return f"verifier.id is {vsa.verifier_id!r}, expected {rule.id!r}"
    if rule.resource_uris is not None and vsa.resource_uri not in rule.resource_uris:
        return f"resourceUri {vsa.resource_uri!r} is not one trust.verifiers allows"
    if rule.min_level and level_problem(vsa, [f"SLSA_BUILD_LEVEL_{rule.min_level}"]) is not None:
        return f"verifiedLevels {list(vsa.levels)} are below SLSA_BUILD_LEVEL_{rule.min_level}"
    if rule.policy_digests is not None and not any(
            f"{alg}:{value}" in rule.policy_digests for alg, value in vsa.policy_digest.items()):
        return f"policy.digest {vsa.policy_digest} is not one of trust.verifiers' policyDigests"
    if vsa.time_verified is None:
        return "no timeVerified: its age cannot be known"
    if signed.signed_at is not None and signed.signed_at.timestamp() > 0 and \
            (vsa.time_verified - signed.signed_at).total_seconds() > FUTURE_SKEW_SECONDS:
        # A keyless VSA's signature existed at its earliest verified time (a Rekor v1 integratedTime,
        # or a timestamp authority's genTime: Rekor v2 and timestamp-only bundles): a verification
        # dated later was not what was signed then (a summary post-dated to stretch its maxAge).
        return (f"timeVerified {vsa.time_verified.isoformat()} is after the time it was signed, "
                f"{signed.signed_at.isoformat()} (the log's integrated time or a signed timestamp)")
    age = (now - vsa.time_verified).total_seconds()
    if age > rule.max_age:
        return f"verified {int(age)} s ago, over maxAge {rule.max_age_text}"
    if age < -FUTURE_SKEW_SECONDS:
        return f"timeVerified {vsa.time_verified.isoformat()} is in the future"
    return None


def _review(path: PathLike, digests: dict[str, str], rules: Sequence[VerifierRule], ids: list[str],
            trust_root: TrustRoot | None, at: datetime, unanswered: Sequence[str] = (),
            ) -> list[tuple[Check, datetime | None]]:
    """The checks of a VSA file's VSAs (``vsa_checks``): every document of the file (``vsa_documents``),
    each read by its own kind (a key-signed envelope or a Sigstore bundle: a file may mix them, and the
    first line's kind says nothing of the next); one check per VSA a listed verifier signed, else one
    saying why it does not count, each with when its outcome may next change with time alone (a
    counted VSA expires, one dated ahead becomes current), or None when time cannot change it."""
    label = os.fspath(path)
    raw = read_capped(path, LIMITS.bundle_lines_bytes, what="VSA")
    found: list[_Signed | str] = []
    for where, data in vsa_documents(raw, label):
        if _is_sigstore_bundle(data):
            found += _keyless_signed(bundle.bundles_from_bytes(where, data), rules, trust_root,
                                     digests.get("sha256", ""))
        else:
            found.append(_key_signed(data, where, rules))
    return [(Check("vsa", "skip", s, ids, None, label), None) if isinstance(s, str)
            else _judge(s, digests, s.label or label, at, unanswered) for s in found]


def _judge(signed: _Signed, digests: dict[str, str], label: str, at: datetime,
           unanswered: Sequence[str] = ()) -> tuple[Check, datetime | None]:
    """One signed VSA's check against its ``trust.verifiers`` entry (``_review``); a PASSED one that
    meets it still does not vouch while the policy requires what no VSA states (``unanswered``)."""
    vsa, rule = signed.vsa, signed.rule()
    if not any(vsa.has_digest(alg, value) for alg, value in digests.items()):
        return Check("vsa", "skip", "VSA ignored: its subjects are other bytes",
                     {a: v for a, v in digests.items()}, list(vsa.subjects), label), None
    if vsa.result != PASSED:
        return Check("vsa", "fail", f"trusted verifier {rule.describe()} reported {vsa.result or 'no result'} "
                     "for this artifact", PASSED, vsa.result, label, impact="unverified"), None
    change = None
    if vsa.time_verified is not None:
        # Conservative: the earliest moment any entry's window opens or closes (a re-check then is
        # a full one; an early one costs time, never trust).
        edges = [vsa.time_verified - timedelta(seconds=FUTURE_SKEW_SECONDS),
                 *(vsa.time_verified + timedelta(seconds=r.max_age + 1) for r in signed.rules)]
        change = min((t for t in edges if t > at), default=None)
    why = _why_not(signed, at)
    if why is not None:
        return Check("vsa", "skip", f"VSA ignored: {why}", rule.id, vsa.verifier_id, label), change
    if unanswered:
        return Check("vsa", "skip", f"VSA insufficient: the policy requires {'; '.join(unanswered)}, which a "
                     "VSA does not state (give the attestations themselves)", list(unanswered), None, label), None
    return Check("vsa", "pass", f"{rule.describe()} PASSED this artifact at {', '.join(vsa.levels) or 'no level'}",
                 rule.id, vsa.verifier_id, label), change


def unanswered_requirements(policy: Policy) -> tuple[str, ...]:
    """What ``policy`` requires of the artifact's own evidence that no VSA states (issue 33): a VSA says
    that a verifier PASSED these bytes at some levels under its policy; it names no predicate type of
    the evidence it read and no signer of the artifact. So a required predicate type
    (``requirements.predicateType``, ``--predicate-type``, gh's flags) and a signer identity required by
    a layer that does not itself name VSA verifiers (``trust.signers`` of that layer, or identity
    flags such as ``--certificate-identity`` and gh's ``--repo``/``--owner``, whose rules carry the
    source repository and ref) make a PASSED VSA insufficient, never silently dropped. A layer stating
    both ``trust.signers`` and ``trust.verifiers`` accepts either. Provenance, SLSA level and
    ``trust.sources`` need the provenance itself and are denied by the decision (policy/decide.py)."""
    out: list[str] = []
    if policy.requirements.predicate_type:
        out.append(f"an attestation of predicate type {policy.requirements.predicate_type} "
                   "(requirements.predicateType)")
    for layer in policy.layers:
        trust = layer.document.get("trust")
        if layer.signers is not None and not (isinstance(trust, dict) and "verifiers" in trust):
            out.append(f"a signer identity from the {layer.source} policy layer (trust.signers: "
                       f"{[r.describe() for r in layer.signers][:3]})")
    return tuple(out)


def vsa_checks(digests: dict[str, str], paths: Sequence[PathLike], rules: Sequence[VerifierRule],
               now: datetime | None = None, trust_root: TrustRoot | None = None,
               unanswered: Sequence[str] = ()) -> list[Check]:
    """One check per VSA about these bytes (``digests``: the artifact's hex digests by algorithm).

    ``pass``: a trusted verifier PASSED exactly these bytes and its VSA meets its ``trust.verifiers``
    entry; ``fail``: a trusted verifier FAILED them (evidence of failure); ``skip``: ignored, and why
    (not signed by a listed verifier's key or Sigstore identity, another artifact, another id,
    resource, level, policy or too old), or insufficient (``unanswered``: requirements no VSA can
    answer, ``unanswered_requirements``). A VSA in a Sigstore bundle is verified against ``trust_root``."""
    at = now or datetime.now(timezone.utc)
    ids = [r.describe() for r in rules]
    return [check for p in paths for check, _ in _review(p, digests, rules, ids, trust_root, at, unanswered)]


def vsa_candidates(bundle_dir: PathLike, hexdigest: str) -> list[str]:
    """Where a tool's VSAs are kept by digest (docs/vsa.md): ``DIR/sha256/<hex>.vsa.jsonl``, then
    ``DIR/<hex>.vsa.jsonl``, whether they exist or not (a held tool watches both)."""
    base = os.fspath(bundle_dir)
    return [os.path.join(base, "sha256", hexdigest + VSA_SUFFIX), os.path.join(base, hexdigest + VSA_SUFFIX)]


def claimed_digests(path: PathLike) -> set[tuple[str, str]]:
    """The subject digests a VSA file's statement *claims*, before any signature is checked: used only
    to route a ``scan --vsa`` file to the tools it names, each of which then checks it in full
    (``vsa_checks``); a claim grants nothing. A file that is no VSA is an error (as for ``admit``)."""
    label = os.fspath(path)
    raw = read_capped(path, LIMITS.bundle_lines_bytes, what="VSA")
    # Every document routes the file (a tool's FAILED on a later line must reach that tool: ``_review``
    # reads every document), read as ``_review`` reads them.
    claims: set[tuple[str, str]] = set()
    for _, data in vsa_documents(raw, label):
        claims |= _claims(parse_json(data.strip(), what="VSA", max_depth=LIMITS.json_depth), label)
    return claims


def _claims(doc: Any, label: str) -> set[tuple[str, str]]:
    """The subject digests one VSA document (a DSSE envelope or a Sigstore bundle) claims."""
    env = doc.get("dsseEnvelope", doc) if isinstance(doc, dict) else None
    if not isinstance(env, dict) or not isinstance(env.get("payload"), str):
        raise BundleError("not a VSA: neither a DSSE envelope nor a Sigstore bundle holding one", path=label)
    try:
        payload = base64.b64decode(env["payload"], validate=True)
    except (ValueError, binascii.Error) as err:
        raise BundleError(f"the VSA's payload is not base64: {err}", path=label) from err
    stmt = parse_json(payload, what="VSA statement", max_depth=LIMITS.json_depth)
    subjects = stmt.get("subject") if isinstance(stmt, dict) else None
    return {(str(alg), str(value)) for s in (subjects if isinstance(subjects, list) else [])
            if isinstance(s, dict) and isinstance(s.get("digest"), dict) for alg, value in s["digest"].items()}


def apply_vsas(report: TrustReport, checks: list[Check]) -> TrustReport:
    """``report`` with ``checks`` added and its level set (a copy, ``TrustReport.adding``): a trusted
    FAILED caps it below VERIFIED (the verifier's failure stands over any local evidence); otherwise a
    trusted PASSED makes it VERIFIED."""
    if report.trust_level is TrustLevel.COMPROMISED:
        # evidence of tampering stands: no summary outweighs a signature that fails over these bytes
        return report.adding(checks)
    if any(c.failed for c in checks):
        return report.adding(checks, min(report.trust_level, TrustLevel.UNVERIFIED))
    if any(c.status == "pass" for c in checks):
        return report.adding(checks, TrustLevel.VERIFIED)
    return report.adding(checks)


__all__ = ["FLAGS_POLICY_URI", "FUTURE_SKEW_SECONDS", "VSA_SUFFIX", "VsaVerification", "ambient_identity", "apply_vsas",
           "claimed_digests", "emit_vsa", "file_digest", "policy_reference", "read_signed_vsa", "unanswered_requirements", "verify_vsa",
           "verify_vsa_keyless", "verifier_rules", "vsa_candidates", "vsa_checks", "vsa_documents", "write_vsa"]
