"""The lock file ``atip-trust.lock``: the tool surface pinned the way a package lock pins dependencies.

Per tool: path, digest, signer identity and issuer, source repository and ref, the digest of the
metadata decided with, and an effects summary (the effect classes some command does not declare safe).
``atip-trust lock`` writes it; ``atip-trust scan --locked`` compares the surface with it.

What may change without anyone approving it (an *update*): new bytes signed by the same signer (the
identity without its ``@ref``, since a release workflow's identity carries the release tag, and the
same issuer) from the same source repository, gaining none of the gated effects. What needs
``--accept-change TOOL`` (each says old -> new per field):

* ``signer_changed``: another identity or issuer signed it, a signed tool is now unsigned, or an
  unsigned tool was replaced by other bytes that some trusted signer signed (a signer the lock never
  pinned takes over the name);
* ``source_changed``: built from another repository;
* ``unsigned_update``: the bytes changed and nothing policy trusts signs the new ones;
* ``effects_gained``: a gated effect (``destructive``, ``network``) that was declared safe now is not
  (metadata that disappears counts as every effect unknown, hence gained);
* ``new_tool``: a tool the lock does not list;
* ``not_scanned``: the lock lists the tool and something by that name is still there, but the scan
  could not vouch for it: skipped as unsafe (made group-writable, foreign-owned, reached through a link
  someone else controls, in a directory that became unsafe), shadowed, or not opened and hashed. The
  shell still runs it from PATH, so it is drift, never a removal.

A tool the lock lists is reported as ``removed`` (no approval needed: it cannot run) only when nothing
by that name exists any more: not a scanned tool, not a skipped file, not the locked path in a
directory the scan refused. The file is JSON with sorted keys and a fixed indent, so it diffs well
under review, and is replaced atomically.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from typing import Any

from atip_trust._base.files import read_capped, write_atomic
from atip_trust._base.jsonio import parse_json
from atip_trust._base.record import Record, field
from atip_trust.discovery.discover import ToolRow, ToolSurface
from atip_trust.errors import ArtifactAccessError, MalformedInputError
from atip_trust.facts.effects import EFFECT_CLASSES

LOCK_FILE = "atip-trust.lock"
LOCK_VERSION = 1
LOCK_BYTES = 16 * 1024 * 1024
#: Effects whose appearance needs approval.
GATED_EFFECTS = ("destructive", "network")
_FIELDS = ("path", "digest", "signer", "issuer", "sourceRepo", "sourceRef", "metadataDigest", "effects")


class LockEntry(Record):
    path: str
    digest: str
    signer: str | None = None
    issuer: str | None = None
    source_repo: str | None = None
    source_ref: str | None = None
    metadata_digest: str | None = None
    #: None: no metadata, every effect unknown.
    effects: tuple[str, ...] | None = None

    @classmethod
    def from_row(cls, row: ToolRow) -> LockEntry:
        """Signer and source only from a signature policy trusts (a valid signature by someone the
        policy does not name is no signer to pin, and its certificate's source is only a claim)."""
        assert row.digest is not None
        trusted = row.trust == "verified"
        return cls(path=row.path, digest=row.digest, signer=row.signer if trusted else None,
                   issuer=row.issuer if trusted else None,
                   source_repo=row.source_repo if trusted else None,
                   source_ref=row.source_ref if trusted else None,
                   metadata_digest=row.metadata_digest,
                   effects=None if row.effects is None else tuple(row.effects))

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "digest": self.digest, "signer": self.signer, "issuer": self.issuer,
                "sourceRepo": self.source_repo, "sourceRef": self.source_ref,
                "metadataDigest": self.metadata_digest,
                "effects": None if self.effects is None else list(self.effects)}

    @classmethod
    def from_json(cls, doc: Any, where: str) -> LockEntry:
        if not isinstance(doc, dict) or set(doc) != set(_FIELDS):
            raise MalformedInputError(f"a lock entry has exactly the fields {list(_FIELDS)}", path=where)
        for k in _FIELDS:
            v = doc[k]
            ok = isinstance(v, str) if k in ("path", "digest") else (
                v is None or (isinstance(v, list) and all(isinstance(x, str) for x in v))
                if k == "effects" else v is None or isinstance(v, str))
            if not ok:
                raise MalformedInputError(f"{k} has the wrong type", path=f"{where}.{k}")
        eff = doc["effects"]
        return cls(path=doc["path"], digest=doc["digest"], signer=doc["signer"], issuer=doc["issuer"],
                   source_repo=doc["sourceRepo"], source_ref=doc["sourceRef"],
                   metadata_digest=doc["metadataDigest"], effects=None if eff is None else tuple(eff))

    @property
    def signer_key(self) -> tuple[str, str] | None:
        """Who signs, release after release: the identity without its ``@ref`` (a URI identity names
        the workflow and the tag it ran for), and the issuer."""
        if self.signer is None or self.issuer is None:
            return None
        who = self.signer.split("@", 1)[0] if "://" in self.signer else self.signer
        return who, self.issuer


class Change(Record, frozen=False):
    tool: str
    kind: str  # added | removed | updated | unchanged | not_scanned
    #: field -> (old, new), only the fields that differ.
    fields: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    #: Why approval is needed (empty: the change may pass).
    needs: list[str] = field(default_factory=list)
    accepted: bool = False

    @property
    def blocking(self) -> bool:
        return bool(self.needs) and not self.accepted

    def to_json(self) -> dict[str, Any]:
        return {"tool": self.tool, "kind": self.kind, "needs_approval": self.needs,
                "accepted": self.accepted,
                "fields": {k: {"old": o, "new": n} for k, (o, n) in self.fields.items()}}

    def lines(self) -> list[str]:
        state = ("needs --accept-change " + self.tool + " (" + ", ".join(self.needs) + ")"
                 if self.blocking else "accepted (" + ", ".join(self.needs) + ")" if self.needs
                 else "ok")
        out = [f"{self.tool}: {self.kind}: {state}"]
        for k, (o, n) in self.fields.items():
            out.append(f"  {k}: {_show(o)} -> {_show(n)}")
        return out


def _show(v: Any) -> str:
    if v is None:
        return "(none)"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(v) + "]"
    return str(v)


def entries_of(surface: ToolSurface, *, include_failed: bool = False) -> dict[str, LockEntry]:
    """What a lock records: every tool opened and hashed whose trust did not fail (``include_failed``:
    those too, to compare a scan with the lock: tampered bytes are drift, never a removal)."""
    return {r.name: LockEntry.from_row(r) for r in surface.rows
            if r.digest is not None and (include_failed or r.trust != "failed")}


def _gained(old: tuple[str, ...] | None, new: tuple[str, ...] | None) -> list[str]:
    before = set(EFFECT_CLASSES) if old is None else set(old)
    after = set(EFFECT_CLASSES) if new is None else set(new)
    return [e for e in GATED_EFFECTS if e in after and e not in before]


def compare_entry(name: str, old: LockEntry, new: LockEntry) -> Change:
    a, b = old.to_json(), new.to_json()
    diff = {k: (a[k], b[k]) for k in _FIELDS if a[k] != b[k]}
    change = Change(name, "updated" if diff else "unchanged", diff)
    if not diff:
        return change
    if old.signer_key is not None and old.signer_key != new.signer_key:
        change.needs.append("signer_changed")
    elif old.signer_key is None and new.signer_key is not None and old.digest != new.digest:
        # Unsigned bytes replaced by a program some trusted signer signed: a signer the lock never
        # pinned (perhaps with no source repository to compare) takes over the name.
        change.needs.append("signer_changed")
    if old.digest != new.digest and new.signer_key is None:
        change.needs.append("unsigned_update")
    if (old.source_repo or None) != (new.source_repo or None):
        change.needs.append("source_changed")
    gained = _gained(old.effects, new.effects)
    if gained:
        change.needs.append("effects_gained:" + ",".join(gained))
    return change


#: Scan skips only a directory (or a PATH entry) gets: they do not name a tool.
_DIRECTORY_SKIPS = ("path_entry_", "directory_", "ancestor_", "duplicate_directory", "not_a_directory")
#: Scan skips a PATH entry or a tool's link may get (scan.py ``_link_problem``).
_LINK_SKIPS = ("symlink_foreign_owner", "symlink_in_unsafe_directory", "symlink_loop", "symlink_unreadable")


def unscanned(surface: ToolSurface, old: Mapping[str, LockEntry]) -> dict[str, str]:
    """Locked names the scan did not vouch for although something by that name is still there, each
    with why (module docstring, ``not_scanned``): a skipped file of that name, a row that was never
    hashed, or the locked path still present in a directory the scan refused as a whole. A locked
    tool whose directory is simply no longer scanned (PATH changed) is removed: no shell finds it."""
    found: dict[str, str] = {}
    for skip in surface.skipped:
        name = os.path.basename(skip.path)
        if name in old and not skip.reason.startswith(_DIRECTORY_SKIPS):
            found.setdefault(name, f"{skip.reason}: {skip.message}")
    for row in surface.rows:
        if row.name in old and row.digest is None:
            found.setdefault(row.name, f"{row.placement_reason}: {row.error or 'not opened and hashed'}")
    # A directory on the scanned path that the scan refused as a whole (it became writable by others,
    # an ancestor did, it is reached through someone else's link): its tools are not listed one by one.
    refused = {os.path.realpath(p) for s in surface.skipped
               if s.reason.startswith((*_DIRECTORY_SKIPS, *_LINK_SKIPS)) and s.reason != "duplicate_directory"
               for p in (s.path, s.resolved) if p}
    for name, entry in old.items():
        if name not in found and os.path.lexists(entry.path) \
                and os.path.realpath(os.path.dirname(entry.path)) in refused:
            found[name] = (f"{entry.path} still exists in a directory the scan refused as a whole "
                           "(see the skipped directories)")
    return found


def compare(old: Mapping[str, LockEntry], new: Mapping[str, LockEntry],
            accept: Iterable[str] = (), *, present: Mapping[str, str] | None = None) -> list[Change]:
    """Every tool's change from ``old`` to ``new``, sorted by name; ``accept``: approved tools;
    ``present``: locked names not in ``new`` that still exist, with why they were not scanned
    (``unscanned``): drift needing approval, not a removal."""
    approved = set(accept)
    out: list[Change] = []
    for name in sorted(set(old) | set(new)):
        if name not in new:
            why = (present or {}).get(name)
            if why is None:
                out.append(Change(name, "removed", {"digest": (old[name].digest, None)}))
                continue
            ch = Change(name, "not_scanned", {"digest": (old[name].digest, None), "scan": (None, why)},
                        ["not_scanned:" + why.split(":", 1)[0]])
            ch.accepted = name in approved
            out.append(ch)
            continue
        if name not in old:
            ch = Change(name, "added", {k: (None, v) for k, v in new[name].to_json().items()
                                        if v is not None}, ["new_tool"])
        else:
            ch = compare_entry(name, old[name], new[name])
        ch.accepted = bool(ch.needs) and name in approved
        out.append(ch)
    return out


def lock_text(entries: Mapping[str, LockEntry], *, generator: str) -> str:
    doc = {"lockVersion": LOCK_VERSION, "generator": generator,
           "tools": {n: e.to_json() for n, e in entries.items()}}
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def read_lock(path: str | os.PathLike[str]) -> dict[str, LockEntry]:
    raw = read_capped(path, LOCK_BYTES, what="lock file")
    doc = parse_json(raw, what="lock file")
    if not isinstance(doc, dict) or doc.get("lockVersion") != LOCK_VERSION or \
            not isinstance(doc.get("tools"), dict):
        raise MalformedInputError(f"not an atip-trust lock file (expected lockVersion {LOCK_VERSION} "
                                  "and a tools object)", path=os.fspath(path))
    return {str(n): LockEntry.from_json(e, f"$.tools.{n}") for n, e in doc["tools"].items()}


def write_lock(path: str | os.PathLike[str], entries: Mapping[str, LockEntry], *, generator: str) -> None:
    """Replace the lock file atomically (a temporary file beside it, fsync, rename)."""
    target = os.fspath(path)
    try:
        write_atomic(target, lock_text(entries, generator=generator).encode("utf-8"), mode=0o644,
                     durable=True, prefix=".atip-trust.lock.")
    except OSError as err:
        raise ArtifactAccessError(f"cannot write the lock file: {err.strerror or err}", path=target) from err

__all__ = ["Change", "GATED_EFFECTS", "LOCK_FILE", "LockEntry", "compare", "compare_entry",
           "entries_of", "lock_text", "read_lock", "unscanned", "write_lock"]
