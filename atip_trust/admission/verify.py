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

import os
import re
from collections.abc import Sequence
TYPE_CHECKING = False  # typing's constant without importing typing at run time (docs/caching.md)
if TYPE_CHECKING:
    from typing import Any

from atip_trust.admission._deps import evaluate_mod, net_fetch, pathlib
from atip_trust._base.record import Record
from atip_trust.evaluation.inputs import Constraints, Evidence
from atip_trust._base.files import path_name, path_texts
from atip_trust.facts.artifact import Artifact, DigestSubject
from atip_trust.facts.digest import Digest
from atip_trust.facts.report import Decision, Reason, TrustLevel, TrustReport
from atip_trust.admission.verdict_key import cached, evidence_digests, hash_artifact, open_cache, report_key, store
from atip_trust.policy.compose import compose
from atip_trust.policy.constraints import choose_trusted_root, constraints_from_policy
from atip_trust.policy.decide import decide
from atip_trust.policy.load import load_layer, org_layers
from atip_trust.policy.model import Policy
from atip_trust.signature.trustroot import TrustRoot
from atip_trust.state.verdict_cache import VerdictCache

# Only with --fetch: the HTTP client and the metadata model; the evaluation only on a miss (docs/caching.md:
# a warm verify loads none of them).
if TYPE_CHECKING:
    from pathlib import Path


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
        out = self.report.to_json()
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
    constraints: Constraints | None = None,
    bundles: PathLike | Sequence[PathLike] = (),
    signature: PathLike | None = None,
    certificate: PathLike | None = None,
    metadata: PathLike | None = None,
    policy: Policy | PathLike | None = None,
    trusted_root: PathLike | None = None,
    staging: bool = False,
    fetch: bool = False,
    cache: bool = True,
) -> Verification:
    """Verify ``artifact`` against its evidence with ``constraints`` (flags) and/or ``policy``.

    ``certificate`` with ``signature``: cosign's detached certificate and signature
    (signature/certificate_pair.py): checked and reported, but without a log entry they never verify
    on their own; with a bundle that carries them, the bundle's verification counts.

    ``policy`` may be a loaded ``Policy`` (used as given) or a path (composed under the org layers).
    ``bundles``: paths, or one path.
    Raises ``AtipTrustError`` when it cannot evaluate (no signer to verify against, malformed input,
    missing trust root, failed fetch): a denial.

    ``cache``: reuse the trust report computed for the same bytes, evidence, policy, trusted root and
    constraints (state/verdict_cache.py; never with ``fetch``: fetched material is new each time); the
    decision is always made anew. ``False`` neither reads nor writes the cache.
    """
    c = constraints if constraints is not None else Constraints()
    applied: Policy | None = None
    if policy is not None:
        applied = policy if isinstance(policy, Policy) else load_verify_policy(policy)
        c = constraints_from_policy(applied, c)
    # The policy's pinned root; an argument may only pick one of the roots it pins.
    # Deferred: parsed only when a cache miss verifies (evaluate checks it first).
    root = choose_trusted_root(applied, os.fspath(trusted_root) if trusted_root is not None else None,
                               staging, deferred=True)
    # The evidence files as text: the cache key is made from them without pathlib (docs/caching.md);
    # the ``Evidence`` of ``Path``s only when a miss evaluates.
    given = _Given(path_texts(bundles, "bundles"), _text(signature), _text(certificate), _text(metadata))
    fetched: list[dict[str, Any]] = []
    store_in = open_cache(cache and not fetch)  # fetched material is new each time: never cached
    key: str | None = None
    hit: tuple[TrustReport, dict[str, Any]] | None = None
    subject = subject_of(artifact)
    with subject:
        if fetch and metadata is not None:
            # The only network use, and only now that every local input is checked. The fetched
            # bytes are one more untrusted bundle, read from a private temporary directory that is
            # removed when this block ends.
            with net_fetch.fetched_provenance(metadata) as material:
                fetched = [m.to_json() for m in material]
                report = evaluate_mod.evaluate(subject, given.evidence(tuple(m.path for m in material)), c, root)
        else:
            if store_in is not None:
                key = _cache_key(subject, store_in, c, given, applied, root)
                hit = cached(store_in, key)
            if hit is not None:
                report = hit[0]
            else:
                report = evaluate_mod.evaluate(subject, given.evidence(), c, root)
                store(store_in, key, report)
    name = os.fspath(artifact) if not isinstance(artifact, Digest) else str(artifact)
    report.decision = decide_verify(applied, report, name) if applied is not None else verdict(report)
    return Verification(report, report.decision, root, tuple(fetched), fetch,
                        cache="off" if key is None else "hit" if hit is not None else "miss")


class _Given:
    """The evidence files named by the caller, as text."""

    __slots__ = ("bundles", "signature", "certificate", "metadata")

    def __init__(self, bundles: tuple[str, ...], signature: str | None, certificate: str | None,
                 metadata: str | None) -> None:
        self.bundles = bundles
        self.signature = signature
        self.certificate = certificate
        self.metadata = metadata

    def evidence(self, fetched: tuple[Path, ...] = ()) -> Evidence:
        """The ``Evidence`` an evaluation reads (``Path``s: only a miss or a fetch gets here)."""
        return Evidence(
            bundles=tuple(pathlib.Path(b) for b in self.bundles) + fetched,
            signature=_path(self.signature),
            certificate=_path(self.certificate),
            metadata=_path(self.metadata),
        )


def _text(path: PathLike | None) -> str | None:
    return os.fspath(path) if path is not None else None


def _path(text: str | None) -> Path | None:
    return pathlib.Path(text) if text is not None else None


def _cache_key(subject: Artifact | DigestSubject, cache: VerdictCache, c: Constraints,
               evidence: _Given, policy: Policy | None, root: TrustRoot) -> str | None:
    """Everything ``evaluate`` reads, as the verdict cache's key (admission/verdict_key.py); None when a piece
    of evidence cannot be read (that is evaluated, and reported, again)."""
    digests: dict[str, str]
    if isinstance(subject, Artifact):
        digests = {a: str(d) for a, d in hash_artifact(subject, cache).items()}
    else:
        digests = {"known": str(subject.known)}
    files = {role: evidence_digests(paths) for role, paths in (
        ("bundles", list(evidence.bundles)), ("keys", list(c.keys)),
        ("signature", [evidence.signature]), ("certificate", [evidence.certificate]),
        ("metadata", [evidence.metadata]))}
    if any(v is None for v in files.values()):
        return None
    return report_key("verify", {
        "artifact": {"path": subject.path_text, **digests},
        "evidence": files,
        "policy": policy.digest if policy is not None else None,
        "trusted_root": root.digest,
        "constraints": repr(c),
    })


__all__ = ["Verification", "decide_verify", "load_verify_policy", "subject_of", "verdict", "verify"]
