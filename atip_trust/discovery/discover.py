"""Discovery: which tools an agent may even see (RFC §5; the discovery gate of docs/architecture.md).

``discover(dirs, policy)`` walks the safe scan (discovery/scan.py), opens each candidate once, re-checks its
owner and mode on that descriptor, hashes it (the verdict cache's stat fast path), and admits it
through the one admission pipeline (admission/admit.py) with the evidence found for it: a Sigstore bundle
beside it (``TOOL.sigstore.json``) or in ``bundle_dir`` by digest (``sha256/<hex>.sigstore.json``),
and a shim by digest in ``shim_dir`` or in the registries policy names (registry/client.py: cached
verified shims and local folders always, remote registries only with ``fetch``; each shim verified
against the signers policy names for its registry, RFC §4.4-4.7). Only then may
it be probed (discovery/probe.py: verify before probe); metadata from a probe is admitted again so the
decision sees its effects (as claims, unless signed).

Each tool gets three honest answers: trust ``verified`` (VERIFIED from a signer policy trusts) /
``unverified`` (no signature, or one nobody in policy vouches for: never shown as verified) /
``failed`` (tampering, failed provenance, an unsafe file, an error); probe ``probed`` / ``not_probed``
/ ``failed``, each with a reason; and the decision (allow / ask / deny). The tool surface sorts them, as
an Agent Tool surface does, with machine-readable reasons: ``loaded`` (metadata in hand and not
denied), ``not_probed`` (listed, never run), ``without_metadata`` (run, answered no ATIP metadata),
``blocked`` (refused: unsafe place, tampering, policy, a failed probe, an error).

Candidates are handled on a thread pool (hashing and the probes' waits release the GIL).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal

from atip_trust._base.files import exists, owner_problem
from atip_trust._base.record import Record, field, replace
from atip_trust.admission import vsa
from atip_trust.admission.admit import Admission, admit
from atip_trust.admission.agent_tools import AgentTree
from atip_trust.admission.options import AdmitOptions
from atip_trust.admission.verdict_key import hash_artifact, open_cache
from atip_trust.discovery.probe import ProbeOutcome, probe
from atip_trust.discovery.scan import Candidate, Skipped, scan_directories
from atip_trust.errors import AtipTrustError, EnvironmentFailure
from atip_trust.evaluation.inputs import Evidence
from atip_trust.facts.artifact import Artifact
from atip_trust.facts.effects import EFFECT_CLASSES, command_states
from atip_trust.facts.metadata import MetadataDocument
from atip_trust.facts.report import TrustLevel
from atip_trust.policy.model import Policy
from atip_trust.registry.local import LocalRegistry
from atip_trust.state.paths import local_registry_path
from atip_trust.state.verdict_cache import VerdictCache

PathLike = str | os.PathLike[str]
Trust = Literal["verified", "unverified", "failed"]
Placement = Literal["loaded", "not_probed", "without_metadata", "blocked"]
SIDECAR_SUFFIXES = (".sigstore.json", ".sigstore")


class ToolRow(Record, frozen=False):
    """One tool found by discovery, with what was decided about it and why (machine-readable)."""

    _no_repr = frozenset({"admission"})

    name: str
    path: str
    resolved: str
    digest: str | None = None
    trust: Trust = "failed"
    trust_level: str | None = None
    probe: str = "not_probed"
    probe_reason: str = "not_run"
    probe_message: str = ""
    decision: str = "deny"
    reasons: list[dict[str, Any]] = field(default_factory=list)
    placement: Placement = "blocked"
    #: Machine-readable reason for the placement (Agent Tool surface reason codes where one fits).
    placement_reason: str = "error"
    signer: str | None = None
    issuer: str | None = None
    source_repo: str | None = None
    source_ref: str | None = None
    #: ``probe`` (the tool's own --agent answer), ``shim`` (registry-signed) or ``agent-tools`` (RFC §4.2's
    #: tree: ``tools/``, ``shims/``, a signed override), or None.
    metadata_from: str | None = None
    metadata_digest: str | None = None
    effects_verified: bool = False
    #: Effect classes not declared safe on every command (unknown counts as risky); None without metadata.
    effects: list[str] | None = None
    cache: str = "off"
    error: str | None = None
    #: The admission's JSON (docs/contract.md's verification object), None when the tool could not be evaluated.
    admission: dict[str, Any] | None = None

    def contract_json(self) -> dict[str, Any]:
        """One item of ``scan --format json`` (docs/contract.md): the verification object ``admit`` prints for
        this tool, its name, and the discovery row under ``scan``. A tool that could not be evaluated has
        no trust level (null) and a denying decision naming the error."""
        base = self.admission
        if base is None:
            base = {
                "artifact": {"path": self.resolved, "digest": {"sha256": self.digest} if self.digest else {}},
                "trust_level": None,
                "signature": {"status": "unchecked", "identity": None, "issuer": None},
                "provenance": {"status": "unchecked", "predicate_type": None, "builder_id": None,
                               "slsa_level": None, "source": None},
                "checks": [{"name": "evaluation", "status": "error", "message": self.error,
                            "expected": "an evaluated tool", "actual": self.placement_reason}],
                "decision": {"behavior": "deny", "reasons": self.reasons or [
                    {"code": "EVALUATION_FAILED", "message": self.error or self.placement_reason}]},
            }
        return {**base, "tool": self.name, "scan": self.to_json()}

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name, "path": self.path, "resolved": self.resolved, "digest": self.digest,
            "trust": self.trust, "trust_level": self.trust_level,
            "probe": {"status": self.probe, "reason": self.probe_reason, "message": self.probe_message},
            "decision": {"behavior": self.decision, "reasons": self.reasons},
            "surface": {"placement": self.placement, "reason": self.placement_reason},
            "signer": {"identity": self.signer, "issuer": self.issuer},
            "source": {"repository": self.source_repo, "ref": self.source_ref},
            "metadata": {"from": self.metadata_from, "digest": self.metadata_digest,
                         "effects_verified": self.effects_verified, "effects": self.effects},
            "cache": self.cache, "error": self.error,
        }


class ToolSurface(Record, frozen=False):
    """What an agent may see: loaded tools, tools listed but never run, and blocked ones (with
    the directories and files the safe scan skipped, each with its reason)."""

    rows: list[ToolRow] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    directories: list[str] = field(default_factory=list)

    def _where(self, placement: str) -> list[ToolRow]:
        return [r for r in self.rows if r.placement == placement]

    @property
    def loaded(self) -> list[ToolRow]:
        return self._where("loaded")

    @property
    def not_probed(self) -> list[ToolRow]:
        return self._where("not_probed")

    @property
    def without_metadata(self) -> list[ToolRow]:
        return self._where("without_metadata")

    @property
    def blocked(self) -> list[ToolRow]:
        return self._where("blocked")

    def to_json(self) -> dict[str, Any]:
        """The surface in the Agent Tool shape (``loaded_tools``, ``blocked_tools`` with reasons),
        plus every row and everything the scan skipped."""
        def ref(r: ToolRow) -> dict[str, Any]:
            return {"tool_id": r.digest or r.path, "name": r.name, "path": r.path,
                    "reason": r.placement_reason}
        return {
            "loaded_tools": [ref(r) for r in self.loaded],
            "not_probed_tools": [ref(r) for r in self.not_probed],
            "without_metadata_tools": [ref(r) for r in self.without_metadata],
            "blocked_tools": [ref(r) for r in self.blocked]
            + [{"tool_id": s.path, "name": os.path.basename(s.path), "path": s.path, "reason": s.reason}
               for s in self.skipped],
            "directories": list(self.directories),
            "tools": [r.to_json() for r in self.rows],
            "skipped": [s.to_json() for s in self.skipped],
        }


def update_local_registry(surface: ToolSurface, path: PathLike | None = None) -> list[str]:
    """``scan --update-registry``: index each tool of ``surface`` that verified (VERIFIED) and that has
    metadata in the local ``registry.json`` (RFC §4.3: name -> path, digest, ``source`` ``native`` for
    its own ``--agent`` answer or ``shim``; default path RFC §4.2's ``$XDG_DATA_HOME/agent-tools``).
    The index is not evidence (registry/local.py): every admission still hashes and verifies. A file
    that changed between the scan and the write is not indexed. Returns the names indexed."""
    reg = LocalRegistry(path if path is not None else local_registry_path())
    done: list[str] = []
    for row in surface.rows:
        if row.digest is None or row.trust_level != "VERIFIED" or row.metadata_from is None:
            # Only what verifies now is pinned (docs/cli.md): re-pinning a name to bytes that did not
            # verify would drop the one denial (LOCAL_REGISTRY_DIGEST_MISMATCH) that catches a swap.
            continue
        entry = reg.put(row.name, row.resolved, source="shim" if row.metadata_from == "shim" else "native")
        if entry.digest.hex != row.digest.removeprefix("sha256:"):
            reg.remove(row.name)  # replaced since it was verified: the index must not name other bytes
            continue
        done.append(row.name)
    return done


def _sidecars(resolved: str, digest_hex: str, bundle_dir: PathLike | None) -> list[Path]:
    found = [Path(resolved + s) for s in SIDECAR_SUFFIXES]
    if bundle_dir is not None:
        base = Path(bundle_dir)
        found += [base / "sha256" / f"{digest_hex}.sigstore.json", base / f"{digest_hex}.sigstore.json"]
    return [p for p in found if p.is_file()]


def effects_summary(doc: MetadataDocument | None) -> list[str] | None:
    """Effect classes that some declared command does not declare safe (a tool without commands: the
    tool itself). Tool-level effects reach every command (RFC §3.6), through the one walker."""
    if doc is None:
        return None
    risky: set[str] = set()
    for path in doc.commands() or [()]:
        states, _ = command_states(doc.doc, list(path))
        risky.update(c for c, s in states.items() if s != "safe")
    return [c for c in EFFECT_CLASSES if c in risky]


def _trust_of(adm: Admission) -> Trust:
    level = adm.report.trust_level
    if level in (TrustLevel.COMPROMISED, TrustLevel.PROVENANCE_FAIL):
        return "failed"
    refused = any(r.code == "SIGNER_NOT_IN_POLICY" for r in adm.decision.reasons)
    return "verified" if level is TrustLevel.VERIFIED and not refused else "unverified"


def _in_tree(doc: MetadataDocument) -> bool:
    """The metadata came from RFC §4.2's agent-tools tree (``tools/``, ``shims/``, ``overrides/``)."""
    tree = AgentTree.default()
    return any(doc.source_name.startswith(os.path.join(root, "")) for root in (tree.data, tree.config, *tree.system))


def _fill(row: ToolRow, adm: Admission, outcome: ProbeOutcome) -> None:
    rep = adm.report
    row.admission = adm.to_json()
    row.trust = _trust_of(adm)
    row.trust_level = rep.trust_level.name
    row.decision = adm.decision.behavior
    row.reasons = [r.to_json() for r in adm.decision.reasons]
    row.probe, row.probe_reason, row.probe_message = outcome.status, outcome.reason, outcome.message
    sig = rep.signature
    if sig.status == "valid":
        row.signer, row.issuer = sig.identity, sig.issuer
        row.source_repo = sig.extensions.get("source_repository_uri")
        row.source_ref = sig.extensions.get("source_repository_ref")
    src = rep.provenance.source if rep.provenance.status == "valid" else None
    if row.source_repo is None and isinstance(src, dict):
        row.source_repo = src.get("uri") if isinstance(src.get("uri"), str) else None
        row.source_ref = src.get("ref") if isinstance(src.get("ref"), str) else None
    doc = adm.metadata
    if doc is not None:
        row.metadata_from = "shim" if doc.is_shim and adm.effects_verified else "probe" \
            if outcome.metadata is not None else "agent-tools" if _in_tree(doc) else None
        row.metadata_digest = str(doc.sha256)
        row.effects_verified = adm.effects_verified
        row.effects = effects_summary(doc)
    row.cache = adm.cache
    if row.trust == "failed":
        row.placement, row.placement_reason = "blocked", ("tampered" if rep.trust_level is
                                                          TrustLevel.COMPROMISED else "provenance_failed")
    elif outcome.reason == "policy_blocked":
        row.placement, row.placement_reason = "blocked", "policy_blocked"
    elif outcome.status == "failed":
        row.placement, row.placement_reason = "blocked", f"probe_{outcome.reason}"
    elif row.metadata_from is not None:
        if row.decision == "deny":
            row.placement, row.placement_reason = "blocked", "policy_blocked"
        else:
            row.placement, row.placement_reason = "loaded", f"metadata_from_{row.metadata_from}"
    elif outcome.status == "not_probed":
        row.placement, row.placement_reason = "not_probed", outcome.reason
    else:
        row.placement, row.placement_reason = "without_metadata", outcome.reason


class _Options(Record):
    policy: Policy
    shim_dir: PathLike | None
    bundle_dir: PathLike | None
    #: ``--vsa`` files by each subject digest their statement claims (``(alg, hex)``): offered to the
    #: tools with that digest only, which check them in full (admission/vsa.py).
    vsa_routes: dict[tuple[str, str], tuple[str, ...]]
    trusted_root: PathLike | None
    cache: VerdictCache | None
    use_cache: bool
    audit: bool
    fetch: bool = False
    registry_pin: bool = True


def _vsas_for(digests: dict[str, str], o: _Options) -> list[str]:
    """The VSAs offered to a tool with these digests: ``--vsa`` files that name one of them, then
    those kept by its sha256 in ``bundle_dir`` (``<hex>.vsa.jsonl``, docs/vsa.md), each once."""
    found: list[str] = []
    for alg, value in digests.items():
        found += [p for p in o.vsa_routes.get((alg, value), ()) if p not in found]
    if o.bundle_dir is not None and "sha256" in digests:
        found += [p for p in vsa.vsa_candidates(o.bundle_dir, digests["sha256"])
                  if os.path.isfile(p) and p not in found]
    return found


def _route_vsas(vsas: Sequence[PathLike]) -> dict[tuple[str, str], tuple[str, ...]]:
    routes: dict[tuple[str, str], tuple[str, ...]] = {}
    for path in vsas:
        for claim in vsa.claimed_digests(path):
            routes[claim] = (*routes.get(claim, ()), os.fspath(path))
    return routes


def _indexed() -> list[tuple[str, str]]:
    """RFC §5.1 step 1: the tools ``registry.json`` indexes (name, recorded path), when it exists. A
    malformed index, or one another user can write, is an error (registry/local.py), never empty."""
    path = local_registry_path()
    if not exists(path, what="agent-tools registry.json", error=EnvironmentFailure):
        return []
    reg = LocalRegistry(path)
    return [(name, entry.path) for name in reg.names() if (entry := reg.recorded(name)) is not None]


def _discover_one(c: Candidate, o: _Options) -> ToolRow:
    row = ToolRow(name=c.name, path=c.path, resolved=c.resolved)
    try:
        with Artifact.open(Path(c.resolved)) as art:
            # The scan looked at the path; this is the descriptor that is hashed and may be run.
            problem = owner_problem(os.fstat(art.fd))
            if problem is not None:
                row.placement_reason, row.error = "file_unsafe", f"{c.resolved} is {problem}"
                return row
            digests = hash_artifact(art, o.cache)
            row.digest = str(digests["sha256"])
            evidence = Evidence(bundles=_sidecars(c.resolved, digests["sha256"].hex, o.bundle_dir),
                                vsas=_vsas_for({str(a): d.hex for a, d in digests.items()}, o))
            options = AdmitOptions(name=c.name, shim_dir=o.shim_dir, trusted_root=o.trusted_root,
                                   interactive=True, audit=o.audit, cache=o.use_cache, fetch=o.fetch,
                                   registry_pin=o.registry_pin)
            adm = admit(art, policy=o.policy, evidence=evidence, options=options)
            outcome = probe(art, adm, o.policy, cache=o.cache, options=options, bundle_dir=o.bundle_dir)
            if outcome.metadata is not None:
                # Decide again with what the tool says about itself (claims; effects only tighten).
                adm = admit(art, policy=o.policy, evidence=replace(evidence, metadata=outcome.metadata.raw),
                            options=options)
            _fill(row, adm, outcome)
    except (AtipTrustError, OSError) as err:
        row.trust, row.placement, row.placement_reason = "failed", "blocked", "error"
        row.error = err.diagnostics() if isinstance(err, AtipTrustError) else str(err)
    return row


def discover(
    dirs: Sequence[PathLike] | None,
    policy: Policy,
    *,
    shim_dir: PathLike | None = None,
    bundle_dir: PathLike | None = None,
    trusted_root: PathLike | None = None,
    cache: bool = True,
    audit: bool = False,
    workers: int | None = None,
    path_env: str | None = None,
    progress: Callable[[int, int, ToolRow], None] | None = None,
    fetch: bool = False,
    vsas: Sequence[PathLike] = (),
    registry_pin: bool = True,
) -> ToolSurface:
    """The tool surface for ``dirs`` (default: RFC §5.1's order: the tools ``registry.json`` indexes,
    then PATH) under ``policy``; see the module docstring.

    ``progress(done, total, row)`` is called from this thread as each tool is finished. ``audit``:
    write an admission line per tool (a policy that requires audit lines gets them regardless).
    ``fetch``: ask policy's remote shim registries for tools with no local shim (``ATIP_OFFLINE`` still
    forbids it); without it, only cached verified shims and folder registries are used.
    ``vsas``: SLSA VSA files, each offered to the tools whose digest it names (and ``bundle_dir``'s
    ``<hex>.vsa.jsonl`` to the tool of that digest); they count as for ``admit`` (docs/vsa.md).
    ``registry_pin``: each admission checks the tool's bytes against the digest RFC §4.3's
    ``registry.json`` records for its name (admission/agent_tools.py); False for a scan that writes the
    index anew (``--update-registry``).
    """
    scan = scan_directories(dirs, path_env=path_env, indexed=_indexed() if dirs is None else ())
    opts = _Options(policy=policy, shim_dir=shim_dir, bundle_dir=bundle_dir, vsa_routes=_route_vsas(vsas),
                    trusted_root=trusted_root,
                    cache=open_cache(cache), use_cache=cache, audit=audit or policy.audit_required,
                    fetch=fetch, registry_pin=registry_pin)
    surface = ToolSurface(skipped=list(scan.skipped), directories=list(scan.directories))
    total = len(scan.candidates)
    n = max(1, min(workers or os.cpu_count() or 1, 16))
    rows: list[ToolRow] = []
    with ThreadPoolExecutor(max_workers=n) as pool:
        for done, row in enumerate(pool.map(lambda c: _discover_one(c, opts), scan.candidates), 1):
            rows.append(row)
            if progress is not None:
                progress(done, total, row)
    surface.rows = rows
    return surface


__all__ = ["ToolRow", "ToolSurface", "discover", "effects_summary", "update_local_registry"]
