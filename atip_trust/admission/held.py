"""A tool admitted once and held open: a runtime's call-time decisions (RFC §4 "at call time") without
reading again what has not changed.

An agent runtime decides before every call of the same few tools. ``admit`` on a verdict-cache hit
still resolves the path, opens and closes the file, stats every piece of evidence and the cache entry,
builds the cache key and copies the cached report (~100 µs, ``python -m bench --only decide``). A
``HeldTool`` does all of ``admit`` once (:meth:`HeldTool.open`, the same library admission, verdict
cache included) and keeps the descriptor it hashed. Each :meth:`HeldTool.admit` then:

1. checks that nothing the trust report stands on changed: that the resolved path still names the held
   file, unchanged (its dev, inode, size, mtime_ns and ctime_ns, as the verdict cache's stat fast path;
   a rename over it or a directory swapped for a symlink gives another identity, and while the
   descriptor is held its inode cannot be reused), every evidence, metadata and key file's identity, and
   the trusted root ``admit`` would choose now (its digest);
2. if anything changed, or if any of those files had changed within ``RACY_NS`` before it was read (a
   coarse file-system clock could hide a second write), admits the tool again in full, from its path;
3. decides anew, exactly as ``admit`` does (``admission.decided``): the policy's rules, waivers (with
   their expiry, at this call's time), the command, its effects and interactivity are evaluated on
   every call. Only the trust report is reused, never a decision (issue 12, DESIGN principle 9).

VSAs (``vsas``, and ``bundle_dir``'s ``<hex>.vsa.jsonl`` by the tool's digest, docs/vsa.md) are not
held: their outcome changes with time alone (a counted VSA past its ``maxAge``) and a by-digest VSA may
appear at any moment, so a tool admitted with them is admitted in full on every call (as with an AIP-14
contract, verified each time): a held tool is never more trusted than ``admit`` now.

What it does not re-read: the policy file (the runtime holds the ``Policy`` object, as with ``admit``)
and the verdict cache's entry (a ``cache clear`` empties the disk; a held tool keeps the report it
verified in this process). A tool found through a shim folder or a registry is not held: every call
is a full ``admit``, since the shim it would find may change with any file there; so is every call while
RFC §4.2's ``agent-tools`` tree exists (admission/agent_tools.py): its ``registry.json`` pin, metadata
and signed overrides may change with any file there, and a call must see them.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from atip_trust._base.files import path_texts
from atip_trust._base.record import replace
from atip_trust._base.statmemo import Ident, regular_ident, settled
from atip_trust.admission import vsa
from atip_trust.admission.admit import (
    Admission,
    Known,
    PathLike,
    admission_policy,
    admit,
    audit_failure,
    audited,
    decided,
    tool_name_of,
)
from atip_trust.admission.agent_tools import AgentTree
from atip_trust.admission.interactive import can_ask
from atip_trust.admission.options import AdmitOptions, split_keywords
from atip_trust.admission.verdict_key import file_ident, hash_artifact, open_cache
from atip_trust.errors import UsageError, expect_type
from atip_trust.evaluation.inputs import Evidence
from atip_trust.facts.artifact import Artifact, resolve
from atip_trust.policy.constraints import choose_trusted_root
from atip_trust.policy.model import Policy
from atip_trust.policy.rules import split_command

if TYPE_CHECKING:
    from atip_trust.admission.interactive import Interactive
    from atip_trust.facts.metadata import MetadataDocument
    from atip_trust.facts.report import TrustReport

__all__ = ["HeldTool"]

class HeldTool:
    """One tool, admitted once (``open``) and decided for on every call (``admit``). Close it (or use
    it as a context manager) to release its descriptor. Not thread-safe: one per thread, or a lock."""

    __slots__ = ("policy", "_tool", "_name", "_evidence", "_options", "_files", "_art", "_ident", "_root",
                 "_report", "_report_digest", "_doc", "_effects_verified", "_metadata_source",
                 "_holdable", "_steady", "_fresh", "_calls", "_bundle_dir")

    def __init__(self, tool: PathLike, *, policy: Policy, evidence: Evidence, options: AdmitOptions,
                 files: tuple[str, ...], holdable: bool, bundle_dir: PathLike | None = None) -> None:
        self.policy = policy
        #: ``open``'s interactive, audit, audit_log and defer_audit: each call's defaults.
        self._calls: tuple[bool | Interactive, bool, PathLike | None, bool] = (
            options.interactive, options.audit, options.audit_log, options.defer_audit)
        self._tool = tool
        self._name = options.name
        #: ``admit``'s evidence and options, kept for every full admission again.
        self._evidence = evidence
        self._options = options
        self._files = files
        self._holdable = holdable
        self._art: Artifact | None = None
        self._ident: Ident | None = None
        self._root = ""
        self._report: TrustReport | None = None
        self._report_digest: str | None = None
        self._doc: MetadataDocument | None = None
        self._effects_verified = False
        self._metadata_source: str | None = None
        #: (file, identity) for the artifact's path and every input file, as read; None when closed or
        #: when one was not settled when read (then every call admits the tool again).
        self._steady: tuple[tuple[str, Ident | None], ...] | None = None
        #: The verdict cache's answer for the admission that made the held report, until a call used it.
        self._fresh: str | None = None
        #: Where VSAs are kept by digest; the by-digest places that held none (one appearing: admit again).
        self._bundle_dir = bundle_dir
        #: When the held report's VSAs may give another answer with time alone (then: admit again).

    @classmethod
    def open(
        cls,
        tool: PathLike,
        *,
        policy: Policy | PathLike,
        evidence: Evidence | None = None,
        options: AdmitOptions | None = None,
        bundle_dir: PathLike | None = None,
        **keywords: Any,
    ) -> HeldTool:
        """Admit ``tool`` (as :func:`~atip_trust.admission.admit.admit`, with the same arguments: its
        ``Evidence`` and ``AdmitOptions``, or their fields as keywords) and hold it. Errors raise as
        ``admit``'s do, after its audit line (in ``audit_log``). ``interactive``, ``audit``,
        ``audit_log`` and ``defer_audit`` are also what each :meth:`admit` call uses unless it says
        otherwise. Evidence checked on every admission (VSAs, an AIP-14 contract) is not held: each
        call is then a full ``admit``. ``bundle_dir``: the tool's VSAs kept by its digest
        (``<hex>.vsa.jsonl``, docs/vsa.md), looked up for the bytes there at each call."""
        expect_type("HeldTool.open() tool", tool, (str, os.PathLike))
        evidence, options = split_keywords("HeldTool.open", evidence, options, AdmitOptions, keywords)
        name, audit, audit_log = options.name, options.audit, options.audit_log
        chosen = admission_policy(policy, tool=name or tool, command=None, audit=audit, audit_log=audit_log)
        try:
            bundle_paths, key_paths = path_texts(evidence.bundles, "bundles"), path_texts(options.keys, "keys")
        except UsageError as err:
            if audit:
                audit_failure(err, tool=name or tool, policy=chosen, audit_log=audit_log)
            raise
        evidence, options = replace(evidence, bundles=bundle_paths), replace(options, keys=key_paths)
        # Every file the trust report stands on, besides the tool: the evidence, the metadata file,
        # the key files (``--key`` and the policy's own PEM files, read on every admission).
        metadata = evidence.metadata
        files = [*bundle_paths, *key_paths]
        files += [os.fspath(p) for p in (evidence.metadata_bundle, evidence.signature, evidence.certificate)
                  if p is not None]
        if isinstance(metadata, (str, os.PathLike)):
            files.append(os.fspath(metadata))
        files += [os.fspath(k.path) for layer in chosen.layers for k in (layer.public_keys or ()) if k.path]
        # VSAs age and may appear by digest (docs/vsa.md): a tool admitted with them is admitted in
        # full on every call, as is one whose contract is verified each time.
        holdable = options.shim_dir is None and not chosen.registries and bundle_dir is None and not (
            evidence.vsas or evidence.contract is not None or evidence.contract_bundle is not None)
        held = cls(tool, policy=chosen, evidence=evidence, options=options, files=tuple(files),
                   holdable=holdable, bundle_dir=bundle_dir)
        held._hold(audit=audit, audit_log=audit_log)
        return held

    def _hold(self, command: Sequence[str] | str | None = None, audit: bool = True,
              audit_log: PathLike | None = None) -> None:
        """Admit the tool in full and keep what the calls reuse. A failure raises after its deny line
        (naming ``command``, in ``audit_log``): the call's, when a call admits the tool again."""
        self.close()
        # Identities first, then the reads: a file changed after this stat (even before admit reads
        # it) no longer has the identity kept here, so the next call admits again.
        steady = [(f, regular_ident(f)) for f in self._files]
        # Settled when read (these stats come first): a file changed within RACY_NS of its read may
        # change again unseen, within the same timestamp. Judged now, never at a later call, when every
        # file looks old: that would accept the very identity the window makes unreliable.
        was_settled = all(i is not None and settled(i) for _, i in steady)
        root = _root_digest(self.policy, self._options)
        path = resolve(os.fspath(self._tool))
        art = Artifact.open(path, resolved=True)
        was_settled = was_settled and settled(file_ident(art.identity))  # before it is hashed
        try:
            # Not interactive: this admission's decision is not used (each call decides, ``decided``).
            first = admit(art, policy=self.policy, command=command, evidence=self._evidence,
                          options=replace(self._options, name=self._name or tool_name_of(self._tool),
                                          interactive=False, audit=audit, audit_log=audit_log,
                                          defer_audit=True))
        except BaseException:
            art.close()
            raise
        self._art = art
        self._ident = file_ident(art.identity)
        self._root = root
        report = first.report
        self._report_digest = first.decision.report_digest  # of the facts: a report holds no decision
        self._report = report
        self._doc = first.metadata
        self._effects_verified = first.effects_verified
        self._metadata_source = first.metadata_source
        self._fresh = first.cache
        self._steady = ((art.path, self._ident), *steady) if was_settled else None

    def _with_kept_vsas(self, art: Artifact) -> Evidence:
        """The evidence with the VSAs kept by this file's digest in ``bundle_dir`` added."""
        assert self._bundle_dir is not None
        digest = hash_artifact(art, open_cache(self._options.cache))["sha256"]
        kept = [p for p in vsa.vsa_candidates(self._bundle_dir, digest.hex) if os.path.isfile(p)]
        given = self._evidence.vsas
        return replace(self._evidence, vsas=[*path_texts(given, "vsas"), *kept]) if kept else self._evidence

    def _unchanged(self) -> bool:
        """Step 1 of the module docstring: True only when the held report may be decided on."""
        art, steady = self._art, self._steady
        if art is None or steady is None or art.fd < 0:
            return False
        if AgentTree.default().present():
            return False  # the tree's pin, metadata and overrides are read by every admission
        for path, ident in steady:
            # The artifact's own path is stat'ed like the evidence: following links, so a path that
            # now leads elsewhere, by any route, names another identity. Its identity equal to the one
            # held also means the held descriptor's file is that file, unchanged: the open descriptor
            # keeps its inode from being reused, so no ``fstat`` is needed.
            if regular_ident(path) != ident:
                return False
        return _root_digest(self.policy, self._options) == self._root

    def admit(
        self,
        command: Sequence[str] | str | None = None,
        *,
        interactive: bool | Interactive | None = None,
        audit: bool | None = None,
        audit_log: PathLike | None = None,
        defer_audit: bool | None = None,
    ) -> Admission:
        """The admission for ``command`` now, as :func:`~atip_trust.admission.admit.admit` would decide it
        (same arguments; those not given: as given to :meth:`open`). ``Admission.cache`` is ``held``
        when the held report was decided on, and the verdict cache's ``hit`` / ``miss`` / ``off`` when
        this call (or ``open``) admitted the tool."""
        given = self._calls
        interactive = given[0] if interactive is None else interactive
        audit = given[1] if audit is None else audit
        audit_log = given[2] if audit_log is None else audit_log
        defer_audit = given[3] if defer_audit is None else defer_audit
        if not self._holdable:
            # The bytes at the path now, admitted from this one descriptor, which then becomes the held
            # one: ``artifact`` (what a runtime runs) is always the bytes this call decided on, never
            # those held since ``open`` (another file may answer to the path now).
            now = Artifact.open(resolve(os.fspath(self._tool)), resolved=True)
            try:
                # the VSAs kept by the digest of the bytes there now
                evidence = self._evidence if self._bundle_dir is None else self._with_kept_vsas(now)
                adm = admit(now, policy=self.policy, command=command, evidence=evidence,
                            options=replace(self._options, name=self._name or tool_name_of(self._tool),
                                            interactive=interactive, audit=audit, audit_log=audit_log,
                                            defer_audit=defer_audit))
            except BaseException:
                now.close()
                raise
            self.close()
            self._art = now
            return adm
        if not self._unchanged():
            self._hold(command, audit, audit_log)
        art, report = self._art, self._report
        if art is None or report is None:  # pragma: no cover - _hold either sets both or raises
            raise UsageError("the held tool is closed")
        known = Known(tool=self._name or tool_name_of(self._tool), policy=self.policy,
                      path=art.path, digest=report.digests.get("sha256"))
        words = list(split_command(command))
        known.words = words
        cache, self._fresh = self._fresh or "held", None
        return audited(
            known, self.policy, audit=audit, audit_log=audit_log, defer_audit=defer_audit,
            run=lambda target: decided(
                self.policy, report.copy(), tool_name=known.tool, words=words, path=art.path,
                doc=self._doc, effects_verified=self._effects_verified,
                metadata_source=self._metadata_source, interactive=can_ask(interactive),
                report_digest=self._report_digest, audit_log=target, cache=cache),
        )

    @property
    def artifact(self) -> Artifact:
        """The held descriptor: the bytes the last admission (``open`` or a call that admitted the tool
        again) decided on; ``Artifact.exec_fd`` runs exactly these bytes."""
        if self._art is None:
            raise UsageError("the held tool is closed")
        return self._art

    def close(self) -> None:
        if self._art is not None:
            self._art.close()
            self._art = None
        self._steady = None

    def __enter__(self) -> HeldTool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _root_digest(policy: Policy, options: AdmitOptions) -> str:
    """The digest of the trusted root ``admit`` would choose now (the same call, deferred: digested,
    not parsed; remembered by its stat identity, signature/trustroot.py). Taken before an admission
    reads the root: a root replaced meanwhile has another digest at the next call."""
    given = options.trusted_root
    return choose_trusted_root(policy, os.fspath(given) if given is not None else None, options.staging,
                               deferred=True).digest
