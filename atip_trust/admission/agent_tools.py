"""The XDG ``agent-tools`` tree every agent shares (RFC §4.2, §4.3, §10.1), as admission reads it.

``$XDG_DATA_HOME/agent-tools`` and ``$XDG_CONFIG_HOME/agent-tools`` (state/dirs.py; tests point both
at temporary folders) hold:

* ``registry.json``: the local name -> digest index (registry/local.py, written by
  ``scan --update-registry``). Not evidence: it never adds trust. It is a pin: when it records a
  digest for the name being admitted and the admitted bytes have another, that is drift or tampering
  (the binary was updated, replaced, or another file now answers to the name), and the admission is
  **denied** with ``LOCAL_REGISTRY_DIGEST_MISMATCH`` naming the recorded and the actual digest, in
  every policy mode (``warn``/``audit`` do not turn it into an allow: admission/admit.py ``decided``)
  — what a cosign or ``gh attestation verify`` user expects of a digest that does not match, and what
  ``exec --expect-digest`` does. The bytes are the ones admission hashed from its one descriptor
  (hashed again only when the file's stat identity changed: the verdict cache's fast path), never
  the index's own re-hash of a path. A tool updated on purpose is indexed again by
  ``scan --update-registry`` (after it verifies) or removed from the index.
* ``tools/``: native ATIP metadata keyed by digest (RFC §4.3's lookup: ``sha256-<hex>.json``; the
  §4.2 tree: ``<name>-<hex>.json``), with its bundle beside it (``.json.bundle``): metadata as
  ``--metadata`` would give it, verified against the policy's signers (claims only until then).
* ``shims/sha256/<hex>.json``: shims by digest, as ``--shim-dir`` gives them: the file's
  ``binary.hash`` must be its name (RFC §4.5; another digest is an error, a denial) and its bundle
  must verify against a registry signer policy names.
* ``overrides/sha256/<hex>.json`` (config tree): a user's replacement metadata for one binary. It takes
  effect only when signed: its ``.json.bundle`` verifies over its exact bytes against the policy's
  signers and it names this binary's digest and this tool (admission/metadata_trust.py, as any
  metadata). Then it replaces every other metadata source. Unsigned, signed by someone policy does
  not name, bound to another binary, or malformed: ignored and reported (``agent_tools.override``),
  never applied — not even to tighten, so that a planted file can neither loosen nor deny.

An admission where neither root exists pays two ``stat`` calls (state/dirs.py ``agent_tools_roots``)
and does not load this module (admission/admit.py); with a tree, a few more, and ``registry.json`` is
read and parsed each time.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from atip_trust._base.files import exists, owner_problem
from atip_trust._base.record import Record
from atip_trust.admission import metadata_trust
from atip_trust.admission.options import REGISTRY_CHECK
from atip_trust.errors import AtipTrustError, EnvironmentFailure
from atip_trust.facts import metadata
from atip_trust.facts.report import Check, Reason
from atip_trust.registry import local
from atip_trust.state.dirs import agent_tools_config_dir, agent_tools_data_dir, agent_tools_system_dirs

if TYPE_CHECKING:
    from atip_trust.admission.metadata_trust import MetadataTrust
    from atip_trust.facts.digest import Algorithm, Digest
    from atip_trust.facts.metadata import MetadataDocument
    from atip_trust.policy.model import Policy

#: The check (admission/options.py) and the reason a digest that differs from ``registry.json``'s is
#: reported with.
MISMATCH = "LOCAL_REGISTRY_DIGEST_MISMATCH"


class AgentTree(Record):
    """The roots of RFC §4.2's tree, and RFC v0.3 §4's system-wide ones."""

    #: ``$XDG_DATA_HOME/agent-tools``: registry.json, tools/, shims/.
    data: str
    #: ``$XDG_CONFIG_HOME/agent-tools``: overrides/.
    config: str
    #: ``$XDG_DATA_DIRS`` ``agent-tools`` trees that exist (tools/, shims/), after the user's.
    system: tuple[str, ...] = ()

    @classmethod
    def default(cls) -> AgentTree:
        """The tree for this environment, remembered for the variables it was worked out from (a
        runtime admits before every call; the variables rarely change, tests change them)."""
        env = os.environ
        key = (env.get("XDG_DATA_HOME"), env.get("XDG_CONFIG_HOME"), env.get("HOME"), env.get("XDG_DATA_DIRS"))
        if _LAST and _LAST[0][0] == key:
            return _LAST[0][1]
        tree = cls(agent_tools_data_dir(), agent_tools_config_dir(), agent_tools_system_dirs())
        _LAST[:] = [(key, tree)]
        return tree

    def present(self) -> bool:
        """A root exists (a ``stat`` call each): without one nothing else is looked for."""
        return any(os.path.isdir(d) for d in (self.data, self.config, *self.system))


#: The last ``AgentTree.default()`` and the variables it was worked out from.
_LAST: list[tuple[tuple[str | None, ...], AgentTree]] = []


class Found(Record):
    """A metadata file found in the tree: where, its bundle, and how it was named."""

    path: Path
    bundle: Path | None
    #: True for RFC v0.3 §4's name-keyed layout (``tools/gh.json``): the name says nothing of which
    #: build it describes, so a file about another build is stale, not tampering (``stale_check``).
    by_name: bool = False


def _system_problem(root: str, path: str) -> str | None:
    """A system-wide file counts only when it and every folder from its tree's root down to it pass
    the checks an org policy file gets (_base/files.py ``owner_problem``): whoever can write one of
    them decides what it says."""
    at = path
    while True:
        try:
            problem = owner_problem(os.stat(at))
        except OSError as err:
            return f"cannot be checked: {err.strerror}"
        if problem is not None:
            return f"{at} is {problem}"
        if at == root or len(at) <= len(root):
            return None
        at = os.path.dirname(at)


def _lookup(tree: AgentTree, folder: str, names: Sequence[tuple[str, bool]],
            notes: list[Check]) -> Found | None:
    """The first of ``names`` (file name, name-keyed?) under ``folder`` of the user's data root, then of
    each system-wide root; a system-wide file that fails its ownership checks is skipped, with a note."""
    for root in (tree.data, *tree.system):
        for name, by_name in names:
            path = _file(os.path.join(root, folder, name))
            if path is None:
                continue
            problem = _system_problem(root, path) if root != tree.data else None
            if problem is not None:
                notes.append(Check("agent_tools.system", "fail", f"{path} does not count: {problem}",
                                   expected="owned by root or you, not group/other-writable", actual=problem,
                                   evidence=path))
                continue
            p, bundle = _with_bundle(path)
            assert p is not None
            return Found(p, bundle, by_name)
    return None


def _file(path: str) -> str | None:
    return path if os.path.isfile(path) else None


def _with_bundle(path: str | None) -> tuple[Path | None, Path | None]:
    if path is None:
        return None, None
    bundle = _file(f"{path}.bundle")
    return Path(path), Path(bundle) if bundle is not None else None


def find_native(tree: AgentTree, hexdigest: str, tool_name: str, notes: list[Check]) -> Found | None:
    """``tools/`` metadata for this binary: by digest (``sha256-<hex>.json``, ``<name>-<hex>.json``),
    else RFC v0.3 §4's name-keyed ``tools/<name>.json``; with its bundle. None when there is none."""
    named = [(f"{tool_name}-{hexdigest}.json", False), (f"{tool_name}.json", True)] if _plain(tool_name) else []
    return _lookup(tree, "tools", [(f"sha256-{hexdigest}.json", False), *named], notes)


def _plain(tool_name: str) -> bool:
    """A name that is one file name in its folder (never a path out of it)."""
    return bool(tool_name) and "/" not in tool_name and not tool_name.startswith(".") and "\x00" not in tool_name


def find_shim(tree: AgentTree, hexdigest: str, tool_name: str, notes: list[Check]) -> Found | None:
    """``shims/sha256/<hex>.json``, else the name-keyed ``shims/<name>.json`` (RFC v0.3 §4, the
    README's ``shims/curl.json``); with its bundle."""
    named = [(f"{tool_name}.json", True)] if _plain(tool_name) else []
    return _lookup(tree, "shims", [(f"sha256/{hexdigest}.json", False), *named], notes)


#: The tree's metadata folders and which root holds each (RFC §4.2; RFC v0.3 §4).
_FOLDERS = (("data", "tools"), ("data", "shims"), ("config", "overrides"))


def tree_notes(tree: AgentTree, limit: int = 200) -> list[tuple[str, str, str]]:
    """What ``doctor`` says of the tree without a binary in hand: (status, message, path) for each
    metadata file that cannot count as it is — a system-wide file in a place others can write
    (``warning``: it is skipped), one with no ``.json.bundle`` (``none``: a claim at most; an override
    without one is never applied). Whether a file binds a binary is said when that binary is admitted
    (``admit``, ``scan``). At most ``limit`` files are looked at."""
    out: list[tuple[str, str, str]] = []
    seen = 0
    for root, kind, folder in [(tree.data, "data", f) for _, f in _FOLDERS[:2]] + \
            [(r, "system", f) for r in tree.system for _, f in _FOLDERS[:2]] + [(tree.config, "config", "overrides")]:
        base = os.path.join(root, folder)
        for where, _dirs, files in os.walk(base):
            for name in sorted(f for f in files if f.endswith(".json")):
                seen += 1
                if seen > limit:
                    return out
                path = os.path.join(where, name)
                problem = _system_problem(root, path) if kind == "system" else None
                if problem is not None:
                    out.append(("warning", f"{path} does not count: {problem}", path))
                elif not os.path.isfile(f"{path}.bundle"):
                    what = "never applied" if folder == "overrides" else "a claim at most (it can only tighten)"
                    out.append(("none", f"{path} has no .json.bundle: {what}", path))
    return out


def stale_check(doc: MetadataDocument, digests: Mapping[Algorithm, Digest]) -> Check | None:
    """A name-keyed file that names another build's digest (``tools/gh.json`` written for the gh before
    an update) does not count for this one: a Check saying so, or None when it names this build or no
    digest at all (then it is a claim until signed and bound, admission/metadata_trust.py)."""
    claims = doc.claims
    for want in (claims.binary.hash if claims.binary else None, claims.checksum):
        if want is not None and digests.get(want.algorithm) != want:
            return Check("agent_tools.stale", "fail", f"{doc.source_name} describes another build of "
                         f"{doc.name!r}: it does not count for this binary (index it again for this build)",
                         expected=str(digests.get(want.algorithm)), actual=str(want), evidence=doc.source_name)
    return None


def registry_check(tree: AgentTree, tool_name: str, path: str,
                   digests: Mapping[Algorithm, Digest], digest_of: Any) -> Check | None:
    """``registry.json`` against the admitted bytes: None when the index is absent or does not name
    ``tool_name``; a passing check when the recorded digest is the bytes'; a failing one (the
    admission is denied) when it differs. ``digest_of(algorithm)``: the bytes' digest in an algorithm
    ``digests`` lacks. A malformed index, or one another user can write, raises (registry/local.py):
    an error, a denial."""
    index = os.path.join(tree.data, "registry.json")
    if not exists(index, what="agent-tools registry.json", error=EnvironmentFailure):
        return None
    entry = local.LocalRegistry(index).recorded(tool_name)
    if entry is None:
        return None
    want = entry.digest
    have = digests.get(want.algorithm) or digest_of(want.algorithm)
    if have == want:
        return Check(REGISTRY_CHECK, "pass", f"the bytes are the ones {index} records for {tool_name!r}",
                     expected=str(want), actual=str(have), evidence=index)
    where = "" if entry.path == path else f" (it records {entry.path}; the name now runs {path})"
    return Check(REGISTRY_CHECK, "fail",
                 f"{path} is not the binary {index} records for {tool_name!r}{where}: drift or tampering; "
                 f"if the tool was updated on purpose, index it again with `atip-trust scan "
                 f"--update-registry` once it verifies", expected=str(want), actual=str(have), evidence=index)


def mismatch_reason(check: Check) -> Reason:
    """The denial a failing ``registry_check`` makes."""
    return Reason(MISMATCH, check.message, rule="builtin:local-registry", expected=check.expected,
                  actual=check.actual)


class Override(Record):
    """An override that took effect: its document, where it is, and its verification."""

    doc: MetadataDocument
    path: Path
    bundle: Path
    trust: MetadataTrust


def find_override(
    tree: AgentTree, policy: Policy, trust_root: Any, *, digests: Mapping[Algorithm, Digest],
    tool_name: str,
) -> tuple[Override | None, Check | None]:
    """``overrides/sha256/<hex>.json`` for this binary, else the name-keyed ``overrides/<name>.json``
    (RFC v0.3 §4): (the override, its check) when it is signed by a signer policy names and bound to this
    binary and tool; (None, a check saying why it is ignored) when it is not; (None, None) when there is
    none. The name-keyed file meets the same rule: its signature and its digest, never its file name."""
    base = os.path.join(tree.config, "overrides")
    path = _file(os.path.join(base, "sha256", f"{digests['sha256'].hex}.json")) or (
        _file(os.path.join(base, f"{tool_name}.json")) if _plain(tool_name) else None)
    if path is None:
        return None, None
    bundle = _file(f"{path}.bundle")
    if bundle is None:
        return None, Check("agent_tools.override", "fail", "the override has no signature bundle "
                           "(.json.bundle): ignored, never applied", expected="a bundle signed by a signer "
                           "named in policy", actual=None, evidence=path)
    try:
        doc = metadata.load_metadata(path)
    except AtipTrustError as err:
        return None, Check("agent_tools.override", "fail", f"the override is not ATIP metadata: ignored, "
                           f"never applied: {err.diagnostics()}", expected="ATIP metadata", actual=None,
                           evidence=path)
    trust = metadata_trust.verify_metadata(doc, Path(bundle), list(policy.signers), trust_root,
                                           digests=digests, tool_name=tool_name, signer_kind="policy")
    if not trust.verified:
        why = "; ".join(f"{c.name}: {c.message}" for c in trust.checks if c.status != "pass")
        failed = next((c for c in trust.checks if c.status != "pass"), None)
        return None, Check("agent_tools.override", "fail", f"the override is ignored, never applied: {why}",
                           expected=failed.expected if failed else None,
                           actual=failed.actual if failed else None, evidence=path)
    return Override(doc, Path(path), Path(bundle), trust), Check(
        "agent_tools.override", "pass", "the override is signed by a signer named in policy and names "
        "this binary: it replaces the tool's other metadata", expected=None, actual=str(doc.sha256),
        evidence=path)


__all__ = [
    "MISMATCH",
    "REGISTRY_CHECK",
    "AgentTree",
    "Override",
    "Found",
    "find_native",
    "find_override",
    "find_shim",
    "mismatch_reason",
    "registry_check",
    "stale_check",
    "tree_notes",
]
