"""``atip-trust policy install --org FILE``: put an org policy, with its signature files, where the CLI reads it.

The CLI reads one standard org policy (``load.standard_org_policy_path``: ``/etc/atip-trust/org-policy.json``
on Linux); a policy copied anywhere else, or under another name, is not read and nothing says so. So
nobody types that path: this copies

* ``FILE`` to the standard path,
* the companions ``policy sign`` and the admin put beside it — ``FILE.signers.json``, ``FILE.sig.json``,
  ``FILE.sigstore.json`` (policy/signed.py) — beside it under the standard name,
* and every file they name by a relative path (the signers' keys and trusted root; the policy's
  ``trust.publicKeys``, ``trust.trustedRoots`` and ``trust.verifiers`` keys), at the same relative place:
  the copies read exactly as the originals did. A path that climbs out of FILE's folder (``..``) is
  refused; an absolute one is left where it is.

Before anything is written the release is checked where it is: it must load as a policy, and when it
has a signers file, verify against it (the signature over its exact bytes: ``signed.verify_signature``).
A machine that already requires a signed org policy (a signers file at the standard path) is not given an
unsigned one, nor a release older than the serial it accepted (the rollback guard would refuse it). Files are written 0644 and folders 0755, each file atomically, by the user running it —
root under ``sudo``, which the loader's owner check expects; a folder on the way that group or others can
write is refused. The order (anchors, signers, signatures, policy) means a reader in between is refused
(exit 2), never given a policy without the check its signers file asks for. A signature the new release
does not have is removed. Last, the installed policy is loaded exactly as ``admit`` loads it.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from atip_trust._base.files import exists, owner_problem, read_capped, write_atomic
from atip_trust._base.limits import LIMITS
from atip_trust._base.record import Record
from atip_trust.errors import EnvironmentFailure, PolicyError, UsageError
from atip_trust.policy import load, signed

if TYPE_CHECKING:
    from typing import Any

FILE_MODE, DIR_MODE = 0o644, 0o755


class Installed(Record):
    """What ``install_org`` wrote: (source, destination) pairs in order, what it removed, the policy's
    serial when it is signed (None: unsigned), and the path the CLI reads."""

    path: str
    copies: tuple[tuple[str, str], ...]
    removed: tuple[str, ...]
    serial: int | None

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "files": [{"from": s, "to": d, "mode": f"{FILE_MODE:04o}"} for s, d in self.copies],
                "removed": list(self.removed), "signed": self.serial is not None, "serial": self.serial}


def _anchor_paths(doc: Any) -> list[str]:
    """The files an org policy names by path (load.py ``_check_anchor_files`` reads the same keys)."""
    trust = doc.get("trust") if isinstance(doc, dict) else None
    if not isinstance(trust, dict):
        return []
    named = [k.get("path") for k in trust.get("publicKeys", ()) if isinstance(k, dict)]
    named += [r.get("path") for r in trust.get("trustedRoots", ()) if isinstance(r, dict)]
    named += [v.get("publicKey") for v in trust.get("verifiers", ()) if isinstance(v, dict)]
    return [p for p in named if isinstance(p, str) and p]


def _beside(src_dir: str, dest_dir: str, named: str, what: str) -> tuple[str, str] | None:
    """(source, destination) for a file named relative to the policy's folder; None for an absolute one."""
    if os.path.isabs(named):
        if not os.path.isfile(named):
            raise UsageError(f"{what} {named} does not exist", path=named)
        return None
    rel = os.path.normpath(named)
    if rel == ".." or rel.startswith(".." + os.sep):
        raise UsageError(f"{what} {named} lies outside the policy's folder: keep it beside the policy "
                         "(or name it by an absolute path)", path=named)
    return os.path.join(src_dir, rel), os.path.join(dest_dir, rel)


def plan(source: str, dest: str) -> list[tuple[str, str, str]]:
    """(role, source, destination) of every file to copy, in the order they are written."""
    src_dir, dest_dir = os.path.dirname(os.path.abspath(source)), os.path.dirname(dest)
    layer = load.load_layer(source, source="local", cache=False)
    anchors: list[tuple[str, str, str]] = []
    for named in [*signed.signer_files(source), *_anchor_paths(layer.document)]:
        pair = _beside(src_dir, dest_dir, named, "the file")
        if pair is not None and pair not in [(s, d) for _, s, d in anchors]:
            anchors.append(("anchor", *pair))
    companions = [(role, source + suffix, dest + suffix) for role, suffix in (
        ("signers", signed.SIGNERS_SUFFIX), ("signature", signed.SIGNATURE_SUFFIX),
        ("signature", signed.BUNDLE_SUFFIX)) if exists(source + suffix, what=f"policy {role} file", error=PolicyError)]
    for role, src, _dst in [*anchors, *companions]:
        _not_linked(src_dir, src, role)
    return [*anchors, *companions, ("policy", source, dest)]


def _not_linked(src_dir: str, src: str, role: str) -> None:
    """Refuse a release file reached through a link below the release's folder. The install runs as
    root and publishes each copy 0644: ``keys/k.pem -> /etc/shadow`` in a folder someone else prepared
    would be read as root and handed to every user (the policy file itself is the one the admin named)."""
    expected = os.path.join(os.path.realpath(src_dir), os.path.relpath(src, src_dir))
    if os.path.realpath(src) != os.path.normpath(expected):
        raise UsageError(f"the policy {role} file {src} is a link (or lies under one) to {os.path.realpath(src)}: "
                         "put the file itself in the release folder; nothing was written", path=src)


def _safe_dir(path: str) -> None:
    """Create ``path`` 0755 if needed; refuse a folder on the way others can write (they could swap files)."""
    missing, here = [], os.path.abspath(path)
    while not os.path.lexists(here):
        missing.append(here)
        here = os.path.dirname(here)
    try:
        for folder in reversed(missing):
            os.mkdir(folder)
            os.chmod(folder, DIR_MODE)  # not the umask's choice: every user must read the org policy
    except OSError as err:
        raise EnvironmentFailure(f"cannot create {path}: {err.strerror or err}{_as_root(err)}", path=path) from err
    here = os.path.realpath(path)
    while True:
        problem = owner_problem(os.stat(here), sticky_ok=here != os.path.realpath(path))
        if problem is not None:
            raise EnvironmentFailure(f"{here} is {problem}: whoever can write it can replace the org policy",
                                     path=here)
        if here == os.path.dirname(here):
            return
        here = os.path.dirname(here)


def _as_root(err: OSError) -> str:
    return " (install the org policy as root: sudo atip-trust policy install --org FILE)" \
        if isinstance(err, PermissionError) else ""


def install_org(source: str, dest: str | None = None) -> Installed:
    """Check the release ``source`` and copy it, with its companions, to ``dest`` (default: the standard
    org policy path); the installed policy is then loaded as the CLI loads it."""
    dest = dest or load.standard_org_policy_path()
    if dest is None:
        raise UsageError("this platform has no standard org policy path: name the file with "
                         f"{load.ORG_POLICY_ENV} or --org-policy instead")
    files = plan(source, dest)
    data = read_capped(source, LIMITS.policy_bytes, what="policy")
    serial = signed.verify_signature(source, data)
    if serial is None and exists(signed.signers_path(dest), what="org policy signers file", error=PolicyError):
        raise PolicyError(f"this machine requires a signed org policy ({signed.signers_path(dest)} names its "
                          f"signers) and {source} has no {os.path.basename(signed.signers_path(source))}: sign "
                          "the release, or remove that signers file first", path=source)
    if serial is not None and serial < (high := signed.accepted_serial(dest)):
        raise PolicyError(f"{source} is serial {serial}, older than serial {high} this machine already accepted "
                          f"from {dest}: every admission would refuse it (give the release a higher "
                          "\"serial\")", path=source)
    contents = [(role, src, dst, read_capped(src, LIMITS.policy_bytes, what=f"policy {role} file"))
                for role, src, dst in files]
    written = []
    try:
        for _role, src, dst, raw in contents:
            _safe_dir(os.path.dirname(dst))
            write_atomic(dst, raw, mode=FILE_MODE, durable=True, prefix=".atip-trust-")
            written.append((src, dst))
        stale = [dest + s for s in (signed.SIGNATURE_SUFFIX, signed.BUNDLE_SUFFIX)
                 if (dest + s) not in [d for _, _, d, _ in contents] and os.path.lexists(dest + s)]
        for path in stale:
            os.unlink(path)
    except OSError as err:
        raise EnvironmentFailure(f"cannot write {err.filename or dest}: {err.strerror or err}{_as_root(err)}",
                                 path=str(err.filename or dest)) from err
    load.load_layer(dest, source="org", cache=False)  # as admit reads it: owner, mode, signature, serial
    return Installed(dest, tuple(written), tuple(stale), serial)


__all__ = ["DIR_MODE", "FILE_MODE", "Installed", "install_org", "plan"]
