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

VSAs (``vsas``, and ``bundle_dir``'s ``<hex>.vsa.jsonl`` by the tool's digest, docs/vsa.md) are
evidence like the bundles: their files' identities are watched (a by-digest VSA that appears where
there was none, too), and a report that stands on them is made again in full from the moment their
outcome may change with time alone (a counted VSA past its ``maxAge``, one dated ahead becoming
current: ``admission.vsa.vsa_recheck_at``), so a held tool is never more trusted than ``admit`` now.

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

TYPE_CHECKING = False  # typing's constant without importing typing at run time (docs/caching.md)
if TYPE_CHECKING:
    from typing import TypedDict

    from atip_trust.facts.metadata import MetadataDocument
    from atip_trust.facts.report import TrustReport
    from atip_trust.admission.interactive import Interactive

    class _Options(TypedDict):
        """``admit``'s arguments about the evidence, kept for every full admission again."""

        metadata: PathLike | bytes | None
        metadata_bundle: PathLike | None
        bundles: Sequence[PathLike]
        keys: Sequence[PathLike]
        signature: PathLike | None
        shim_dir: PathLike | None
        trusted_root: PathLike | None
        staging: bool
        cache: bool
        fetch: bool
        vsas: Sequence[PathLike]

from atip_trust._base.statmemo import Ident, regular_ident, settled
from atip_trust.errors import UsageError
from atip_trust._base.files import path_texts
from atip_trust.facts.artifact import Artifact, resolve_text
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
from atip_trust.admission.verdict_key import file_ident, hash_artifact, open_cache
from atip_trust.admission.agent_tools import AgentTree
from atip_trust.admission.interactive import can_ask
from atip_trust.policy.constraints import choose_trusted_root
from atip_trust.policy.model import Policy
from atip_trust.policy.rules import split_command
from atip_trust.admission._deps import gate_vsa  # only a tool held with VSAs reads them

__all__ = ["HeldTool"]

class HeldTool:
    """One tool, admitted once (``open``) and decided for on every call (``admit``). Close it (or use
    it as a context manager) to release its descriptor. Not thread-safe: one per thread, or a lock."""

    __slots__ = ("policy", "_tool", "_name", "_options", "_files", "_art", "_ident", "_root",
                 "_report", "_report_digest", "_doc", "_effects_verified", "_metadata_source",
                 "_holdable", "_steady", "_fresh", "_calls", "_bundle_dir", "_absent", "_until")

    def __init__(self, tool: PathLike, *, policy: Policy, name: str | None, options: _Options,
                 files: tuple[str, ...], holdable: bool, bundle_dir: PathLike | None = None) -> None:
        self.policy = policy
        #: ``open``'s interactive, audit, audit_log and defer_audit: each call's defaults.
        self._calls: tuple[bool | Interactive, bool, PathLike | None, bool] = (False, True, None, False)
        self._tool = tool
        self._name = name
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
        self._absent: tuple[str, ...] = ()
        #: When the held report's VSAs may give another answer with time alone (then: admit again).
        self._until: float | None = None  # epoch seconds: no datetime on a held call

    @classmethod
    def open(
        cls,
        tool: PathLike,
        *,
        policy: Policy | PathLike,
        name: str | None = None,
        metadata: PathLike | bytes | None = None,
        metadata_bundle: PathLike | None = None,
        bundles: PathLike | Sequence[PathLike] = (),
        keys: PathLike | Sequence[PathLike] = (),
        signature: PathLike | None = None,
        shim_dir: PathLike | None = None,
        trusted_root: PathLike | None = None,
        staging: bool = False,
        interactive: bool | Interactive = False,
        audit: bool = True,
        audit_log: PathLike | None = None,
        defer_audit: bool = False,
        cache: bool = True,
        fetch: bool = False,
        vsas: PathLike | Sequence[PathLike] = (),
        bundle_dir: PathLike | None = None,
    ) -> HeldTool:
        """Admit ``tool`` (as :func:`~atip_trust.admission.admit.admit`, with the same arguments) and hold
        it. Errors raise as ``admit``'s do, after its audit line (in ``audit_log``). ``interactive``,
        ``audit``, ``audit_log`` and ``defer_audit`` are also what each :meth:`admit` call uses unless
        it says otherwise. ``bundle_dir``: the tool's VSAs kept by its digest (``<hex>.vsa.jsonl``,
        docs/vsa.md), added to ``vsas``."""
        chosen = admission_policy(policy, tool=name or tool, command=None, audit=audit, audit_log=audit_log)
        try:
            bundle_paths, key_paths = path_texts(bundles, "bundles"), path_texts(keys, "keys")
            vsa_paths = path_texts(vsas, "vsas")
        except UsageError as err:
            if audit:
                audit_failure(err, tool=name or tool, policy=chosen, audit_log=audit_log)
            raise
        options: _Options = dict(  # a TypedDict for mypy, a plain dict at run time
            metadata=metadata, metadata_bundle=metadata_bundle, bundles=bundle_paths, keys=key_paths,
            signature=signature, shim_dir=shim_dir, trusted_root=trusted_root, staging=staging,
            cache=cache, fetch=fetch, vsas=vsa_paths)
        # Every file the trust report stands on, besides the tool: the evidence, the metadata file,
        # the key files (``--key`` and the policy's own PEM files, read on every admission).
        files = [*bundle_paths, *key_paths, *vsa_paths]
        files += [os.fspath(p) for p in (metadata_bundle, signature) if p is not None]
        if metadata is not None and not isinstance(metadata, (bytes, bytearray)):
            files.append(os.fspath(metadata))
        files += [os.fspath(k.path) for layer in chosen.layers for k in (layer.public_keys or ()) if k.path]
        holdable = shim_dir is None and not chosen.registries
        held = cls(tool, policy=chosen, name=name, options=options, files=tuple(files), holdable=holdable,
                   bundle_dir=bundle_dir)
        held._calls = (interactive, audit, audit_log, defer_audit)
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
        path = resolve_text(os.fspath(self._tool))
        art = Artifact.open(path, resolved=True)
        was_settled = was_settled and settled(file_ident(art.identity))  # before it is hashed
        try:
            options, kept = self._with_kept_vsas(art)
            steady += [(f, regular_ident(f)) for f in kept]
            was_settled = was_settled and all(i is not None and settled(i) for _, i in steady)
            first = admit(art, policy=self.policy, name=self._name or tool_name_of(self._tool),
                          command=command, audit=audit, audit_log=audit_log, defer_audit=True,
                          **options)
            self._until = self._vsa_deadline(first.report.digests, options["vsas"])
        except BaseException:
            art.close()
            raise
        self._art = art
        self._ident = file_ident(art.identity)
        self._root = root
        report = first.report
        self._report_digest = first.decision.report_digest  # of the facts, before any decision
        report.decision = None
        self._report = report
        self._doc = first.metadata
        self._effects_verified = first.effects_verified
        self._metadata_source = first.metadata_source
        self._fresh = first.cache
        self._steady = ((art.path_text, self._ident), *steady) if was_settled else None

    def _with_kept_vsas(self, art: Artifact) -> tuple[_Options, list[str]]:
        """The admission's options with the VSAs kept by this file's digest in ``bundle_dir`` added, and
        those files; the by-digest places holding none are remembered (``_absent``)."""
        if self._bundle_dir is None:
            self._absent = ()
            return self._options, []
        digest = hash_artifact(art, open_cache(self._options["cache"]))["sha256"]
        places = gate_vsa.vsa_candidates(self._bundle_dir, digest.hex)
        kept = [p for p in places if os.path.isfile(p)]
        self._absent = tuple(p for p in places if p not in kept)
        options: _Options = dict(self._options)  # type: ignore[assignment]  # the same keys, a copy
        options["vsas"] = [*self._options["vsas"], *kept]
        return options, kept

    def _vsa_deadline(self, digests: dict[str, str], vsas: Sequence[PathLike]) -> float | None:
        if not vsas:
            return None
        given = self._options["trusted_root"]
        root = choose_trusted_root(self.policy, os.fspath(given) if given is not None else None,
                                   self._options["staging"])
        at = gate_vsa.vsa_recheck_at(digests, vsas, gate_vsa.verifier_rules(self.policy), trust_root=root)
        return None if at is None else at.timestamp()

    def _unchanged(self) -> bool:
        """Step 1 of the module docstring: True only when the held report may be decided on."""
        art, steady = self._art, self._steady
        if art is None or steady is None or art.fd < 0:
            return False
        if self._until is not None and gate_vsa.now_seconds() >= self._until:
            return False  # a VSA the report stands on may have expired (or become current) since
        if any(os.path.lexists(p) for p in self._absent):
            return False  # a VSA kept by digest appeared
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
            options = self._options
            if self._bundle_dir is not None:  # the VSAs kept by the digest of the bytes there now
                with Artifact.open(resolve_text(os.fspath(self._tool)), resolved=True) as now:
                    options, _ = self._with_kept_vsas(now)
            return admit(self._tool, policy=self.policy, command=command, name=self._name,
                         interactive=interactive, audit=audit, audit_log=audit_log,
                         defer_audit=defer_audit, **options)
        if not self._unchanged():
            self._hold(command, audit, audit_log)
        art, report = self._art, self._report
        if art is None or report is None:  # pragma: no cover - _hold either sets both or raises
            raise UsageError("the held tool is closed")
        known = Known(tool=self._name or tool_name_of(self._tool), policy=self.policy,
                      path=art.path_text, digest=report.digests.get("sha256"))
        words = list(split_command(command))
        known.words = words
        cache, self._fresh = self._fresh or "held", None
        return audited(
            known, self.policy, audit=audit, audit_log=audit_log, defer_audit=defer_audit,
            run=lambda target: decided(
                self.policy, report.copy(), tool_name=known.tool, words=words, path=art.path_text,
                doc=self._doc, effects_verified=self._effects_verified,
                metadata_source=self._metadata_source, interactive=can_ask(interactive),
                report_digest=self._report_digest, audit_log=target, cache=cache),
        )

    @property
    def artifact(self) -> Artifact:
        """The held, verified descriptor (``Artifact.exec_fd`` runs exactly these bytes)."""
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


def _root_digest(policy: Policy, options: _Options) -> str:
    """The digest of the trusted root ``admit`` would choose now (the same call, deferred: digested,
    not parsed; remembered by its stat identity, signature/trustroot.py). Taken before an admission
    reads the root: a root replaced meanwhile has another digest at the next call."""
    given = options["trusted_root"]
    return choose_trusted_root(policy, os.fspath(given) if given is not None else None, options["staging"],
                               deferred=True).digest
