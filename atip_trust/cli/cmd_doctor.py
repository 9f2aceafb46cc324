"""``atip-trust doctor``: one screen that says what protects this machine and what does not.

It reads what the CLI reads, the way it reads it, and changes nothing but what an admission changes too
(loading a signed org policy records its serial, policy/signed.py):

* **org policy**: the standard file (``load.standard_org_policy_path``) and ``ATIP_TRUST_ORG_POLICY``,
  each loaded as ``admit`` loads it (owner, mode, signature, rollback), its signature state and serial;
  and the look-alikes beside the standard file that are *not* read (``/etc/atip-trust/policy.json`` next
  to ``org-policy.json``: the name an earlier docs/signed-policy.md gave);
* **trusted root**: the root an admission without flags verifies with, and since when it is known
  current (policy/constraints.py ``root_since``), against ``trust.rootMaxAge``; and a public-good or
  staging TUF store that is not used because it does not verify from the shipped TUF root (a warning);
* **agent hooks**: each agent's user and project settings (agents/install.py): an atip-trust hook entry,
  its program's absolute path, whether that program is there, and whether a failure blocks;
* **audit log**: whether the file admissions write to can be written;
* **PATH**: the entries ``scan`` and hook resolution skip, and why;
* **agent-tools**: metadata files in the XDG trees that cannot count as they are (no bundle, or a
  system-wide file others can write).

Exit 1 when a protection the configuration asks for is not in force (a hook that fails open or points
at a missing program, an org policy that is refused, one under a name the CLI does not read, a required
audit log that cannot be written, a trusted root older than the policy allows); 0 otherwise; 2 when the
check itself could not run. ``--format json`` for fleets.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import TYPE_CHECKING, Any

from atip_trust._base.record import Record, field
from atip_trust.admission import agent_tools
from atip_trust.admission.admit import load_admission_policy
from atip_trust.agents import install
from atip_trust.agents.formats import AGENTS
from atip_trust.cli import hook_install
from atip_trust.cli.common import EXIT_FAIL, EXIT_OK, add_common_options
from atip_trust.cli.output import dump_json, one_line
from atip_trust.discovery.scan import scan_directories
from atip_trust.errors import AtipTrustError
from atip_trust.execution import sandbox
from atip_trust.policy import constraints, load, signed
from atip_trust.state import audit, broken, tufroot

if TYPE_CHECKING:
    from datetime import datetime

    from atip_trust.signature.trustroot import TrustRoot

#: ``ok``: in force; ``problem``: configured but not in force (exit 1); ``warning``: worth a look;
#: ``none``: nothing configured here.
STATUSES = ("ok", "problem", "warning", "none")
_COMPANIONS = (signed.SIGNERS_SUFFIX, signed.SIGNATURE_SUFFIX, signed.BUNDLE_SUFFIX)


class Finding(Record):
    area: str
    status: str
    message: str
    path: str | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"area": self.area, "status": self.status, "message": self.message, "path": self.path,
                **({"details": self.details} if self.details else {})}


def register(sub: Any) -> None:
    p = add_common_options(sub.add_parser(
        "doctor", help="say what protects this machine and what does not (org policy, hooks, root, audit, PATH)",
        description="Check what the CLI reads: the org policy (and look-alike files it does not read), its "
        "signature and serial, the trusted root and its age, each agent's hook settings (absolute path, "
        "executable, fail-closed), the audit log and the PATH entries a scan skips. Exit 1 when a "
        "protection that is configured is not in force."))
    p.add_argument("--project", metavar="DIR", help="the project whose agent settings are checked too "
                   "(default: the current folder)")
    p.set_defaults(func=run)


def _org_file(path: str, how: str) -> tuple[Finding, Any]:
    """One org policy, loaded as admit loads it."""
    try:
        layer = load.load_layer(path, source="org", cache=False)
    except AtipTrustError as err:
        return Finding("org policy", "problem", f"{path} ({how}) is read and refused, so every admission is "
                       f"denied (exit 2): {err.message}", path), None
    if os.path.lexists(signed.signers_path(path)):
        serial = layer.document.get("serial", 0)
        state = f"signed (its signers: {signed.signers_path(path)}), signature verified, serial {serial}"
    else:
        state = f"unsigned: its ownership alone protects it (no {os.path.basename(signed.signers_path(path))})"
    return Finding("org policy", "ok", f"{path} ({how}) is read: {state}", path), layer


def _look_alikes(std: str, read: bool) -> list[Finding]:
    """JSON files beside the standard org policy that the CLI does not read."""
    folder = os.path.dirname(std)
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    ours = {os.path.basename(std) + s for s in ("", *_COMPANIONS)}
    out = []
    for name in names:
        if name in ours or not name.endswith(".json") or name.startswith("."):
            continue
        base = next((name[:-len(s)] for s in _COMPANIONS if name.endswith(s)), name)
        if base != name and base in names:
            continue  # a companion of a look-alike listed on its own
        out.append(Finding(
            "org policy", "warning" if read else "problem",
            f"{os.path.join(folder, name)} is not read: the CLI reads only {std} (install a release there with "
            f"`atip-trust policy install --org FILE`)", os.path.join(folder, name)))
    return out


def org_policy() -> list[Finding]:
    found: list[Finding] = []
    std = load.standard_org_policy_path()
    if std is not None:
        if os.path.lexists(std):
            found.append(_org_file(std, "the standard org policy")[0])
        else:
            found.append(Finding("org policy", "none", f"no org policy at {std}: only local policies apply", std))
        found += _look_alikes(std, os.path.lexists(std))
    env = os.environ.get(load.ORG_POLICY_ENV)
    if env:
        found.append(_org_file(env, load.ORG_POLICY_ENV)[0])
    return found


def _stores() -> list[Finding]:
    """A public-good or staging TUF store that exists but does not verify from the TUF root shipped with
    the package is not used (state/tufroot.py): the package's own root is, which may be older."""
    found = []
    for instance, url in tufroot.INSTANCE_URLS.items():
        why = tufroot.why_not(url)
        if why is not None:
            found.append(Finding("trusted root", "warning", f"the {instance} TUF store is not used: {why}; the root "
                                 "shipped with the sigstore package is used instead", path=tufroot.store_dir(url)))
    return found


def trusted_root(policy: Any) -> list[Finding]:
    stores = _stores()
    try:
        root = constraints.choose_trusted_root(policy, None, False, deferred=True)
        when, how = constraints.root_since(root)
    except AtipTrustError as err:
        return [*stores, Finding("trusted root", "problem", f"the trusted root cannot be read: {err.message}")]
    return stores + _root_age(policy, root, when, how)


def _root_age(policy: Any, root: TrustRoot, when: datetime | None, how: str) -> list[Finding]:
    if when is None:
        return [Finding("trusted root", "warning", f"{root.name}: its age cannot be told")]
    days = int((time.time() - when.timestamp()) // 86400)
    limit = constraints.root_max_age(policy)
    text = f"{root.name} ({root.digest}): {days} days old ({how} {when.date().isoformat()})"
    if limit is not None and time.time() - when.timestamp() > limit[0]:
        return [Finding("trusted root", "problem", f"{text}, over policy trust.rootMaxAge {limit[1]}: admissions "
                        "are refused; run `atip-trust trust-root update`")]
    return [Finding("trusted root", "ok", text + ("" if limit is None else f", within trust.rootMaxAge {limit[1]}"))]


def agent_hooks(project: str | None) -> list[Finding]:
    found = []
    this = " ".join(hook_install.program(None))
    for agent in AGENTS:
        paths = install.settings_paths(agent, project)
        entries = []
        for path in paths:
            if install.hooks_disabled(agent, path):
                found.append(Finding("agent hooks", "problem", f"{agent}: {path} says disableAllHooks: true, so no "
                                     "hook runs, atip-trust's included", path))
            try:
                entries += install.find_hooks(agent, path)
            except AtipTrustError as err:
                found.append(Finding("agent hooks", "warning", f"{agent}: cannot read {path}: {err.message}", path))
        for e in entries:
            if e.fail_closed and e.kind == "http":
                found.append(Finding("agent hooks", "ok", f"{agent}: {e.path} posts to the service at {e.command} "
                                     "(loopback, token variable allowed); a hook that cannot be answered blocks",
                                     e.path, e.to_json()))
            elif e.fail_closed and e.program != this:
                found.append(Finding("agent hooks", "warning", f"{agent}: {e.path} runs {e.program}, which is "
                                     f"there and blocks when it cannot answer, but is not the atip-trust running "
                                     f"this check ({this}): is it the one you meant?", e.path, e.to_json()))
            elif e.fail_closed:
                found.append(Finding("agent hooks", "ok", f"{agent}: {e.path} runs {e.program}, which is there; "
                                     "a hook that cannot answer blocks", e.path, e.to_json()))
            else:
                fix = f"atip-trust hook install {agent}{' --http URL' if e.kind == 'http' else ''}"
                found.append(Finding("agent hooks", "problem", f"{agent}: {e.path}: " + "; ".join(e.problems) +
                                     f" (fix: {fix})", e.path, e.to_json()))
        if not entries:
            found.append(Finding("agent hooks", "none", f"{agent}: no atip-trust hook in {' or '.join(paths[:2])}"))
    return found


def _writable(path: str) -> str | None:
    """Why an append to ``path`` would fail (None: it would not): the file, or the nearest folder that exists."""
    here = path
    while not os.path.lexists(here):
        parent = os.path.dirname(here)
        if parent == here:
            break
        here = parent
    if here == path and not os.path.isfile(path):
        return f"{path} is not a regular file"
    if here != path and not os.path.isdir(here):
        return f"{here} is not a folder"
    if not os.access(here, os.W_OK | (os.X_OK if os.path.isdir(here) else 0)):
        return f"{here} is not writable by this user"
    return None


def audit_log(policy: Any) -> list[Finding]:
    path = (policy.audit_log if policy is not None else None) or audit.default_audit_path()
    required = bool(policy is not None and policy.audit_required)
    why = _writable(os.path.abspath(path))
    if why is None:
        return [Finding("audit log", "ok", f"{path} can be written" + (" (required by the org policy)"
                                                                       if required else ""), path)]
    return [Finding("audit log", "problem" if required else "warning",
                    f"{path} cannot be written ({why}): " + ("every admission is refused (audit.required)"
                                                            if required else "admissions warn and leave no line"),
                    path)]


def path_entries() -> list[Finding]:
    entries = os.environ.get("PATH", "").split(os.pathsep)
    skipped = [s for s in scan_directories().skipped if s.path in entries]
    found = [Finding("PATH", "none" if s.reason == "duplicate_directory" else "warning",
                     f"PATH entry {s.path or '(empty)'} is skipped by scan and hooks: {s.message}", s.path,
                     {"reason": s.reason}) for s in skipped]
    return found or [Finding("PATH", "ok", f"all {len(entries)} PATH entries are scanned")]


def findings(project: str | None = None) -> list[Finding]:
    out = org_policy()
    try:
        policy = load_admission_policy(None, cache=False)
    except AtipTrustError as err:
        policy = None
        out.append(Finding("policy", "problem", f"the policy an admission uses does not load: {err.message}"))
    out += trusted_root(policy) + agent_hooks(project) + audit_log(policy) + path_entries() + agent_tools_tree()
    return out + boundary(policy)


def boundary(policy: Any) -> list[Finding]:
    """The run-time boundary (docs/sandbox.md): can this kernel build one, does policy need it, and which
    digests are marked for having broken their declaration."""
    mode = policy.exec_settings.sandbox if policy is not None else "preferred"
    abi, netns = sandbox.landlock_abi(), sandbox.netns_available()
    missing = [f for f, ok in (("Landlock ABI >= 3", abi >= 3), ("a private network namespace", netns)) if not ok]
    details = {"mode": mode, "landlock_abi": abi, "network_namespace": netns}
    if mode == "off":
        out = [Finding("sandbox", "none", "exec.sandbox is off: tools run without the boundary their "
                       "verified effects would give", details=details)]
    elif not missing:
        out = [Finding("sandbox", "ok", f"exec.sandbox {mode}: Landlock ABI {abi} and private network "
                       "namespaces are available", details=details)]
    else:
        out = [Finding("sandbox", "problem" if mode == "required" else "warning",
                       f"exec.sandbox {mode}, and this system lacks {' and '.join(missing)}: "
                       + ("confined tools are refused" if mode == "required" else "tools run unconfined"),
                       details=details)]
    marks = broken.all_marks()
    if marks:
        out.append(Finding("sandbox", "warning", f"{len(marks)} digest(s) broke their declared effects and are "
                           "denied until cleared ('atip-trust cache list-broken')", broken.marks_dir(),
                           {"digests": [m.get("digest") for m in marks]}))
    return out


def agent_tools_tree() -> list[Finding]:
    """RFC §4.2's tree and RFC v0.3 §4's system-wide ones: files present that cannot count as they are
    (admission/agent_tools.py ``tree_notes``)."""
    tree = agent_tools.AgentTree.default()
    notes = [Finding("agent-tools", status, message, path)
             for status, message, path in agent_tools.tree_notes(tree)]
    roots = ", ".join(r for r in (tree.data, tree.config, *tree.system) if os.path.isdir(r)) or "none present"
    return notes or [Finding("agent-tools", "ok", f"every metadata file in the agent-tools trees ({roots}) has "
                             "its bundle and sits where only root or you can write")]


_MARK = {"ok": "ok     ", "problem": "PROBLEM", "warning": "warning", "none": "-      "}


def run(args: argparse.Namespace) -> int:
    found = findings(args.project)
    problems = [f for f in found if f.status == "problem"]
    code = EXIT_FAIL if problems else EXIT_OK
    if args.format == "json":
        dump_json({"command": "doctor", "ok": not problems, "exit_code": code,
                   "findings": [f.to_json() for f in found]})
        return code
    area = None
    for f in found:
        if f.area != area:
            area = f.area
            sys.stdout.write(f"{area}:\n")
        sys.stdout.write(f"  {_MARK[f.status]} {one_line(f.message)}\n")
    sys.stdout.write(one_line(f"{len(problems)} problem(s): a protection that is configured is not in force")
                     + "\n" if problems else "no problems: what is configured is in force\n")
    return code


__all__ = ["Finding", "findings", "register", "run"]
