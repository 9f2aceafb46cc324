"""Verification as a library call: is this artifact what the flags, or the policy, trust?

The one pipeline behind ``atip-trust verify`` (and next ``scan``). ``verify(artifact, ...)`` opens the
file once (or takes a ``sha256:``/``sha512:`` digest, as ``cosign --digest`` / ``gh attestation verify``
do: attestations are then matched by subject digest), optionally fetches the metadata's provenance URL
(the only network use, docs/network.md), evaluates the evidence (evaluation/evaluate.py) and decides:

* without a policy: allow exactly VERIFIED, and say why anything else is denied;
* with a policy: its trust anchors become the constraints (flags given with it only tighten,
  ``policy.constraints.constraints_from_policy``), the managed org layers are composed over it as for
  ``admit``, and ``decide(policy, report, purpose="verify")`` answers the trust question about these
  bytes — requirements, tool and digest rules, waivers, mode, and VERIFIED as the bar (docs/decisions.md).
  Command rules govern running commands, which is ``admit``'s question; ``verify`` never asks.
"""

from __future__ import annotations

import json
import os
import re
from typing import TYPE_CHECKING, Any

from atip_trust._base.files import path_name, path_texts
from atip_trust._base.lazy import lazy_import
from atip_trust._base.record import Record, replace
from atip_trust.admission.options import VerifyOptions, split_keywords
from atip_trust.admission.verdict_key import ReportKey, cached, hash_artifact, open_cache, store, verdict_key
from atip_trust.errors import UsageError, expect_type
from atip_trust.evaluation.inputs import Constraints, Evidence
from atip_trust.facts.artifact import Artifact, DigestSubject
from atip_trust.facts.digest import Digest
from atip_trust.facts.report import Decision, Reason, TrustLevel, TrustReport
from atip_trust.policy.compose import compose
from atip_trust.policy.constraints import choose_trusted_root, constraints_from_policy
from atip_trust.policy.decide import decide
from atip_trust.policy.load import load_layer, org_layers
from atip_trust.policy.model import Policy
from atip_trust.signature.trustroot import TrustRoot
from atip_trust.state.verdict_cache import VerdictCache

if TYPE_CHECKING:
    from atip_trust.evaluation import evaluate
    from atip_trust.net import fetch
    from atip_trust.signature import bundle
else:
    # Deferred (_base/lazy.py): a cache-hit verify reads none of these (tests/fast_path.py).
    evaluate = lazy_import("atip_trust.evaluation.evaluate")  # the evaluation itself: only on a cache miss
    fetch = lazy_import("atip_trust.net.fetch")  # HTTP: only for verify --fetch
    bundle = lazy_import("atip_trust.signature.bundle")  # only for --print-provenance

PathLike = str | os.PathLike[str]

_DIGEST_RE = re.compile(r"^sha(256|512):")


class Verification(Record):
    """The outcome of one verification: the trust report, the decision, and what it was checked with."""

    report: TrustReport
    decision: Decision
    trusted_root: TrustRoot
    #: With ``fetch``: what was fetched (url, final_url, sha256, bytes, file).
    fetched: tuple[dict[str, Any], ...] = ()
    fetch: bool = False
    #: The verdict cache: ``hit``, ``miss``, or ``off`` (``cache=False``, ``fetch``, unreadable evidence).
    cache: str = 'off'

    @property
    def exit_code(self) -> int:
        return 0 if self.decision.behavior == "allow" else 1

    def to_json(self) -> dict[str, Any]:
        out = self.report.to_json(decision=self.decision)
        out["trusted_root"] = {"name": self.trusted_root.name, "digest": self.trusted_root.digest}
        out["cache"] = self.cache
        if self.fetch:
            out["fetched"] = list(self.fetched)
        return out


def load_verify_policy(path: PathLike) -> Policy:
    """The local policy under every org layer (standard org-policy path, ``ATIP_TRUST_ORG_POLICY``)."""
    return compose([load_layer(path, source="local"), *org_layers()])


def verdict(rep: TrustReport) -> Decision:
    """Without a policy, ``verify`` allows exactly VERIFIED and says why anything else is denied."""
    if rep.trust_level is TrustLevel.VERIFIED:
        return Decision("allow", [Reason("VERIFIED", "all requested checks passed")],
                        report_digest=rep.digest(), rule_source="cli")
    # Cause first (issue 26): the failed checks, then the level they add up to.
    reasons = [Reason(f"CHECK_{c.name.upper().replace('.', '_')}_{c.status.upper()}", c.message or c.name,
                      expected=c.expected, actual=c.actual) for c in rep.checks if c.failed]
    reasons.append(Reason(f"{rep.trust_level.name}", f"trust level {rep.trust_level.name}, VERIFIED required",
                          expected="VERIFIED", actual=rep.trust_level.name))
    return Decision("deny", reasons, report_digest=rep.digest(), rule_source="cli")


def decide_verify(policy: Policy, report: TrustReport, artifact: str) -> Decision:
    """The policy's answer to the trust question about these bytes (never interactive)."""
    return decide(
        policy,
        report,
        tool_name=path_name(artifact) or artifact,
        command=[],
        effects=None,
        effects_verified=False,
        interactive=False,  # an ask would become a deny with ASK_WITHOUT_USER; no verify step asks
        purpose="verify",
    )


def subject_of(artifact: PathLike | Digest) -> Artifact | DigestSubject:
    """A file (opened once; a bare name is a file here, as cosign verify-blob takes it, never a PATH
    lookup), or a ``sha256:``/``sha512:`` digest when no file by that name exists."""
    if isinstance(artifact, Digest):
        return DigestSubject(artifact)
    text = os.fspath(artifact)
    if _DIGEST_RE.match(text) and not os.path.exists(text):
        return DigestSubject(Digest.parse(text))
    return Artifact.open(text, lookup=False)


def verify(
    artifact: PathLike | Digest,
    *,
    policy: Policy | PathLike | None = None,
    evidence: Evidence | None = None,
    options: VerifyOptions | None = None,
    **keywords: Any,
) -> Verification:
    """Verify ``artifact`` against ``evidence`` with ``options.constraints`` (flags) and/or ``policy``.
    The fields of ``Evidence`` and ``VerifyOptions`` may also be given as keywords (``bundles=[...]``,
    ``constraints=...``: admission/options.py).

    ``evidence.certificate`` with ``signature``: cosign's detached certificate and signature
    (signature/certificate_pair.py): checked and reported, but without a log entry they never verify
    on their own; with a bundle that carries them, the bundle's verification counts.

    ``policy`` may be a loaded ``Policy`` (used as given) or a path (composed under the org layers).
    ``bundles``: paths, or one path.
    Raises ``AtipTrustError`` when it cannot evaluate (no signer to verify against, malformed input,
    missing trust root, failed fetch): a denial.

    ``options.cache``: reuse the trust report computed for the same bytes, evidence, policy, trusted
    root and constraints (state/verdict_cache.py; the key: ``admission.verdict_key.verdict_key``; never
    with ``fetch``: fetched material is new each time); the decision is always made anew. ``False``
    neither reads nor writes the cache.
    """
    expect_type("verify() artifact", artifact, (str, os.PathLike, Digest))
    expect_type("verify() policy", policy, (Policy, str, os.PathLike), optional=True)
    evidence, options = split_keywords("verify", evidence, options, VerifyOptions, keywords)
    unread = [f for f in ("metadata_bundle", "contract", "contract_bundle", "vsas") if getattr(evidence, f)]
    if unread:
        raise UsageError(f"verify does not read evidence.{', evidence.'.join(unread)}: admit does "
                         "(a tool's metadata signature, AIP-14 contract and VSAs belong to admission)")
    bundles = path_texts(evidence.bundles, "bundles")
    c = options.constraints if options.constraints is not None else Constraints()
    applied: Policy | None = None
    if policy is not None:
        applied = policy if isinstance(policy, Policy) else load_verify_policy(policy)
        c = constraints_from_policy(applied, c)
    # The policy's pinned root; an argument may only pick one of the roots it pins.
    # Deferred: parsed only when a cache miss verifies (evaluate checks it first).
    trusted_root = options.trusted_root
    root = choose_trusted_root(applied, os.fspath(trusted_root) if trusted_root is not None else None,
                               options.staging, deferred=True)
    fetched: list[dict[str, Any]] = []
    fetching, metadata = options.fetch, evidence.metadata
    store_in = open_cache(options.cache and not fetching)  # fetched material is new each time: never cached
    key: ReportKey | None = None
    hit: tuple[TrustReport, dict[str, Any]] | None = None
    subject = subject_of(artifact)
    with subject:
        if fetching and metadata is not None:
            if not isinstance(metadata, (str, os.PathLike)):
                raise UsageError("fetch: the metadata must be a file (its provenance URL is fetched)")
            # The only network use, and only now that every local input is checked. The fetched
            # bytes are one more untrusted bundle, read from a private temporary directory that is
            # removed when this block ends.
            with fetch.fetched_provenance(metadata) as material:
                fetched = [m.to_json() for m in material]
                given = replace(evidence, bundles=bundles + tuple(os.fspath(m.path) for m in material))
                report = evaluate.evaluate(subject, given, c, root, shared_with=options.shared_with)
        else:
            if store_in is not None:
                key = _cache_key(subject, store_in, c, evidence, options, applied, root)
                hit = cached(store_in, key)
            if hit is not None:
                report = hit[0]
            else:
                report = evaluate.evaluate(subject, replace(evidence, bundles=bundles), c, root,
                                            shared_with=options.shared_with)
                store(store_in, key, report)
    name = os.fspath(artifact) if not isinstance(artifact, Digest) else str(artifact)
    decision = decide_verify(applied, report, name) if applied is not None else verdict(report)
    return Verification(report, decision, root, tuple(fetched), fetching,
                        cache="off" if key is None else "hit" if hit is not None else "miss")


def provenance_statement(report: TrustReport, bundles: PathLike | list[PathLike]) -> dict[str, Any] | None:
    """The in-toto statement of the provenance ``report`` passed (slsa-verifier's
    ``--print-provenance``), read again from the bundle that carried it (its label in ``bundles``);
    None when no provenance passed. Two bundles under that label with different statements (two
    files of one name) are refused rather than one printed at a guess."""
    prov = report.provenance
    if prov is None or prov.status != "valid" or prov.evidence is None:
        return None
    found: set[bytes] = set()
    for path in path_texts(bundles, "bundles"):
        for b in bundle.load_bundles(path):
            info = b.dsse_payload() if b.label == prov.evidence else None
            if info is not None:
                found.add(info[1])
    if len(found) != 1:
        raise UsageError(f"--print-provenance: {len(found)} different statements are labelled "
                         f"{prov.evidence}; give the bundle files under distinct names")
    doc: dict[str, Any] = json.loads(found.pop())
    return doc


def _cache_key(subject: Artifact | DigestSubject, cache: VerdictCache, c: Constraints, evidence: Evidence,
               options: VerifyOptions, policy: Policy | None, root: TrustRoot) -> ReportKey | None:
    """The verdict cache's key (admission/verdict_key.py ``verdict_key``); None when a piece of evidence
    cannot be read (that is evaluated, and reported, again)."""
    digests: dict[str, str]
    if isinstance(subject, Artifact):
        digests = {a: str(d) for a, d in hash_artifact(subject, cache).items()}
    else:
        digests = {"known": str(subject.known)}
    return verdict_key("verify", subject.path, digests, evidence, options,
                       policy=policy.digest if policy is not None else None, trusted_root=root.digest,
                       constraints=repr(c), key_files=c.keys)


__all__ = ["Verification", "VerifyOptions", "decide_verify", "provenance_statement", "load_verify_policy", "subject_of", "verdict", "verify"]
