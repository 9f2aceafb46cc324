"""Admission as a library call: may this tool (or one of its commands) run? allow / ask / deny.

The one pipeline that ``atip-trust admit``, and next ``exec``, discovery and agent hooks, call. A runtime
loads a policy once (:func:`load_admission_policy`) and calls :func:`admit` per decision.

Steps: (1) resolve the tool once (a bare name through PATH only, never the current directory) and open
it once, hashing from that descriptor; (2) find the evidence: the given metadata, or a shim by digest in
``shim_dir`` (``sha256/<hex>.json`` with ``.json.bundle``, RFC §4.3, §4.9), else in the registries
policy names (registry/client.py, RFC §4.4-4.7: cached verified shims and local folders always, the
network only with ``fetch``; a shim found there is checked against *that* registry's signers), read
once; (3) verify the
tool with the policy's trust anchors (evaluation/evaluate.py); (4) verify the metadata's own signature over the
bytes that were read and its binding to this tool's digest and name (admission/metadata_trust.py): a shim
against the registry signers policy names, a metadata bundle against the policy's signers. Only
verified, bound metadata may relax capability gating (docs/decisions.md) or establish a
``requirements.metadataSources`` source; (5) decide (policy/decide.py); (6) the audit line.

Any error raises (the CLI turns it into exit 2, a denial) and, with auditing on, leaves a deny line
naming the error, so a tool that makes evaluation fail leaves the same trace as one that is denied.

The warm path (a verdict-cache hit, state/verdict_cache.py) imports no verifier: this module imports only
modules that defer sigstore, cryptography and jsonschema to their first use (_base/lazy.py, the one
sanctioned deferred import, which tests/base/test_layers.py checks like a plain import). On a hit the
policy's schema validation is remembered (policy/load.py), the trusted root is read and digested but
not parsed (signature/trustroot.py, deferred), and the signatures are not verified again; the policy
is still composed and the decision made in full. Likewise deferred: the metadata model and its
verification, the registry client (and with it the HTTP layer) and the provenance model, loaded only
when there is metadata, a registry or a provenance requirement. The cached entry also keeps the
report's digest, so a hit does not serialise the report again to decide. tests/base/test_startup.py
asserts which packages (and which of our own modules) a cache-hit ``admit`` loads.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from atip_trust._base.files import path_name, path_texts
from atip_trust._base.lazy import lazy_import
from atip_trust._base.record import Record, field
from atip_trust.admission.command_decision import decide_command
from atip_trust.admission.interactive import can_ask
from atip_trust.admission.options import REGISTRY_CHECK, AdmitOptions, split_keywords
from atip_trust.admission.verdict_key import (
    ReportKey,
    cached,
    evidence_digests,
    hash_artifact,
    open_cache,
    store,
    stored_digest,
    verdict_key,
)
from atip_trust.errors import ArgumentTypeError, AtipTrustError, UsageError, error_code, expect_type
from atip_trust.evaluation.inputs import Constraints, Evidence
from atip_trust.facts.artifact import Artifact, resolve
from atip_trust.facts.digest import Digest
from atip_trust.facts.report import Check, Decision, Reason, TrustLevel, TrustReport
from atip_trust.policy.compose import cli_layer, compose
from atip_trust.policy.constraints import choose_trusted_root, constraints_from_policy
from atip_trust.policy.decide import to_agent_tool
from atip_trust.policy.load import default_policy_path, load_layer, org_layers
from atip_trust.policy.model import Policy, PolicyLayer, SignerRule
from atip_trust.policy.rules import split_command
from atip_trust.state.broken import broken_mark
from atip_trust.state.dirs import agent_tools_roots
from atip_trust.state.verdict_cache import VerdictCache

if TYPE_CHECKING:
    import pathlib
    from pathlib import Path

    from atip_trust.admission import agent_tools, metadata_trust, shims, vsa
    from atip_trust.admission.agent_tools import AgentTree
    from atip_trust.admission.metadata_trust import MetadataTrust
    from atip_trust.evaluation import evaluate
    from atip_trust.facts import metadata
    from atip_trust.facts.aip14 import ToolContract
    from atip_trust.facts.digest import Algorithm
    from atip_trust.facts.metadata import MetadataDocument
    from atip_trust.signature.trustroot import TrustRoot
    from atip_trust.state import audit
else:
    # Deferred (_base/lazy.py): a cache-hit admission reads none of these (tests/fast_path.py).
    pathlib = lazy_import("pathlib")  # paths are text on the warm path: pathlib only for files read
    evaluate = lazy_import("atip_trust.evaluation.evaluate")  # the evaluation itself: only on a cache miss
    metadata = lazy_import("atip_trust.facts.metadata")  # only with tool metadata
    metadata_trust = lazy_import("atip_trust.admission.metadata_trust")  # only with tool metadata
    shims = lazy_import("atip_trust.admission.shims")  # only when policy names a registry
    vsa = lazy_import("atip_trust.admission.vsa")  # only with VSAs: signing code stays off the warm path
    # RFC §4.2's tree: only while it exists (state/dirs.py agent_tools_roots is the stat that says so).
    agent_tools = lazy_import("atip_trust.admission.agent_tools")
    # The audit line: built and written only when auditing is on (--no-audit loads none of it).
    audit = lazy_import("atip_trust.state.audit")

PathLike = str | os.PathLike[str]


def load_admission_policy(
    policy: PathLike | None = None,
    *,
    org_policy: PathLike | None = None,
    min_trust_level: TrustLevel | str | None = None,
    signers: list[dict[str, Any]] | None = None,
    cache: bool = True,
    predicate_type: str | None = None,
) -> Policy:
    """The composed policy ``admit`` decides with: the local policy (default: the shipped default.json)
    under every org layer (the standard org-policy path, ``ATIP_TRUST_ORG_POLICY``, ``org_policy``), and
    ``min_trust_level`` and ``signers`` (policy ``trust.signers`` entries, e.g. from identity flags) as a
    CLI layer: those signers are trusted only where no other layer states signers, narrow where one
    does, and count for nothing under an org that fixes the trust anchors (policy/compose.py).
    ``cache``: skip the schema validation of a document found valid before (policy/load.py).
    ``predicate_type``: an attestation of that predicate type is required (CLI layer, as gh's flags)."""
    # ATIP_TRUST_POLICY names the local policy a fleet's machines use when none is given.
    chosen = policy or os.environ.get("ATIP_TRUST_POLICY") or default_policy_path()
    layers: list[PolicyLayer] = [load_layer(chosen, source="local", cache=cache)]
    layers.extend(org_layers([org_policy] if org_policy else [], cache=cache))
    if min_trust_level is not None or signers or predicate_type:
        name = (min_trust_level.name if isinstance(min_trust_level, TrustLevel) else min_trust_level)
        layers.append(cli_layer(min_trust_level=name, signers=signers, predicate_type=predicate_type))
    return compose(layers)


def tool_name_of(tool: PathLike | Artifact) -> str:
    """The name rules and the audit log use: a path's last component, a bare name as given."""
    if isinstance(tool, Artifact):
        return path_name(tool.path)
    text = os.fspath(tool)
    return path_name(text) if "/" in text else text


class Admission(Record):
    """The outcome of one admission: what was decided about which bytes, and why."""

    _no_repr = frozenset({"decided_ns", "metadata", "contract"})
    _no_compare = frozenset({"metadata", "contract"})
    tool: str
    command: tuple[str, ...]
    path: str
    report: TrustReport
    decision: Decision
    #: True when the metadata's effects were verified (signed and bound to this tool).
    effects_verified: bool
    #: The metadata source verification established, or None (RFC §3.2.2 ``trust.source``).
    metadata_source: str | None
    #: When it was decided (``time.time_ns``): the audit line's ``time``, however late it is built.
    decided_ns: int
    #: Where the line goes (None: the user state dir), after the policy's ``audit`` settings.
    audit_log: str | None = None
    #: The verdict cache: ``hit`` (the trust report was reused), ``miss`` (computed and kept),
    #: ``off`` (not used: ``cache=False``, or evidence that cannot be read).
    cache: str = 'off'
    #: The metadata (or shim) decided with, parsed from the bytes read once; None when there was none.
    metadata: MetadataDocument | None = None
    #: The AIP-14 ``TOOL.md`` decided with (``--contract`` or beside the metadata), None when none:
    #: its ``timeout_ms`` is the run's ceiling (execution/exec.py, bridge/loop.py).
    contract: ToolContract | None = None

    @property
    def metadata_sha256(self) -> str | None:
        """sha256 of the metadata bytes this admission read (None without metadata): a call validated
        later counts the effects as verified only for these exact bytes (agents/calls.py)."""
        return str(self.metadata.sha256) if self.metadata is not None else None

    @property
    def behavior(self) -> str:
        return self.decision.behavior

    @property
    def audit_record(self) -> dict[str, Any]:
        """The audit-log line for this decision, built when asked for (to be written, or extended by
        exec and the bridge): an admission without auditing (``--no-audit``) never loads the audit
        module (docs/adr/0001-start-up.md)."""
        record = audit.audit_record(self.decision, self.report, tool=self.tool, command=list(self.command),
                                    ns=self.decided_ns)
        if self.contract is not None:
            # AIP-14 "Stable identity": audit logs key on id@major, and record the declared mutates.
            record["contract"] = {"id": self.contract.identity, "version": self.contract.version,
                                  "sha256": self.contract.sha256, "mutates": list(self.contract.mutates)}
        return record

    @property
    def exit_code(self) -> int:
        return self.decision.exit_code

    def to_json(self) -> dict[str, Any]:
        out = self.report.to_json(decision=self.decision)
        out["tool"] = self.tool
        out["command"] = list(self.command)
        out["effects_verified"] = self.effects_verified
        out["metadata_source"] = self.metadata_source
        out["agent_tool_decision"] = to_agent_tool(self.decision)
        out["cache"] = self.cache
        return out


class Known:
    """What is known so far about this admission, for the audit line of a failed evaluation."""

    __slots__ = ("tool", "words", "path", "digest", "policy")

    def __init__(self, tool: str, words: list[str] | None = None, path: str | None = None,
                 digest: str | None = None, policy: Policy | None = None) -> None:
        self.tool = tool
        self.words: list[str] = [] if words is None else words
        self.path = path
        self.digest = digest
        self.policy = policy


def audit_failure(
    err: BaseException,
    *,
    tool: PathLike | None,
    command: Sequence[str] | str | None = None,
    policy: Policy | None = None,
    path: str | None = None,
    digest: str | None = None,
    audit_log: PathLike | None = None,
) -> str | None:
    """Append the deny line for an admission that could not be evaluated (exit 2); ``tool`` None:
    not known (a command line that did not parse).

    Never masks the original error: a failure to write this line is returned as a warning text.
    """
    if isinstance(err, AtipTrustError):
        message, where = err.diagnostics(), err.path
    else:  # an unexpected exception's text could hold anything: record its type only
        message, where = f"internal error: {type(err).__name__}", None
    record = audit.audit_error_record(
        code=error_code(err), error_type=type(err).__name__, message=message, where=where,
        tool=tool_name_of(tool) if tool is not None else None, command=list(split_command(command)), path=path,
        digest=digest,
        policy_digest=policy.digest if policy is not None else None,
        mode=policy.mode if policy is not None else None,
    )
    try:
        audit.append_audit(record, os.fspath(audit_log) if audit_log is not None else None)
    except AtipTrustError as audit_err:
        return audit_err.diagnostics()
    return None


class _AuditSettings:
    """A policy object's ``audit`` settings, read from its layers once (a runtime admits with one
    policy object before every tool call); kept with the policy's digest, which covers its layers."""

    __slots__ = ("policy", "digest", "required", "log", "log_pinned")

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.digest = policy.digest
        self.required = policy.audit_required
        self.log = policy.audit_log
        self.log_pinned = policy.audit_log_pinned


#: The last few, newest last (as ``_MADE`` below).
_AUDIT_SETTINGS: list[_AuditSettings] = []


def _audit_settings(policy: Policy) -> _AuditSettings:
    for known in _AUDIT_SETTINGS:
        if known.policy is policy and known.digest == policy.digest:
            return known
    known = _AuditSettings(policy)
    if len(_AUDIT_SETTINGS) >= 8:
        del _AUDIT_SETTINGS[0]
    _AUDIT_SETTINGS.append(known)
    return known


def audit_target(policy: Policy, audit: bool, audit_log: PathLike | None) -> PathLike | None:
    """Where this admission's line goes, by the policy's ``audit`` settings: an org that names the log
    fixes it (another ``audit_log`` is refused), ``audit.required`` refuses turning auditing off."""
    settings = _audit_settings(policy)
    if not audit and settings.required:
        raise UsageError("the policy requires an audit line for every admission (audit.required): "
                         "audit=False (--no-audit) is refused")
    pinned = settings.log
    if pinned is None:
        return audit_log
    if audit_log is not None and settings.log_pinned and \
            os.path.abspath(os.fspath(audit_log)) != os.path.abspath(pinned):
        raise UsageError(f"the org policy fixes the audit log: expected {pinned}, "
                         f"actual audit_log (--audit-log) {os.fspath(audit_log)}")
    return audit_log if audit_log is not None else pinned


def write_audit(admission: Admission, audit_log: PathLike | None = None,
                record: dict[str, Any] | None = None) -> None:
    """Append the decision's line (for a caller that deferred it until its output was ready), or
    ``record`` (the line as a caller that acted otherwise extended it: agents/hooks.py), to
    ``audit_log`` or where the admission's policy said."""
    target = audit_log if audit_log is not None else admission.audit_log
    audit.append_audit(admission.audit_record if record is None else record,
                       os.fspath(target) if target is not None else None)


def _find_shim(shim_dir: PathLike, hexdigest: str) -> tuple[Path | None, Path | None]:
    base = pathlib.Path(shim_dir)
    for cand in (base / "sha256" / f"{hexdigest}.json", base / f"{hexdigest}.json"):
        if cand.is_file():
            bundle = pathlib.Path(str(cand) + ".bundle")
            return cand, bundle if bundle.is_file() else None
    return None, None


def admit(
    tool: PathLike | Artifact,
    *,
    policy: Policy | PathLike,
    command: Sequence[str] | str | None = None,
    evidence: Evidence | None = None,
    options: AdmitOptions | None = None,
    **keywords: Any,
) -> Admission:
    """Decide whether ``tool`` (a bare name, looked up on PATH once, or a path) may run ``command``,
    given ``evidence`` (untrusted, ``Evidence``) and ``options`` (how to decide, ``AdmitOptions``).

    ``tool`` may also be an ``Artifact`` the caller opened: it is hashed and decided for through its
    descriptor and left open, so that an exec gate runs exactly those bytes (``Artifact.exec_fd``)
    instead of opening the path again; ``options.name`` then says which name rules match (default:
    the file's). ``evidence.metadata``: a file, or bytes already in hand (a tool's ``--agent``
    answer), parsed once. The fields of ``Evidence`` and ``AdmitOptions`` may also be given as
    keywords (``bundles=[...]``, ``audit=False``: admission/options.py).

    ``options.interactive``: whether someone can answer an ``ask`` (without, ask becomes deny): a bool,
    or ``"auto"`` / ``"always"`` / ``"never"`` as :func:`can_ask` reads them. ``audit``: write the
    audit line (to ``audit_log`` or the user state dir); ``defer_audit``: leave the decision's line to
    the caller (:func:`write_audit`), who writes it once its own output is ready. Errors raise
    ``AtipTrustError`` (a denial) after their own audit line.

    ``options.cache``: reuse the trust report (and the metadata's verification) computed for the same
    bytes, evidence, policy, trusted root and constraints (state/verdict_cache.py; the key:
    ``admission.verdict_key.verdict_key``); the decision is always made anew. ``False`` neither reads
    nor writes the cache.

    ``options.fetch``: ask policy's remote shim registries over the network when no shim was found
    locally (``ATIP_OFFLINE`` still forbids it); without it only cached verified shims and folder
    registries are read, so an admission makes no request unless told to (docs/network.md: no network
    unless asked).

    ``policy``: the ``Policy`` :func:`load_admission_policy` returns, or a policy file's path, loaded
    here the same way (every call: load it once when deciding often). ``bundles``, ``keys`` and
    ``vsas``: paths, or one path.
    ``evidence.contract``: an AIP-14 ``TOOL.md`` (default: a ``TOOL.md`` beside the ``metadata`` file
    that names this tool), verified like metadata by ``contract_bundle`` (default: ``TOOL.md.bundle``
    beside it) against the policy's signers (``_contract``); every tool its ``requires.tools`` names is
    admitted too. ``evidence.vsas``: SLSA VSAs (admission/vsa.py, docs/vsa.md), counted only from
    policy's ``trust.verifiers``.
    ``options.agent_tools``: read RFC §4.2's XDG ``agent-tools`` tree (admission/agent_tools.py): a digest
    that differs from the one ``registry.json`` records for the name denies; ``tools/`` and
    ``shims/sha256/`` are metadata sources after ``metadata`` and ``shim_dir``; a signed
    ``overrides/sha256/`` document replaces every other metadata, an unsigned one is ignored.
    ``options.registry_pin``: False leaves ``registry.json`` unread (``scan --update-registry``, which
    writes it anew from what verifies now: the one way a tool updated on purpose is pinned again).
    """
    expect_type("admit() tool", tool, (str, os.PathLike, Artifact))
    evidence, options = split_keywords("admit", evidence, options, AdmitOptions, keywords)
    chosen = admission_policy(policy, tool=options.name or tool, command=command, audit=options.audit,
                              audit_log=options.audit_log)
    known = Known(tool=options.name or tool_name_of(tool), policy=chosen)
    return audited(
        known, chosen, audit=options.audit, audit_log=options.audit_log, defer_audit=options.defer_audit,
        run=lambda target: _admit(tool, known, chosen, command, evidence, options, target),
    )


def admission_policy(policy: object, *, tool: PathLike | Artifact, command: Sequence[str] | str | None,
                     audit: bool, audit_log: PathLike | None) -> Policy:
    """The ``policy`` argument of a library admission as a ``Policy``: as given, or loaded from a path
    by :func:`load_admission_policy`; a policy that cannot be loaded leaves its deny line (as the CLI's
    does) and raises. Anything else is ``UsageError`` naming the parameter."""
    if isinstance(policy, Policy):
        return policy
    try:
        if not isinstance(policy, (str, os.PathLike)):
            raise ArgumentTypeError(f"policy: expected a Policy (atip_trust.load_admission_policy) or a "
                                    f"policy file path, actual {type(policy).__name__}")
        return load_admission_policy(policy)
    except Exception as err:
        if audit:
            audit_failure(err, tool=tool.path if isinstance(tool, Artifact) else tool, command=command,
                          audit_log=audit_log)
        raise


def audited(
    known: Known,
    policy: Policy,
    *,
    audit: bool,
    audit_log: PathLike | None,
    defer_audit: bool,
    run: Callable[[str | None], Admission],
) -> Admission:
    """``run(audit log)``, with the admission's audit line: the decision's (unless deferred), or, when
    ``run`` raises, the deny line naming the error (``audit_failure``). ``known`` is what ``run`` found
    out before it failed. Every admission goes through here: ``admit`` and a held tool's (admission/held.py)."""
    target = audit_target(policy, audit, audit_log)
    try:
        admission = run(os.fspath(target) if target is not None else None)
    except Exception as err:
        if audit:
            audit_failure(err, tool=known.tool, command=known.words, policy=policy, path=known.path,
                          digest=known.digest, audit_log=target)
        raise
    if audit and not defer_audit:
        write_audit(admission)
    return admission


class _Admitting(Record, frozen=False):
    """One ``_admit``: what step (1) found (the tool, its digests, the root), the metadata step (2)
    found for it, and what steps (3)-(4b) work out for the decision (5)."""

    policy: Policy
    trust_root: TrustRoot
    tool_name: str
    digests: dict[Algorithm, Digest]
    cache: VerdictCache | None
    doc: MetadataDocument | None = None
    meta_path: Path | None = None
    meta_bundle: Path | None = None
    #: The metadata is a shim found by digest (in ``shim_dir`` or a registry), not given by the caller.
    from_shim: bool = False
    #: A registry's own signers, when the shim came from it.
    shim_signers: list[SignerRule] | None = None
    #: Why no registry shim was found, reported on the report (never cached).
    lookup_note: Check | None = None
    effects_verified: bool = False
    metadata_source: str | None = None
    #: The report's digest as cached with it (None once a check is added after caching).
    report_digest: str | None = None
    #: RFC §4.2's agent-tools tree, None when not read (``agent_tools=False``).
    tree: AgentTree | None = None
    #: Checks about the tree (registry.json, an override), added to the report after it is stored.
    notes: list[Check] = field(default_factory=list)
    #: A signed override's verification, done when it was found (step 4 does not verify it again).
    preverified: MetadataTrust | None = None


def _admit(
    tool: PathLike | Artifact,
    known: Known,
    policy: Policy,
    command: Sequence[str] | str | None,
    evidence: Evidence,
    options: AdmitOptions,
    audit_log: str | None,
) -> Admission:
    bundles = path_texts(evidence.bundles, "bundles")
    # The default, an empty tuple, is most calls' keys and VSAs: no call for it.
    keys = () if options.keys == () else path_texts(options.keys, "keys")
    interactive = can_ask(options.interactive)
    cache = open_cache(options.cache)
    vsas = () if evidence.vsas == () else path_texts(evidence.vsas, "vsas")
    # The policy's pinned root; an argument may only pick one of the roots it pins. Deferred: only its
    # digest is needed for a cache hit; a miss parses and checks it first (evaluate).
    trusted_root = options.trusted_root
    trust_root = choose_trusted_root(
        policy, os.fspath(trusted_root) if trusted_root is not None else None, options.staging, deferred=True)
    words = list(split_command(command))
    known.words = words

    # (1) Resolve once, open once, hash from the descriptor (a caller's Artifact: its descriptor).
    if isinstance(tool, Artifact):
        if tool.fd < 0:
            raise UsageError("the artifact is closed: open it again", path=tool.path)
        path = tool.path
    else:
        path = resolve(os.fspath(tool))
    known.path = path
    if evidence.metadata_bundle is not None and evidence.metadata is None:
        raise UsageError("metadata_bundle (--metadata-bundle) needs metadata (--metadata): the file it signs",
                         path=os.fspath(evidence.metadata_bundle))
    with tool.borrowed() if isinstance(tool, Artifact) else Artifact.open(path, resolved=True) as art:
        digests = hash_artifact(art, cache)
        known.digest = digests["sha256"].hex
        # By position, defaults included: keywords cost µs on the warm path (python -m bench --only admit).
        # RFC §4.2's tree: two stat calls when it is absent, and its module is loaded only when present.
        roots = agent_tools_roots() if options.agent_tools else None
        tree = agent_tools.AgentTree(*roots) if roots is not None else None
        a = _Admitting(policy, trust_root, known.tool, digests, cache, None, None, None, False, None, None,
                       False, None, None, tree, [], None)
        if tree is not None and options.registry_pin:
            # RFC §4.3: the name's recorded digest against the bytes just hashed (admission/agent_tools.py).
            pinned = agent_tools.registry_check(tree, a.tool_name, path, digests, art.digest)
            if pinned is not None:
                a.notes.append(pinned)
        _step_evidence(a, evidence.metadata, evidence.metadata_bundle, options.shim_dir, options.fetch)
        key, hit, report = _step_verify(a, art, evidence, options, bundles, keys)
    report = _step_metadata_trust(a, key, hit, report)
    report, tool_md, contract_verified, declared = _step_additions(a, report, vsas, evidence, options)

    # (5) Decide.
    return decided(policy, report, tool_name=a.tool_name, words=words, path=path, doc=a.doc,
                   effects_verified=a.effects_verified, metadata_source=a.metadata_source,
                   interactive=interactive, report_digest=a.report_digest, audit_log=audit_log,
                   cache="off" if key is None else "hit" if hit is not None else "miss",
                   contract=tool_md, contract_verified=contract_verified, declared=declared)


def _step_evidence(a: _Admitting, meta: PathLike | bytes | MetadataDocument | None,
                   metadata_bundle: PathLike | None, shim_dir: PathLike | None, fetch: bool) -> None:
    """(2) Evidence. The metadata file is read once: its signature is checked over these bytes and
    its claims and effects are parsed from them."""
    policy, digests = a.policy, a.digests
    if a.tree is not None:
        override, note = agent_tools.find_override(a.tree, policy, a.trust_root, digests=digests,
                                                   tool_name=a.tool_name)
        if note is not None:
            a.notes.append(note)
        if override is not None:  # signed and bound: it replaces every other metadata source
            a.doc, a.meta_path, a.meta_bundle = override.doc, override.path, override.bundle
            a.preverified = override.trust
            return
    given = bytes(meta) if isinstance(meta, (bytes, bytearray)) else None
    a.meta_path = pathlib.Path(meta) if isinstance(meta, (str, os.PathLike)) else None
    if meta is not None and given is None and a.meta_path is None:
        if not isinstance(meta, metadata.MetadataDocument):
            raise UsageError(f"metadata: expected a path, bytes or a MetadataDocument, actual "
                             f"{type(meta).__name__}")
        a.doc = meta  # a document already read: its bytes are the ones decided on
    a.meta_bundle = pathlib.Path(metadata_bundle) if metadata_bundle is not None else None
    if meta is None and shim_dir is not None:
        a.meta_path, a.meta_bundle = _find_shim(shim_dir, digests["sha256"].hex)
        a.from_shim = a.meta_path is not None
    by_name = False
    if meta is None and a.meta_path is None and a.tree is not None:
        # RFC §4.2-4.3: the local tree, by digest then by name (RFC v0.3 §4), the user's then the
        # system-wide ones: native metadata first, then a shim.
        hexd = digests["sha256"].hex
        in_tree = agent_tools.find_native(a.tree, hexd, a.tool_name, a.notes)
        if in_tree is None:
            in_tree = agent_tools.find_shim(a.tree, hexd, a.tool_name, a.notes)
            a.from_shim = in_tree is not None
        if in_tree is not None:
            a.meta_path, a.meta_bundle, by_name = in_tree.path, in_tree.bundle, in_tree.by_name
    if meta is None and a.meta_path is None and policy.registries:
        found = shims.registry_client(policy, trust_root=a.trust_root,
                                      offline=None if fetch else True).lookup(digests["sha256"])
        if found.document is not None and found.registry is not None:
            # Verified by the client; verified again below with the same check as any shim,
            # against the signers of the registry it came from only.
            a.doc, a.meta_path, a.meta_bundle = found.document, found.shim_path, found.bundle_path
            a.from_shim = True
            a.shim_signers = list(found.registry.signers)
        else:
            a.lookup_note = Check("metadata.registry", "skip",
                                  "no verified shim for this digest in policy's registries"
                                  + ("" if fetch else " (cached and local only: --fetch asks "
                                     "remote registries)"),
                                  expected=f"a shim for {digests['sha256']} signed by a registry "
                                  "signer policy names", actual=found.reasons)
    if given is not None:
        a.doc = metadata.parse_metadata(given)
    elif a.doc is None and a.meta_path is not None:
        # A shim found by digest must carry that digest (RFC §4.5); a mismatch is an error.
        a.doc = metadata.load_metadata(a.meta_path,
                                       lookup_digest=digests["sha256"] if a.from_shim and not by_name else None)
    if meta is None:
        _unless_named(a)
    if by_name and a.doc is not None:
        stale = agent_tools.stale_check(a.doc, digests)
        if stale is not None:  # another build's file: not this binary's metadata (nor tampering)
            a.notes.append(stale)
            a.doc, a.meta_path, a.meta_bundle, a.from_shim = None, None, None, False


def _unless_named(a: _Admitting) -> None:
    """Metadata found by lookup (a shim, the agent-tools tree) that names another program does not
    count for this one (RFC §3.2: name matches the executable): dropped, with the reason reported."""
    doc = a.doc
    problem = doc.name_problem(a.tool_name) if doc is not None else None
    if doc is None or problem is None:
        return
    a.notes.append(Check("metadata.name", "fail", problem, expected=a.tool_name,
                         actual=[doc.name, *doc.aliases()], evidence=doc.source_name))
    a.doc, a.meta_path, a.meta_bundle, a.from_shim, a.shim_signers = None, None, None, False, None


def _step_verify(
    a: _Admitting, art: Artifact, evidence: Evidence, options: AdmitOptions, bundles: tuple[str, ...],
    keys: tuple[str, ...],
) -> tuple[ReportKey | None, tuple[TrustReport, dict[str, Any]] | None, TrustReport]:
    """(3) Verify the tool with the policy's anchors, unless the same bytes were verified with
    the same evidence, options, policy, root and constraints before (the verdict cache). Returns the
    cache key, the hit, and the report (the cached one on a hit)."""
    policy = a.policy
    constraints = _constraints(policy, keys)
    key: ReportKey | None = None
    if a.cache is not None:
        doc = a.doc
        read_bundle = evidence_digests((a.meta_bundle,)) if a.meta_bundle is not None else []
        if read_bundle is not None:
            read = (None if a.meta_path is None else str(a.meta_path), a.from_shim,
                    None if doc is None else str(doc.sha256), None if doc is None else doc.source_name,
                    tuple(map(tuple, read_bundle)))
            key = verdict_key("admit", art.path, a.digests, evidence, options, policy=policy.digest,
                              trusted_root=a.trust_root.digest, constraints=_constraints_text(constraints),
                              key_files=constraints.keys, subject_name=a.tool_name, metadata_read=read)
    hit = cached(a.cache, key)
    if hit is not None:
        return key, hit, hit[0]
    given = Evidence(bundles=bundles, signature=evidence.signature, certificate=evidence.certificate,
                     metadata=a.doc)
    # No signer in policy is an answer (UNVERIFIED, and the policy decides), not an error.
    return key, hit, evaluate.evaluate(art, given, constraints, a.trust_root, require_anchor=False)


def _step_metadata_trust(a: _Admitting, key: ReportKey | None,
                         hit: tuple[TrustReport, dict[str, Any]] | None, report: TrustReport) -> TrustReport:
    """(4) The metadata's own signature and its binding to this tool (from the cache on a hit; on a
    miss verified, and the report stored with what was found). Returns the report with what this
    step added (a copy: the evaluation's report, and the cache's, are never changed)."""
    policy = a.policy
    if hit is not None:
        payload = hit[1]
        a.report_digest = stored_digest(payload)
        a.effects_verified = payload.get("effects_verified") is True
        source = payload.get("metadata_source")
        a.metadata_source = source if isinstance(source, str) else None
    else:
        doc = a.doc
        if doc is not None and a.preverified is not None:
            report.checks.extend(a.preverified.checks)
            a.effects_verified = a.preverified.verified
            a.metadata_source = a.preverified.source
        elif doc is not None:
            if not a.from_shim:
                signers = list(policy.signers)
            else:
                signers = a.shim_signers if a.shim_signers is not None else \
                    [s for reg in policy.registries for s in reg.signers]
            trust = metadata_trust.verify_metadata(doc, a.meta_bundle, signers, a.trust_root, digests=a.digests,
                                                   tool_name=a.tool_name,
                                                   signer_kind="registry" if a.from_shim else "policy")
            report = report.adding(trust.checks)
            a.effects_verified = trust.verified
            a.metadata_source = trust.source
        a.report_digest = store(a.cache, key, report, effects_verified=a.effects_verified,
                                metadata_source=a.metadata_source)

    if a.lookup_note is not None:
        report = report.adding([a.lookup_note])
        a.report_digest = None
    if a.notes:
        report = report.adding(a.notes)
        a.report_digest = None
    return report


def _step_additions(
    a: _Admitting, report: TrustReport, vsas: tuple[str, ...], evidence: Evidence, options: AdmitOptions,
) -> tuple[TrustReport, ToolContract | None, bool, list[tuple[Any, Any]]]:
    """(4a) and (4b): evidence read and checked each time, added to (a copy of) the report after it is
    stored. Returns that report, the AIP-14 contract, whether it verified, and the verdicts its
    required tools add."""
    policy = a.policy
    # (4a) VSAs: read and checked each time (never cached: their age changes), after the report is
    # stored, so the cached report is the evidence's own (docs/vsa.md).
    if vsas:
        report = vsa.apply_vsas(report, vsa.vsa_checks(
            {alg: d.hex for alg, d in a.digests.items()}, vsas, vsa.verifier_rules(policy),
            trust_root=a.trust_root, unanswered=vsa.unanswered_requirements(policy)))
        a.report_digest = None

    # (4b) An AIP-14 contract: read and verified each time (never cached), its required tools admitted.
    tool_md: ToolContract | None = None
    contract_verified = False
    declared: list[tuple[Any, Any]] = []
    contract, contract_bundle = evidence.contract, evidence.contract_bundle
    if contract is not None or contract_bundle is not None or (a.meta_path is not None and not a.from_shim):
        tool_md, contract_verified, checks = _contract(contract, contract_bundle, a.meta_path, policy,
                                                       a.trust_root, a.tool_name)
        if checks:
            report = report.adding(checks)
            a.report_digest = None
        if tool_md is not None:
            # Each admitted as a whole, with this admission's root, shims and cache, never audited alone.
            declared = _required_tools(tool_md, policy, AdmitOptions(
                shim_dir=options.shim_dir, trusted_root=options.trusted_root, staging=options.staging,
                fetch=options.fetch, interactive=True, audit=False, cache=a.cache is not None))
    return report, tool_md, contract_verified, declared


def decided(
    policy: Policy,
    report: TrustReport,
    *,
    tool_name: str,
    words: list[str],
    path: str,
    doc: MetadataDocument | None,
    effects_verified: bool,
    metadata_source: str | None,
    interactive: bool,
    report_digest: str | None,
    audit_log: str | None,
    cache: str,
    contract: ToolContract | None = None,
    contract_verified: bool = False,
    declared: Sequence[tuple[Any, Any]] = (),
) -> Admission:
    """Step (5): the decision for ``words`` on this report, as an ``Admission`` (the decision beside
    the report, which is not changed). The one place an admission is decided: ``admit`` and a held
    tool's calls (admission/held.py)."""
    decision = decide_command(
        policy, report, tool_name=tool_name, metadata=doc.doc if doc is not None else None,
        command=words, effects_verified=effects_verified, metadata_source=metadata_source,
        interactive=interactive, report_digest=report_digest, contract=contract,
        contract_verified=contract_verified, declared=declared,
    )
    pinned = next((c for c in report.checks if c.name == REGISTRY_CHECK and c.failed), None)
    if pinned is not None:
        # RFC §4.3 drift or tampering: denied in every mode (a warn/audit allow would run bytes the
        # user's own index says are not this tool), the reason first (admission/agent_tools.py).
        decision.behavior = "deny"
        decision.reasons = [agent_tools.mismatch_reason(pinned),
                            *(r for r in decision.reasons if not r.code.startswith("MODE_"))]
    failed = next((c for c in report.checks if c.name == "vsa" and c.status == "fail"), None)
    if failed is not None:
        # A verifier the policy trusts FAILED these exact bytes (admission/vsa.py, docs/vsa.md): denied in
        # every mode and whatever other evidence says, as a registry pin is; the reason first.
        decision.behavior = "deny"
        decision.reasons = [Reason("VSA_FAILED", failed.message, rule="trust.verifiers", expected="PASSED",
                                   actual=failed.actual),
                            *(r for r in decision.reasons if not r.code.startswith("MODE_"))]
    broken = broken_mark(report.digests.get("sha256"))
    if broken is not None:
        # These bytes broke their own signed declaration at run time (state/broken.py): denied in every
        # mode until a person clears the mark (AIP-14: "the host MUST surface a spec violation").
        decision.behavior = "deny"
        decision.reasons = [Reason(
            "DECLARATION_BROKEN", f"these bytes tried {broken.get('attempt', '?')} outside their declared "
            "effects; cleared only by 'atip-trust cache clear-broken'", rule="exec.sandbox",
            expected="a tool that keeps its declaration", actual=str(broken.get("attempt", "?"))),
            *(r for r in decision.reasons if not r.code.startswith("MODE_"))]
    return Admission(
        tool=tool_name,
        command=tuple(words),
        path=path,
        report=report,
        decision=decision,
        effects_verified=effects_verified,
        metadata_source=metadata_source,
        decided_ns=time.time_ns(),
        audit_log=audit_log,
        cache=cache,
        metadata=doc,
        contract=contract,
    )


def _contract(
    given: PathLike | None,
    bundle: PathLike | None,
    meta_path: Path | None,
    policy: Policy,
    trust_root: Any,
    tool_name: str,
) -> tuple[ToolContract | None, bool, list[Check]]:
    """The AIP-14 ``TOOL.md`` for this admission: ``given``, else a ``TOOL.md`` beside the metadata file
    that names this tool (another tool's contract in the same folder is not this one's), with its
    bundle (``bundle``, else ``TOOL.md.bundle`` beside it); verified against the policy's signers."""
    if given is None and bundle is not None:
        raise UsageError("--contract-bundle needs --contract: the TOOL.md it signs")
    beside = given is None
    path = pathlib.Path(given) if given is not None else (meta_path.parent / "TOOL.md" if meta_path else None)
    if path is None or (beside and not path.is_file()):
        return None, False, []
    signed = pathlib.Path(bundle) if bundle is not None else pathlib.Path(f"{path}.bundle")
    found, verified, checks = metadata_trust.verify_contract(
        path, signed if bundle is not None or signed.is_file() else None, list(policy.signers), trust_root,
        tool_name=tool_name)
    if beside and tool_name not in (found.name, found.id):
        return None, False, [Check("contract.found", "skip", "the TOOL.md beside the metadata describes "
                                   "another tool: not used", expected=tool_name,
                                   actual=[found.name, found.id], evidence=str(path))]
    return found, verified, checks


def _required_tools(contract: ToolContract, policy: Policy, options: AdmitOptions) -> list[tuple[Any, Any]]:
    """AIP-14 ``requires.tools``: each tool the contract runs must be admitted too (found on PATH and
    decided for as a whole under the same policy); a denial or a question for one is this admission's."""
    requires = contract.frontmatter.get("requires")
    names = requires.get("tools") if isinstance(requires, dict) else None
    out: list[tuple[Any, Any]] = []
    for name in names if isinstance(names, list) else []:
        if not isinstance(name, str) or not name:
            out.append(("deny", Reason("REQUIRED_TOOL_INVALID", "requires.tools names a tool that is not a "
                                       "name", rule=f"aip14:{contract.id}.requires.tools",
                                       expected="a tool name", actual=repr(name))))
            continue
        try:
            sub = admit(name, policy=policy, options=options)
        except AtipTrustError as err:
            out.append(("deny", Reason("REQUIRED_TOOL_NOT_ADMITTED", f"required tool {name!r} could not be "
                                       f"admitted: {err.diagnostics()}", rule=f"aip14:{contract.id}.requires.tools",
                                       expected="admitted", actual=error_code(err))))
            continue
        if sub.behavior != "allow":
            why = "; ".join(r.message for r in sub.decision.reasons[:2])
            out.append((sub.behavior, Reason("REQUIRED_TOOL_NOT_ADMITTED", f"required tool {name!r} is not "
                                             f"allowed ({sub.behavior}): {why}",
                                             rule=f"aip14:{contract.id}.requires.tools", expected="allow",
                                             actual=f"{sub.behavior} ({sub.report.trust_level.name})")))
    return out


class _PolicyConstraints:
    """The constraints (and their text in the cache key) made from one policy object without key files."""

    __slots__ = ("policy", "digest", "constraints", "text")

    def __init__(self, policy: Policy, constraints: Constraints) -> None:
        self.policy = policy
        self.digest = policy.digest
        self.constraints = constraints
        self.text = repr(constraints)


#: The last few, newest last: a runtime decides with one policy object for many calls.
_MADE: list[_PolicyConstraints] = []


def _constraints(policy: Policy, keys: Sequence[PathLike]) -> Constraints:
    """``constraints_from_policy`` for this admission. Made once per policy object when no public-key
    file is involved (neither ``keys`` nor a ``trust.publicKeys`` path in any layer): then they depend
    on the policy alone. A key file is read, and its digest checked against the policy, every call."""
    if not keys:
        # Only a policy without key files is ever kept here (below), and its digest covers its layers.
        for made in _MADE:
            if made.policy is policy and made.digest == policy.digest:
                return made.constraints
    if keys or any(k.path for layer in policy.layers for k in (layer.public_keys or ())):
        return constraints_from_policy(policy, Constraints(keys=tuple(pathlib.Path(k) for k in keys)))
    made = _PolicyConstraints(policy, constraints_from_policy(policy, Constraints()))
    if len(_MADE) >= 8:
        del _MADE[0]
    _MADE.append(made)
    return made.constraints


def _constraints_text(constraints: Constraints) -> str:
    """``repr(constraints)`` (part of the cache key), made once for constraints made once."""
    for made in _MADE:
        if made.constraints is constraints:
            return made.text
    return repr(constraints)


__all__ = ["Admission", "AdmitOptions", "admit", "audit_failure", "load_admission_policy", "tool_name_of", "write_audit"]
