"""The evaluation of one artifact, in a fixed order, producing a ``TrustReport`` (practice 1).

Steps, each guarded so it cannot run out of order and the reference time is fixed once:

  (1) digest      hash the opened artifact (sha256 and sha512, one pass).
  (2) claims      read ``--metadata``: a declared checksum or shim ``binary.hash`` that differs from the
                  artifact's digest is tampering (COMPROMISED); a declared signer is a *claim* compared
                  with the constraint and reported, never used as one (principle 1).
  (3) evidence    verify every bundle and detached signature on its own: keyless (sigstore-python),
                  key-based (keys.py), legacy Rekor entries (legacy_bundle.py), a certificate with
                  its detached signature (certificate_pair.py: checked, but with no log entry it
                  never verifies; a bundle given with it must carry it). Each yields applies /
                  valid / compromised and the signer's certificate facts; the signer is then matched
                  against the allowed identities (identity.py).
  (4) provenance  for every valid, trusted in-toto attestation that names this artifact: statement and
                  SLSA facts against the provenance requirements (provenance.py).
  (5) level       the trust level from all of the above (principle 2):
                  any tampering → COMPROMISED; no applicable material → UNSIGNED; nothing both valid
                  and signed by an allowed signer → UNVERIFIED; provenance required but no trusted
                  attestation satisfies it → PROVENANCE_FAIL; else VERIFIED.
"""

from __future__ import annotations

import pathlib
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from atip_trust._base.files import path_texts
from atip_trust._base.lazy import lazy_import
from atip_trust._base.record import Record, field
from atip_trust.errors import (
    ArtifactAccessError,
    AtipTrustError,
    BundleError,
    TrustRootError,
    UntrustedInputError,
    UsageError,
)
from atip_trust.evaluation.inputs import Constraints, Evidence, SignerSet
from atip_trust.facts.artifact import Artifact, DigestSubject
from atip_trust.facts.digest import Digest
from atip_trust.facts.report import (
    Check,
    EvidenceSummary,
    ProvenanceResult,
    SignatureResult,
    TrustLevel,
    TrustReport,
)
from atip_trust.signature.identity import (
    CertificateFacts,
    match_identities,
)
from atip_trust.signature.trustroot import RootChoiceError, TrustRoot

if TYPE_CHECKING:
    from datetime import datetime
    from pathlib import Path
    from typing import Any

    from atip_trust.facts import metadata
    from atip_trust.facts.metadata import MetadataDocument
    from atip_trust.provenance import slsa
    from atip_trust.provenance.slsa import BuilderMap, BuildSigner
    from atip_trust.signature import bundle, certificate_pair, keyless, keys, legacy_bundle
    from atip_trust.signature.bundle import BundleInput
    from atip_trust.signature.keyless import KeylessVerifier
else:
    metadata = lazy_import("atip_trust.facts.metadata")  # only when there is metadata
    slsa = lazy_import("atip_trust.provenance.slsa")  # only with an attestation, or a policy's sources or builders
    # The verifiers (sigstore, cryptography): when evidence is first checked, never on a cache hit.
    bundle = lazy_import("atip_trust.signature.bundle")
    certificate_pair = lazy_import("atip_trust.signature.certificate_pair")
    keyless = lazy_import("atip_trust.signature.keyless")
    keys = lazy_import("atip_trust.signature.keys")
    legacy_bundle = lazy_import("atip_trust.signature.legacy_bundle")

IN_TOTO_PAYLOAD_TYPE = "application/vnd.in-toto+json"


class EvidenceResult(Record, frozen=False):
    """One bundle or signature, verified on its own."""

    label: str
    route: str
    content: str
    applies: bool = True
    valid: bool = False
    compromised: bool = False
    trusted: bool = False
    facts: CertificateFacts | None = None
    key_digest: str | None = None
    payload_type: str | None = None
    payload: bytes | None = None
    checks: list[Check] = field(default_factory=list)
    provenance: ProvenanceResult | None = None
    provenance_passed: bool = False
    #: Set aside: about another artifact while another bundle verifies this one (``_set_aside_others``).
    set_aside: bool = False

    def summary(self) -> EvidenceSummary:
        return EvidenceSummary(
            evidence=self.label,
            route=self.route,
            content=self.content,
            applies=self.applies,
            valid=self.valid,
            compromised=self.compromised,
            signer_trusted=self.trusted,
            identity=self.facts.identity if self.facts else None,
            issuer=self.facts.issuer if self.facts else None,
            key=self.key_digest,
            extensions=dict(self.facts.extensions) if self.facts else {},
            predicate_type=self.provenance.predicate_type if self.provenance else None,
            provenance=self.provenance,
            checks=tuple(self.checks),
        )

    def to_json(self) -> dict[str, Any]:
        return self.summary().to_json()


class Evaluation:
    """Runs steps (1)-(5) of the module docstring, in order, once."""

    _ORDER = ("digest", "claims", "evidence", "provenance", "level")

    def __init__(
        self,
        artifact: Artifact | DigestSubject,
        constraints: Constraints,
        trust_root: TrustRoot,
        *,
        keyless: KeylessVerifier | None = None,
        shared_with: Sequence[str] = (),
    ) -> None:
        self.artifact = artifact
        #: Digests of the other artifacts this evidence was given for (``VerifyOptions.shared_with``).
        self.shared_with = frozenset(shared_with)
        self.constraints = constraints
        self.trust_root = trust_root.check()
        self._keyless = keyless
        self.now = time.time()  # fixed once for the whole evaluation
        self._done: list[str] = []
        self.digests: dict[str, Digest] = {}
        self.checks: list[Check] = []
        self.results: list[EvidenceResult] = []
        self.claims: dict[str, Any] | None = None
        self.tampered = False
        self._keys: list[keys.PublicKey] | None = None

    def _step(self, name: str) -> None:
        expected = self._ORDER[len(self._done)] if len(self._done) < len(self._ORDER) else None
        if name != expected:
            raise RuntimeError(f"evaluation step {name!r} out of order (next is {expected!r})")
        self._done.append(name)

    # (1)
    def digest(self, *, sha512: bool = True) -> None:
        """sha256 always; sha512 too (same pass) when an attestation subject or a claim may use it."""
        self._step("digest")
        got = self.artifact.digests(("sha256", "sha512") if sha512 else ("sha256",))
        self.digests = {k: v for k, v in got.items()}

    # (2)
    def claims_from(self, meta: Path | MetadataDocument | None) -> None:
        self._step("claims")
        if meta is None:
            return
        doc = meta if isinstance(meta, metadata.MetadataDocument) else metadata.load_metadata(meta)
        claims = doc.claims
        self.claims = claims.to_json()
        name = doc.source_name
        declared: list[tuple[str, Digest]] = []
        if claims.checksum is not None:
            declared.append(("claim.checksum", claims.checksum))
        if claims.binary is not None and claims.binary.hash is not None:
            declared.append(("claim.binary_hash", claims.binary.hash))
        for check_name, want in declared:
            have = self.digests.get(want.algorithm)
            if have is None:
                self.checks.append(Check(check_name, "error",
                                         f"the artifact's {want.algorithm} digest is not known",
                                         str(want), None, name, impact="unverified"))
            elif have == want:
                self.checks.append(Check(check_name, "pass", "declared digest matches", str(want),
                                         str(have), name))
            else:
                self.tampered = True
                self.checks.append(Check(check_name, "fail",
                                         "metadata declares a different digest for this binary",
                                         str(want), str(have), name, impact="compromised"))
        sig = claims.signature
        if sig is not None and (sig.identity or sig.issuer):
            # A claim is compared with the constraint, never used as one (principle 1).
            facts = CertificateFacts(sans=(sig.identity,) if sig.identity else (), issuer=sig.issuer,
                                     extensions={})
            rule, _ = match_identities(self.constraints.signers, facts)
            self.checks.append(Check(
                "claim.signer", "pass" if rule else "skip",
                "declared signer is allowed" if rule else
                "declared signer is not among the allowed signers (claim only, not used)",
                [r.describe() for r in self.constraints.signers],
                f"{sig.identity} from {sig.issuer}", name))

    # (3)
    def evidence(
        self,
        bundles: Sequence[BundleInput],
        signature: Path | None,
        unreadable: Sequence[tuple[Path, AtipTrustError]] = (),
        certificate: Path | None = None,
    ) -> None:
        self._step("evidence")
        for path, err in unreadable:
            # One of several bundle files could not be read: that file's failure, reported, while the
            # others are still verified (material that cannot be checked: at most UNVERIFIED).
            self.results.append(EvidenceResult(
                label=path.name, route="unreadable", content="unknown", applies=True,
                checks=[Check("bundle", "fail", err.diagnostics(), expected="a readable Sigstore bundle",
                              actual=type(err).__name__, evidence=path.name, impact="unverified")]))
        verified = [(b, self._verify_bundle(b)) for b in bundles]
        self.results.extend(r for _, r in verified)
        if certificate is not None and signature is not None:
            pair = self._verify_pair(certificate_pair.load_pair(certificate, signature), verified)
            if pair is not None:
                self.results.append(pair)
        elif signature is not None:
            self.results.append(self._verify_detached(signature))
        for r in self.results:
            if not r.valid or not r.applies:
                continue
            if r.facts is not None:
                # Every signer set must hold: the policy's and the flags' (Constraints.also_signers).
                r.trusted, checks = self.constraints.match_signer(r.facts, evidence=r.label)
                r.checks.extend(checks)
            elif r.key_digest is not None:
                r.trusted = True  # verified against a key the caller named as trusted
        self._set_aside_others()

    def _set_aside_others(self) -> None:
        """A shared attestations file (docs/ci.md: one ``attestations.jsonl`` for every artifact of a
        release) holds, for each artifact, the bundles of all the others. Once a bundle verifies this
        artifact (valid, trusted, naming it), a bundle that names or signs another digest is not about
        this artifact: it is set aside (not applying, not tampering, its failures kept in its own
        entry only), so it neither prints a FAIL line nor adds a SARIF result. With nothing verifying
        this artifact a signed digest that is not this file's stays tampering (COMPROMISED,
        docs/decisions.md): that is how a changed file looks, and a file holding only another
        artifact's bundles can never make this one VERIFIED."""
        verified = any(r.valid and r.trusted and r.applies for r in self.results)
        for r in self.results:
            other = _other_artifact_check(r)
            if other is None:
                continue
            if verified:
                why = "it names or signs another digest, and another bundle verifies this one"
            elif _digests_in(other.actual) & self.shared_with:
                # Evidence given for several artifacts at once (verify A B --bundle shared.jsonl): a
                # bundle about another of them says nothing about this one, which is then UNSIGNED,
                # not COMPROMISED ("COMPROMISED only for evidence given for this artifact alone").
                why = "it names or signs another artifact the same evidence was given for"
            else:
                continue
            r.applies, r.compromised, r.valid, r.trusted, r.set_aside = False, False, False, False, True
            r.checks = [Check(other.name, "skip", f"not about this artifact: {why}", other.expected,
                              other.actual, r.label)]

    def _trusted_keys(self) -> list[keys.PublicKey]:
        """The trusted keys, read and parsed once per evaluation, not once per bundle."""
        if self._keys is None:
            self._keys = [keys.load_public_key(p) for p in self.constraints.keys]
        return self._keys

    def _keyless_verifier(self, root: TrustRoot) -> KeylessVerifier:
        """sigstore-python's Verifier for ``root`` (the given one when it is for this root)."""
        if self._keyless is None or self._keyless.trust_root.digest != root.digest:
            self._keyless = keyless.KeylessVerifier(root)
        return self._keyless

    def _root_for(self, b: BundleInput) -> TrustRoot:
        """The root that verifies ``b``: the trusted root, or the one of a ``trusted_root.jsonl`` whose
        CA issued its certificate (or that lists its log, for a key bundle): ``TrustRoot.choose``."""
        if not self.trust_root.members:
            return self.trust_root
        return self.trust_root.choose(b.signing_certificate(), b.log_ids())

    def _verify_bundle(self, b: BundleInput) -> EvidenceResult:
        r = EvidenceResult(label=b.label, route=b.route, content=b.content)
        if b.route == "key" and self.constraints.keys:
            self._trusted_keys()  # a bad --key file is about every bundle: read before the boundary
        try:
            self._verify_route(b, r, self._root_for(b))
        except RootChoiceError as err:  # no root of a .jsonl, or two, fit this bundle: its failure
            r.checks.append(Check("certificate.chain", "fail", err.message, expected=err.expected,
                                  actual=err.actual, evidence=b.label, impact="unverified"))
        except (ArtifactAccessError, TrustRootError, UsageError):
            raise  # about the inputs as a whole (the artifact, the root, the flags): exit 2 as before
        except UntrustedInputError as err:  # this bundle is malformed: its failure, named by JSON path
            r.valid, r.trusted = False, False
            r.checks.append(Check("bundle", "fail", err.diagnostics(), expected="a well-formed Sigstore bundle",
                                  actual=type(err).__name__, evidence=b.label, impact="unverified"))
        except Exception as err:  # noqa: BLE001 - one bundle's failure, never another's (fail closed)
            r.valid, r.trusted = False, False
            r.checks.append(Check("bundle", "error", f"verification raised {type(err).__name__}: {err}",
                                  evidence=b.label, impact="unverified"))
        if r.content == "dsse" and not r.applies:
            r.checks.append(Check(
                "subject", "fail", "the attestation names another artifact; it does not apply",
                expected=[str(d) for d in self.digests.values()],
                actual=_subject_digests(b), evidence=b.label, impact="unsigned"))
        return r

    def _verify_route(self, b: BundleInput, r: EvidenceResult, root: TrustRoot) -> None:
        """The verifier that owns this bundle's shape (bundle.py routes); a malformed bundle's own
        error is its failed check, naming the JSON path."""
        if b.route == "malformed":
            r.applies = False
            r.checks.append(Check("bundle", "fail", b.error.diagnostics() if b.error else "malformed",
                                  expected="a well-formed Sigstore bundle", actual="BundleError",
                                  evidence=b.label, impact="unverified"))
        elif b.route == "sigstore" and not root.tlogs:
            # sigstore-python refuses such a root outright ("no transparency log instances"): a logged
            # bundle cannot be checked against it, which is this bundle's failure, not the root's.
            r.checks.append(Check("tlog", "fail", f"the bundle carries a transparency log entry and trusted "
                                  f"root {root.name} lists no log to check it with",
                                  expected="a log of the trusted root", actual=", ".join(b.entry_kinds),
                                  evidence=b.label, impact="unverified"))
        elif b.route == "sigstore":
            out = self._keyless_verifier(root).verify(b, self.digests)
            r.valid, r.compromised, r.applies = out.valid, out.compromised, out.applies
            r.facts, r.checks = out.facts, list(out.checks)
            r.payload_type, r.payload = out.payload_type, out.payload
        elif b.route == "key":
            self._verify_key_bundle(b, r, root)
        else:
            self._verify_legacy_bundle(b, r, root)

    def _verify_key_bundle(self, b: BundleInput, r: EvidenceResult, root: TrustRoot) -> None:
        """A bundle whose verification material is a public key: checked against each trusted key."""
        if not self.constraints.keys:
            r.checks.append(Check("key", "fail",
                                  "bundle is signed with a public key; name the trusted key with --key",
                                  expected="a trusted public key", actual=None, evidence=b.label,
                                  impact="unverified"))
            return
        if b.content == "dsse":
            self._verify_key_dsse(b, r, root)
            return
        for key in self._trusted_keys():
            res = keys.verify_key_bundle(b.doc, self.digests["sha256"], key, root,
                                         evidence=b.label)
            r.checks.extend(res.checks)
            r.applies = res.applies
            if res.valid:
                r.valid, r.compromised = True, False
                r.key_digest = str(res.key_digest)
                return
            r.compromised = r.compromised or res.compromised

    def _verify_key_dsse(self, b: BundleInput, r: EvidenceResult, root: TrustRoot) -> None:
        """A DSSE bundle signed with a public key (npm publish attestations), against each trusted key
        (legacy_bundle.verify_key_dsse). A signature that does not verify is tampering only when the
        bundle names that key as its signer (``publicKey.hint`` or the signature's ``keyid``); else
        another key may have signed it (a rotated registry key): unverified."""
        info = b.dsse_payload()
        r.applies = info is not None and keyless.names_artifact(info[1], self.digests)
        for key in self._trusted_keys():
            try:
                ptype, payload, when, checks = legacy_bundle.verify_key_dsse(b.doc, key, root, evidence=b.label)
            except legacy_bundle.VERIFICATION_ERRORS as err:
                check = err.to_check(evidence=b.label)
                claimed = check.name != "signature" or b.names_key(keys.key_digest(key).value)
                tamper = check.impact == "compromised" and r.applies and claimed
                r.compromised = r.compromised or tamper
                r.checks.append(Check(check.name, check.status, f"{check.message} (trusted root {root.name})",
                                      check.expected, check.actual, check.evidence,
                                      "compromised" if tamper else "unverified"))
                continue
            r.checks.extend(checks)
            if self._in_future(when, r, b):
                return
            r.valid, r.compromised = True, False
            r.key_digest = str(keys.key_digest(key))
            r.payload_type, r.payload = ptype, payload
            return

    def _in_future(self, when: datetime, r: EvidenceResult, b: BundleInput) -> bool:
        """A signing time later than now (beyond the allowed clock skew) fails the evidence."""
        if when.timestamp() <= self.now + keyless.CLOCK_SKEW:
            return False
        r.checks.append(Check("time", "fail", "integrated time lies in the future",
                              f"<= now + {keyless.CLOCK_SKEW}s", when.isoformat(), b.label,
                              impact="unverified"))
        return True

    def _verify_legacy_bundle(self, b: BundleInput, r: EvidenceResult, root: TrustRoot) -> None:
        """Bundles sigstore-python 4.5 rejects: ``intoto/0.0.2`` entries, promise-only v0.1/v0.2, and
        timestamp-only bundles (route ``timestamp``: no log entry)."""
        if b.content == "dsse":
            info = b.dsse_payload()
            r.applies = info is not None and keyless.names_artifact(info[1], self.digests)
        logged = b.route != "timestamp"
        try:
            if b.content == "dsse":
                res = (legacy_bundle.verify_legacy_dsse_detailed if logged else legacy_bundle.verify_timestamped_dsse)(
                    b.doc, root, evidence=b.label)
                cert, when, checks = res.certificate, res.integrated_time, res.checks
            else:
                cert, when, checks = (legacy_bundle.verify_legacy_message if logged else
                                      legacy_bundle.verify_timestamped_message)(
                    b.doc, self.digests["sha256"], root, evidence=b.label)
        except legacy_bundle.VERIFICATION_ERRORS as err:
            check = err.to_check(evidence=b.label)
            if check.impact == "compromised" and not r.applies:
                check = Check(check.name, check.status, check.message, check.expected, check.actual,
                              check.evidence, impact="unverified")
            r.compromised = check.impact == "compromised"
            mismatch = None if r.compromised else bundle.root_mismatch(b, check.message, root.name)
            # A timestamp by a TSA the root does not list keeps its step's name; the rest is the chain.
            named = "certificate.chain" if mismatch and check.name != "timestamp" else check.name
            r.checks.append(Check(named, check.status,
                                  mismatch or f"{check.message} (trusted root {root.name})"
                                  f"{b.instance_hint(check.message)}", check.expected, check.actual,
                                  check.evidence, check.impact))
            return
        except BundleError as err:
            r.checks.append(Check("bundle", "fail", err.diagnostics(), evidence=b.label,
                                  impact="unverified"))
            return
        except Exception as err:  # noqa: BLE001 - fail closed on anything unmapped
            r.checks.append(Check("bundle", "error", f"verification raised {type(err).__name__}: {err}",
                                  evidence=b.label, impact="unverified"))
            return
        r.checks.extend(checks)
        if self._in_future(when, r, b):
            return
        r.valid = True
        r.facts = CertificateFacts.from_certificate(cert)
        if b.content == "dsse":
            r.payload_type, r.payload = res.payload_type, res.payload

    def _verify_detached(self, signature: Path) -> EvidenceResult:
        """cosign-style detached signature over the artifact, checked against each trusted key."""
        r = EvidenceResult(label=signature.name, route="key", content="message_signature")
        if not self.constraints.keys:
            raise UsageError("signature (--signature) needs keys (--key): the public key to verify it with",
                             path=str(signature))
        if not isinstance(self.artifact, Artifact):
            raise UsageError("a detached signature (signature, --signature) needs the artifact file, not only its "
                             "digest", path=str(signature))
        sig = keys.load_detached_signature(signature)
        for key in self._trusted_keys():
            res = keys.verify_detached(self.artifact, sig, key, evidence=signature.name)
            r.checks.extend(res.checks)
            if res.valid:
                r.valid, r.compromised = True, False
                r.key_digest = str(res.key_digest)
                return r
            r.compromised = r.compromised or res.compromised
        return r

    def _verify_pair(
        self, pair: certificate_pair.CertificatePair,
        verified: Sequence[tuple[BundleInput, EvidenceResult]],
    ) -> EvidenceResult | None:
        """``--cert`` with ``--signature`` (certificate_pair.py). With message-signature bundles
        alongside, each must carry this very certificate and signature (one that does not is not
        counted) and a matching bundle's verification stands for the pair: None. Alone, the pair's
        certificate, signature and signer are checked and reported, and it fails ``tlog``: it has no
        log entry and no verified signing time (fail closed)."""
        matched = False
        for b, r in verified:
            if b.content != "message_signature":
                continue
            check = certificate_pair.match_bundle(pair, b)
            r.checks.append(check)
            if check.failed:
                r.valid = False
            else:
                matched = True
        if matched:
            return None
        r = EvidenceResult(label=pair.label, route="certificate", content="message_signature")
        try:
            root = self.trust_root.choose(pair.certificate)
            r.checks.extend(certificate_pair.verify_pair(pair, self.digests["sha256"], root))
        except RootChoiceError as err:
            r.checks.append(Check("certificate.chain", "fail", err.message, expected=err.expected,
                                  actual=err.actual, evidence=pair.label, impact="unverified"))
            return r
        except legacy_bundle.VERIFICATION_ERRORS as err:
            check = err.to_check(evidence=pair.label)
            r.compromised = check.impact == "compromised"
            r.checks.append(check)
            return r
        r.facts = CertificateFacts.from_certificate(pair.certificate)
        r.checks.extend(self.constraints.match_signer(r.facts, evidence=pair.label)[1])
        r.checks.append(certificate_pair.no_log_entry(pair))
        return r

    # (4)
    def provenance(self) -> None:
        self._step("provenance")
        c = self.constraints
        builders: BuilderMap | None = None
        for r in self.results:
            if not (r.valid and r.trusted and r.applies and r.content == "dsse"):
                continue
            if builders is None:
                builders = c.builders if c.builders is not None else slsa.BuilderMap.default()
            r.provenance, r.provenance_passed, checks = _check_provenance(
                r, self.digests, c, builders
            )
            r.checks.extend(checks)

    # (5)
    def level(self) -> TrustLevel:
        self._step("level")
        c = self.constraints
        if self.tampered or any(r.compromised for r in self.results):
            return TrustLevel.COMPROMISED
        applicable = [r for r in self.results if r.applies]
        if not applicable:
            return TrustLevel.UNSIGNED
        trusted = [r for r in applicable if r.valid and r.trusted]
        if not trusted:
            return TrustLevel.UNVERIFIED
        if c.wants_provenance and not any(r.provenance_passed for r in trusted):
            return TrustLevel.PROVENANCE_FAIL
        return TrustLevel.VERIFIED

    def report(self, level: TrustLevel) -> TrustReport:
        rep = TrustReport(
            path=self.artifact.path,
            digests={k: v.hex for k, v in self.digests.items()},
            size=self.artifact.identity.size if self.artifact.identity else None,
            trust_level=level,
        )
        rep.claims = self.claims
        rep.checks = list(self.checks)
        for r in self.results:
            if not r.set_aside:  # its own entry (attestations) keeps it; the artifact's checks do not
                rep.checks.extend(r.checks)
        rep.attestations = [r.summary() for r in self.results]
        best = _best(self.results)
        if best is not None:
            status = (
                "valid" if best.valid else "invalid" if best.compromised else "unchecked"
            )
            rep.signature = SignatureResult(
                status=status,  # type: ignore[arg-type]
                identity=best.facts.identity if best.facts else None,
                issuer=best.facts.issuer if best.facts else None,
                kind="key" if best.key_digest else "keyless",
                evidence=best.label,
                extensions=dict(best.facts.extensions) if best.facts else {},
            )
            if best.facts is None and best.key_digest:
                rep.signature.identity = best.key_digest
        prov = [r for r in self.results if r.provenance is not None]
        chosen = next((r for r in prov if r.provenance_passed), prov[0] if prov else None)
        if chosen is not None and chosen.provenance is not None:
            rep.provenance = chosen.provenance
        elif self.constraints.wants_provenance:
            rep.provenance = ProvenanceResult(status="absent")
            rep.checks.append(Check("provenance", "fail",
                                    "provenance is required but no trusted attestation provides it",
                                    impact="provenance"))
        return rep


def _best(results: list[EvidenceResult]) -> EvidenceResult | None:
    """The piece of evidence that best explains the trust level, for the summary fields.

    Only material that applies to this artifact (or is tampering evidence about it) can be the
    headline: a valid attestation about another file says nothing about this one (principle
    2), so with nothing else the headline stays ``absent`` rather than showing another file's signer
    as ``valid``. Policy's signer qualifiers read the headline and the per-evidence entries.
    """
    ranks: list[Callable[[EvidenceResult], bool]] = [
        lambda r: r.valid and r.trusted and r.applies and r.provenance_passed,
        lambda r: r.valid and r.trusted and r.applies,
        lambda r: r.compromised,
        lambda r: r.valid and r.applies,
        lambda r: r.applies,
    ]
    for pred in ranks:
        for r in results:
            if pred(r):
                return r
    return None


def _other_artifact_check(r: EvidenceResult) -> Check | None:
    """The failed check that shows ``r`` is about another artifact, or None: a DSSE attestation whose
    subjects do not name this artifact, or a message signature whose only failure is a signed digest
    that is not this file's (keyless, key and legacy routes all name that check ``digest``)."""
    failed = [c for c in r.checks if c.failed]
    if r.content == "dsse" and not r.applies:
        return next((c for c in failed if c.name == "subject"), None)
    if r.content == "message_signature" and failed and all(c.name == "digest" for c in failed):
        return failed[0]
    return None


def _digests_in(actual: object) -> set[str]:
    """The ``sha256:<hex>`` digests a failed check's ``actual`` names (one, or a list of them)."""
    values = actual if isinstance(actual, list) else [actual]
    return {v for v in values if isinstance(v, str) and v.startswith("sha256:")}


def _subject_digests(b: BundleInput) -> list[str]:
    info = b.dsse_payload()
    if info is None:
        return []
    out: list[str] = []
    for s in keyless.subjects_of(info[1]):
        dg = s.get("digest")
        if isinstance(dg, dict):
            out.extend(f"{k}:{v}" for k, v in dg.items() if k in ("sha256", "sha512"))
    return out


def _build_signer(r: EvidenceResult) -> BuildSigner | None:
    """Who verifiably signed this attestation: its certificate's facts, or the trusted key's digest.
    The trusted-builder map grants a level only when these prove the builder (provenance.SignerBinding)."""
    if r.facts is not None:
        return slsa.BuildSigner(issuer=r.facts.issuer, identities=r.facts.sans, extensions=dict(r.facts.extensions))
    if r.key_digest is not None:
        return slsa.BuildSigner(key_digest=r.key_digest)
    return None


def _check_provenance(
    r: EvidenceResult, digests: dict[str, Digest], c: Constraints, builders: BuilderMap
) -> tuple[ProvenanceResult | None, bool, list[Check]]:
    """Hand one verified, trusted attestation to provenance.py (steps 1-5 there).

    Without provenance requirements the facts are still reported, but a statement this code cannot
    read is not a failure: its checks are shown as ``skip``.
    """
    required = c.wants_provenance
    if r.payload_type != IN_TOTO_PAYLOAD_TYPE or r.payload is None:
        check = Check("payload_type", "fail" if required else "skip",
                      "DSSE payload is not an in-toto statement", IN_TOTO_PAYLOAD_TYPE,
                      r.payload_type, r.label, impact="provenance")
        return None, False, [check]
    try:
        stmt = slsa.parse_statement(r.payload_type, r.payload)
    except BundleError as err:
        check = Check("statement", "fail" if required else "skip", err.diagnostics(), None, None,
                      r.label, impact="provenance")
        return ProvenanceResult(status="invalid"), False, [check]
    req = slsa.ProvenanceRequirements(
        predicate_type=c.predicate_type, builder_id=c.builder_id, source_uri=c.source_uri,
        source_tag=c.source_tag, source_branch=c.source_branch, min_slsa_level=c.min_slsa_level,
        sources=c.sources, provenance_required=c.require_provenance,
    )
    out = slsa.check_provenance(stmt, digests, req, builders, evidence=r.label, signer=_build_signer(r))
    checks = out.checks
    if not required:
        checks = [
            Check(ch.name, "skip", f"(not required) {ch.message}", ch.expected, ch.actual,
                  ch.evidence) if ch.failed else ch
            for ch in checks
        ]
    if not out.applies:
        return None, False, checks
    facts = out.facts
    # A statement that is not SLSA provenance (an SBOM, a PEP 740 publish attestation) says nothing
    # about the build: "unchecked", never "valid", so a decision reading the report cannot count it
    # as provenance (policy ``provenanceRequired`` wants "valid").
    is_slsa = stmt.predicate_type in slsa.SLSA_PROVENANCE_TYPES
    res = ProvenanceResult(
        status="fail" if not out.passed else "valid" if is_slsa else "unchecked",
        predicate_type=stmt.predicate_type,
        builder_id=facts.builder_id if facts else None,
        build_type=facts.build_type if facts else None,
        slsa_level=out.level,
        source=facts.source_json() if facts else None,
        evidence=r.label,
    )
    return res, out.passed, checks


def evaluate(
    artifact: Artifact | DigestSubject,
    evidence: Evidence,
    constraints: Constraints,
    trust_root: TrustRoot,
    *,
    keyless: KeylessVerifier | None = None,
    require_anchor: bool = True,
    shared_with: Sequence[str] = (),
) -> TrustReport:
    """Evaluate one opened artifact. Raises ``UsageError`` when evidence exists but no trust anchor
    (identity or key) was given: as cosign does, ``verify`` refuses to guess whom to trust.

    ``require_anchor=False`` (admission): no anchor is an answer, not an error — the evidence is
    still checked, no signer can be trusted, so the level is at most UNVERIFIED and the policy decides.
    """
    trust_root.check()  # a deferred root (signature/trustroot.py) is checked before anything else
    bundles: list[BundleInput] = []
    unreadable: list[tuple[Path, AtipTrustError]] = []
    given = [pathlib.Path(p) for p in path_texts(evidence.bundles, "bundles")]
    for p in given:
        try:
            bundles.extend(bundle.load_bundles(p))
        except (UntrustedInputError, ArtifactAccessError) as err:
            if len(given) == 1:
                raise  # the only evidence is unreadable: could not evaluate (exit 2)
            unreadable.append((p, err))
    signature = pathlib.Path(evidence.signature) if evidence.signature is not None else None
    certificate = pathlib.Path(evidence.certificate) if evidence.certificate is not None else None
    meta = evidence.metadata
    if isinstance(meta, (bytes, bytearray)):
        meta = metadata.parse_metadata(bytes(meta))
    elif meta is not None and not isinstance(meta, metadata.MetadataDocument):
        meta = pathlib.Path(meta)
    if require_anchor and (bundles or unreadable or signature) and not constraints.has_anchor:
        raise UsageError(
            "no signer to verify against: add --certificate-identity (or "
            "--certificate-identity-regexp) with --certificate-oidc-issuer (or "
            "--certificate-oidc-issuer-regexp), or --key for key-based signatures, or a --policy "
            "that lists signers (library: Constraints(signers=...) or Constraints(keys=...), or a "
            "policy= that lists signers)"
        )
    ev = Evaluation(artifact, constraints, trust_root, keyless=keyless, shared_with=shared_with)
    ev.digest(sha512=meta is not None or any(b.content == "dsse" for b in bundles))
    ev.claims_from(meta)
    ev.evidence(bundles, signature, unreadable, certificate)
    ev.provenance()
    level = ev.level()
    return ev.report(level)


__all__ = ["Evidence", "Constraints", "Evaluation", "EvidenceResult", "SignerSet", "evaluate"]
