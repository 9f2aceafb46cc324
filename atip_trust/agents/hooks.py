"""Agent pre-tool hooks: the shell line an agent is about to run, judged program by program.

Coding agents match command *strings* against their rules; none checks which binary a name runs or who
signed it. ``atip-trust hook AGENT`` is that check. The line is parsed with bash's grammar
(shell_model.py); every program it can execute is resolved through PATH only
(``facts.artifact.which``), opened once and admitted with its words (execution/exec.admit_file, so
capability gates see ``repo delete``). A line the model cannot prove is a question, never an allow.

Each program's answer is one of four, and the line's is the strictest (deny > ask > passthrough >
allow; formats.ORDER):

* **allow** only when admission allows it *and* its words are all known (no expansion, no words a
  runner appends), and no time-of-check gap is open: when something earlier in the line can write files,
  a program file the user can change (or git, whose configuration and hooks are files) is asked instead;
* **passthrough** (the agent's own permissions decide) for a program the policy does not name, whose
  effects no verified metadata declares, and whose admission failed only for generic reasons (no rule,
  unknown effects, trust below a minimum); ``hooks.unlisted`` makes that ``ask`` or ``deny``;
* otherwise admission's ask or deny.

What a program is comes from its bytes, not its name (agents/identity.py: a copy of ``env`` called
``wrap`` is read as env, a link to ``gh`` is admitted as gh, a copy of a tool ``registry.json`` pins is that
tool; and, known once it is admitted, verified ATIP metadata found by its digest that names another
program: ``_claimed``). A name gained adds rules and never removes one: the deny and ask rules of the
typed name and of every other name the bytes have still apply (``_known_as``). git is refused a repository
other than the working directory's (agents/git_repository.py); deny and ask rules also see the options as
the program reads them (agents/spellings.py: ``-fu`` is ``-f -u``; by its verified declaration of its
options where it has one, agents/declared.py). Issue 32.

``--pin`` (agents that may rewrite the command: formats.CAN_REWRITE) rewrites each program of an
allowed line to ``atip-trust exec --expect-digest sha256:<hex> -- /abs/path ...``, so what runs is the
bytes that were admitted; a line whose programs cannot all be rewritten (one run by a runner) is asked.
"""

from __future__ import annotations

import os
import re
import stat
from typing import TYPE_CHECKING

from atip_trust._base.lazy import lazy_import
from atip_trust._base.record import Record, replace
from atip_trust.admission.admit import Admission, write_audit
from atip_trust.admission.options import AdmitOptions
from atip_trust.agents import identity, spellings
from atip_trust.agents.bash_syntax import OverBudget
from atip_trust.agents.declared import declaration_of
from atip_trust.agents.formats import ORDER, HookAnswer, HookRequest, parse_request, render, render_error
from atip_trust.agents.git_repository import check_repository
from atip_trust.agents.runners import RUNNERS, git_subcommand
from atip_trust.agents.shell_model import (
    Program,
    Unprovable,
    programs,
    programs_of_argv,
    reads_state,
    visible_programs,
)
from atip_trust.agents.words import Word
from atip_trust.errors import ArtifactAccessError, AtipTrustError
from atip_trust.execution.env import exec_environment
from atip_trust.execution.exec import (
    ExecRefused,
    Opened,
    admit_file,
    interpreter_refusal,
    pinned_argv,
    script_interpreter,
)
from atip_trust.facts.artifact import which
from atip_trust.facts.report import TrustLevel
from atip_trust.policy.model import Policy

if TYPE_CHECKING:
    import shlex
else:
    shlex = lazy_import("shlex")  # only to quote words: a --pin rewrite, or a command given as words

#: Reason codes that say only "nothing in the policy vouches for this program": a program the policy
#: does not name, denied or asked for these alone, gets the agent's own permissions (passthrough).
GENERIC_REASONS = frozenset({
    "NO_MATCHING_RULE", "CAPABILITY_GATED", "EFFECT_RESTRICTED", "TRUST_BELOW_MINIMUM", "PROVENANCE_REQUIRED",
    "SLSA_LEVEL_TOO_LOW", "SOURCE_NOT_ALLOWED", "METADATA_SOURCE_NOT_ALLOWED", "SIGNATURE_THRESHOLD",
    "EFFECTS_UNKNOWN", "EFFECTS_UNVERIFIED", "NO_SIGNERS_IN_POLICY", "SIGNER_NOT_IN_POLICY", "TRUST_NOT_VERIFIED",
})
#: How many programs of an unprovable line are still admitted (each is one admission).
MAX_VISIBLE = 16


class Part(Record):
    """One program of the line and what the gate said about it."""

    argv: tuple[str, ...]
    behavior: str
    reason: str
    #: The file admitted and its sha256 (for --pin), when one was.
    path: str | None = None
    digest: str | None = None
    program: Program | None = None
    #: Decided by ``hooks.unlisted`` (the policy names no rule for it), not by its admission.
    unlisted: bool = False


class Verdict(Record):
    """The answer for the whole line: the strictest of its parts, and the rewritten line (--pin)."""

    behavior: str
    reason: str
    parts: tuple[Part, ...] = ()
    rewritten: str | None = None


class Options(Record):
    """What every admission of one hook answer is given (the hook's flags)."""

    #: How each program is admitted (``shim_dir``, ``trusted_root``, ``staging``, ``audit``, ``audit_log``,
    #: ``cache``); each admission is interactive (the agent asks its user) under the program's own name.
    admit: AdmitOptions = AdmitOptions()
    #: Sigstore bundles by digest (``DIR/sha256/<hex>.sigstore.json``) for every program and interpreter.
    bundle_dir: str | None = None
    #: PATH as the agent's shell has it (None: this process's).
    path_env: str | None = None
    #: ``--pin``: the words that run atip-trust (before ``exec``), or None when not pinning.
    pin: tuple[str, ...] | None = None
    #: ``exec``'s options for a pinned program: the hook's own policy and evidence flags.
    pin_options: tuple[str, ...] = ()


def names_program(policy: Policy, name: str) -> bool:
    """True when a permission rule, a tool entry or a delegation list of ``policy`` names ``name``
    (a rule whose first word is a pattern counts when the pattern matches it; a bare ``Bash`` names
    every program)."""
    for rule in (*policy.deny_rules, *policy.ask_rules, *policy.allow_rules):
        if rule.kind == "any":
            return True
        if rule.kind == "tokens":
            if rule.tokens and name in rule.tokens[0]:
                return True
            continue
        first = rule.first_word if rule.first_word is not None else rule.pattern.split(" ", 1)[0]
        if first.strip("*") and re.fullmatch(".*".join(re.escape(p) for p in first.split("*")),
                                             name) is not None:
            return True
        if first.rsplit("/", 1)[-1] == name:
            return True
    tools = [*policy.tool_allow, *policy.tool_deny, *(t for _, allow in policy.tool_allowlists for t in allow)]
    return any(t.name == name for t in tools) or any(name in names for _, names in policy.delegation_allowlists)


def names_none(policy: Policy) -> bool:
    """The policy names no program at all (no permission rule, tool entry or delegation list), as the
    shipped default: its only opinions are on a program's own evidence (a tampered file, verified
    effects), so a line whose programs cannot all be known is still none of its business."""
    return not (policy.deny_rules or policy.ask_rules or policy.allow_rules or policy.tool_allow
                or policy.tool_deny or policy.tool_allowlists or policy.delegation_allowlists)


def _unlisted(program: Program, adm: Admission, policy: Policy) -> bool:
    """The policy has no opinion on this program (module docstring, passthrough)."""
    return (adm.report.trust_level != TrustLevel.COMPROMISED and not adm.effects_verified
            and all(r.code in GENERIC_REASONS for r in adm.decision.reasons)
            and not names_program(policy, os.path.basename(program.argv[0])))


def changeable(path: str) -> bool:
    """The current user can change the file at ``path``: it, or a directory on its path (as written or
    with links resolved), is writable, so the file can be rewritten or replaced."""
    for p in dict.fromkeys((os.path.abspath(path), os.path.realpath(path))):
        if os.access(p, os.W_OK):
            return True
        d = os.path.dirname(p)
        while True:
            if os.access(d, os.W_OK):
                return True
            parent = os.path.dirname(d)
            if parent == d:
                break
            d = parent
    return False


def _cap(program: Program, path: str, pinned: bool) -> str | None:
    """Why an allowed program is only asked (module docstring), or None. A pinned line (``--pin``) runs
    each program through ``exec --expect-digest``, which refuses other bytes: no time-of-check gap."""
    if not program.literal:
        return ("the words it gets are not all known before it runs (an expansion, or input a runner "
                "appends), so they were not all checked")
    if program.after_writer and program.state_dependent:
        return ("it reads files that choose what it runs (git's configuration and hooks, a login shell's "
                "start-up files), which an earlier part of the line can write")
    if program.after_writer and not pinned and changeable(path):
        return (f"an earlier part of the line can write files and {path} is a file you can change: what "
                "runs may not be what was checked")
    return None


def _shadow(program: Program, found: str, options: Options, cwd: str | None) -> str | None:
    """Why a program found on PATH is only asked after a writer although its own file cannot change: a
    PATH folder searched before its own is one the user can change, so a file an earlier part makes
    there runs instead (``cp ./x ~/.local/bin/ls && ls``: found by tests/attacks/test_shell_redteam_oracle.py);
    None when there is none, the line is pinned or nothing before it can write."""
    if "/" in program.argv[0] or not program.after_writer or options.pin is not None:
        return None
    search = program.search if program.search is not None else options.path_env
    own = os.path.dirname(os.path.abspath(found))
    for entry in (os.environ.get("PATH", os.defpath) if search is None else search).split(os.pathsep):
        places = [entry] if os.path.isabs(entry) else [os.path.join(cwd or "", entry or ".")]
        if entry.startswith("~"):
            places.append(os.path.expanduser(entry))  # as bash reads it (_tilde_entry)
        if os.path.normpath(places[0]) == own:
            return None
        changed = next((p for p in places if os.path.isabs(p) and changeable(p)), None)
        if changed is not None or not os.path.isabs(places[0]):
            return (f"an earlier part of the line can write files and {changed or entry!r}, searched on PATH "
                    f"before {own}, is a folder you can change: a program made there would run instead")
    return None


def locate(name: str, path_env: str | None, cwd: str | None, moved: bool) -> str:
    """The file bash runs for the bare ``name``: ``ArtifactAccessError`` when there is none,
    :class:`Unprovable` when a relative entry that cannot be placed comes before it.

    A shell takes a relative PATH entry (``node_modules/.bin``, ``.``, an empty entry) relative to its
    *current* directory (POSIX XCU 2.9.1.1). The hook runs in a directory of its own, so such an entry
    is read against the ``cwd`` the hook input names, where the line starts (issue 32, item 6). After a
    ``cd`` (or ``env -C``) the line is elsewhere, and without a ``cwd`` nobody knows where it is: then a
    relative entry the search reaches before it finds the program makes the name unprovable.
    ``facts.artifact.which`` searches the entries made absolute."""
    entries = (os.environ.get("PATH", os.defpath) if path_env is None else path_env).split(os.pathsep)
    placed: list[str] = []
    for entry in entries:
        if os.path.isabs(entry):
            placed.append(entry)
            continue
        if entry.startswith("~"):
            _tilde_entry(entry, name, placed)
        if moved or cwd is None or not os.path.isabs(cwd):
            where = ("an earlier 'cd' (or a runner) changed the directory" if moved
                     else "the hook input names no absolute cwd")
            try:
                return which(name, os.pathsep.join(placed))
            except ArtifactAccessError:  # not found before it: the relative entry decides
                raise Unprovable(f"PATH has the relative entry {entry or '(empty)'!r} before any {name!r} and "
                                 f"{where}: which file runs is not known") from None
        placed.append(os.path.normpath(os.path.join(cwd, entry or ".")))
    return which(name, os.pathsep.join(placed))


def _tilde_entry(entry: str, name: str, placed: list[str]) -> None:
    """A PATH entry starting with ``~``: bash (outside POSIX mode) expands it as it searches (findcmd.c),
    env, xargs and find's execvp(3) take it as a folder named ``~``. Unprovable when its expansion (with
    the hook's HOME, which is the agent's) holds ``name`` and no earlier entry does (found by
    tests/attacks/test_shell_redteam_oracle.py: ``PATH=~/bin:...`` written in quotes)."""
    home = os.path.join(os.path.expanduser(entry), name)
    if not (os.path.isfile(home) and os.access(home, os.X_OK)):
        return
    try:
        which(name, os.pathsep.join(placed))
    except ArtifactAccessError:
        raise Unprovable(f"PATH has the entry {entry!r} before any other {name!r}: bash reads it as "
                         f"{os.path.dirname(home)}, other programs as a folder named {entry!r}") from None


def _locate(program: Program, cwd: str | None, path_env: str | None) -> str:
    name = program.argv[0]
    if "/" not in name:
        return _own_file(locate(name, program.search if program.search is not None else path_env, cwd,
                                program.moved))
    if os.path.isabs(name):
        return _own_file(name)
    if program.moved:
        raise Unprovable(f"{name!r} is relative to a directory an earlier 'cd' (or a runner) changed")
    if cwd is None or not os.path.isabs(cwd):
        raise Unprovable(f"{name!r} is relative and the hook input names no absolute cwd")
    return _own_file(os.path.join(cwd, name))


#: Where a path names a process's descriptors (``/dev/fd/3``, ``/dev/stdin``, ``/proc/self/fd/3``):
#: the shell that runs the line opens its own, which the line chooses (``/dev/fd/3 3< tools/hub``); the
#: hook would open its own instead.
_PROCESS_FILES = ("/dev/fd", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/proc")


def _own_file(found: str) -> str:
    """``found``, or Unprovable when it is not a file the hook reads as the line's shell would: a
    descriptor or process file (also through a link: ``tools/fd3 -> /dev/fd/3``) or not a regular file
    (a FIFO yields other bytes to each reader). Found by tests/attacks/test_shell_redteam_oracle.py:
    ``bash /dev/stdin repo delete x < tools/hub`` ran gh's repo delete, passed through."""
    for path in (os.path.abspath(found), os.path.realpath(found)):
        if any(path == d or path.startswith(d + "/") for d in _PROCESS_FILES):
            raise Unprovable(f"{found!r} is a descriptor or a process's file: the shell opens its own, "
                             "which the line chooses, not the one the hook would read")
    try:
        regular = stat.S_ISREG(os.stat(found).st_mode)
    except OSError:
        return found  # not there: the caller's admission says so
    if not regular:
        raise Unprovable(f"{found!r} is not a regular file: what the shell reads from it is not known")
    return found


def _script_refusal(opened: Opened, policy: Policy, options: Options) -> tuple[ExecRefused | None, str | None]:
    """A ``#!`` program runs its interpreter too: refused under ``exec.scripts: deny``, otherwise the
    interpreter is admitted as ``exec`` would (execution/exec.py), its own audit line written. Returns
    the refusal (or None) and the interpreter's file (None for a binary)."""
    try:
        planned = script_interpreter(opened, policy=policy, env=exec_environment(policy),
                                     options=options.admit, bundle_dir=options.bundle_dir)
    except ExecRefused as refused:
        return refused, None
    if planned is None:
        return None, None
    interp = planned[0]
    try:
        if options.admit.audit:
            write_audit(interp.admission)
        return interpreter_refusal(opened, interp), os.fspath(interp.found)
    finally:
        interp.art.close()


def _judge(program: Program, opened: Opened, policy: Policy, options: Options, cwd: str | None) -> Part:
    """One admitted program's part: admission's answer, then the hook's own rules (module docstring)."""
    adm = opened.admission
    line = " ".join(program.argv)
    digest = adm.report.digests.get("sha256")
    found = os.fspath(opened.found)
    refused, interpreter = _script_refusal(opened, policy, options) \
        if adm.behavior == "allow" and not program.script else (None, None)
    if refused is not None:
        return Part(program.argv, refused.behavior, f"{line}: {refused}", found, digest, program)
    level = adm.report.trust_level.name
    if adm.behavior == "allow":
        # The interpreter a script names runs too: a file the line can rewrite before it runs is the same
        # gap as the script's own (found by tests/attacks/test_shell_redteam_oracle.py).
        cap = _cap(program, found, options.pin is not None) or \
            (None if interpreter is None else _cap(program, interpreter, options.pin is not None)) or \
            _shadow(program, found, options, cwd)
        if cap is not None:
            return Part(program.argv, "ask", f"{line}: admitted ({level}) but {cap}", found, digest, program)
        signer = adm.report.signature.identity
        who = f", signed by {signer}" if signer else ""
        return Part(program.argv, "allow", f"{line}: allowed ({level}{who})", found, digest, program)
    why = "; ".join(f"{r.code}: {r.message}" for r in adm.decision.reasons[:3])
    if _unlisted(program, adm, policy):
        unlisted = policy.hooks_unlisted
        verdict = "no opinion, the agent's own permissions decide" if unlisted == "passthrough" else unlisted
        return Part(program.argv, unlisted, f"{line}: {verdict} ({level}): the policy names no rule for "
                    f"this program (hooks.unlisted); {why}", found, digest, program, unlisted=True)
    return Part(program.argv, adm.behavior, f"{line}: {adm.behavior} ({level}): {why}", found, digest, program)


def _as_read(part: Part, program: Program, policy: Policy, adm: Admission) -> Part:
    """``part``, made a denial or a question when a deny or ask rule matches the program's options as it
    reads them (agents/spellings.py; as its verified ATIP metadata declares them, agents/declared.py)."""
    if part.behavior == "deny":
        return part
    found = spellings.strictest_reading(policy, os.path.basename(program.argv[0]), program.argv,
                                        declaration_of(adm))
    if found is None or (found[0] == "ask" and part.behavior == "ask"):
        return part
    return replace(part, behavior=found[0], reason=f"{' '.join(program.argv)}: {found[1]}",
                   unlisted=False)  # a rule decided it, not hooks.unlisted (its audit line says so)


def _admit(program: Program, request: HookRequest, policy: Policy, options: Options, depth: int = 0,
           found: str | None = None, opened: Opened | None = None) -> Part:
    """One program's part; ``found``: the file, already located and identified, and ``opened``: its
    admission under that identity when it is already done (``_admit_as``)."""
    line = " ".join(program.argv)
    try:
        located = found is None
        also: frozenset[str] = frozenset()
        if found is None:
            found = _locate(program, request.cwd, options.path_env)
            ident = _identified(program, found, policy, options)
            refused = _pin_refused(program, found, ident)
            if refused is not None:
                return refused
            if program.script:
                program = _script_identity(program, ident)
            again, also = _reread(program, ident)
            if again is not None:
                return _admit_as(again, program, found, request, policy, options, depth, also=also)
        try:
            if os.path.basename(program.argv[0]) == "git":
                check_repository(program, request.cwd)
                _git_helpers(program, request, options)
        except BaseException:
            if opened is not None:  # an admission _claimed handed over: this call owns it
                opened.art.close()
            raise
        if opened is None:
            opened = admit_file(found, policy=policy, command=program.argv[1:], bundle_dir=options.bundle_dir,
                                options=replace(options.admit, name=os.path.basename(program.argv[0])))
            try:
                claimed = _claimed(opened, program, found, policy, options) if located else None
            except BaseException:
                opened.art.close()
                raise
            if claimed is not None:
                return _admit_as(claimed[0], program, found, request, policy, options, depth, claimed[1])
    except Unprovable as why:
        return _denied_anyway(Part(program.argv, "ask", f"{line}: {why}", program=program), policy)
    except ArtifactAccessError as err:
        if not program.after_writer and not names_program(policy, os.path.basename(program.argv[0])):
            # Not installed, not governed, and nothing earlier in the line can make it: no opinion
            # (issue 32, item 9); the shell will say "command not found".
            return Part(program.argv, policy.hooks_unlisted, f"{line}: not found, and the policy names no rule "
                        f"for it (hooks.unlisted {policy.hooks_unlisted}): {err.diagnostics()}", program=program)
        # Not there now (a file the line itself may make): nothing to check, so a person decides.
        return _denied_anyway(Part(program.argv, "ask", f"{line}: cannot be checked: {err.diagnostics()}",
                                   program=program), policy)
    except AtipTrustError as err:
        return Part(program.argv, "deny", f"{line}: cannot be verified: {err.diagnostics()}", program=program)
    try:
        part = _as_read(_judge(program, opened, policy, options, request.cwd), program, policy, opened.admission)
        part = _known_as(part, program.argv, also, policy)
    except ExecRefused as err:
        part = Part(program.argv, err.behavior, f"{line}: {err}", program=program)
    except AtipTrustError as err:
        part = Part(program.argv, "deny", f"{line}: cannot be verified: {err.diagnostics()}", program=program)
    finally:
        opened.art.close()
    if options.admit.audit:
        try:
            _write_hook_audit(opened.admission, part, policy)
        except AtipTrustError as err:  # no audit line, no allow (docs/contract.md: a failed write is a denial)
            return Part(program.argv, "deny", f"{line}: cannot be verified: {err.diagnostics()}", program=program)
    return part


def _denied_anyway(part: Part, policy: Policy) -> Part:
    """``part``, a question because the program could not be checked (a repository or configuration
    check that fails, a file not found or not placed), made a denial when a deny rule of the name the
    line gives it matches the command in some reading (agents/spellings.py): the rule names what the
    line does, whatever else about it is unprovable (``git -C vendor/lib.git push -f origin main`` is a
    force push, whichever configuration git reads). Only ever stricter: an ask stays an ask otherwise."""
    argv = part.argv
    found = spellings.strictest_reading(policy, os.path.basename(argv[0]), argv, given=True)
    if found is None or found[0] != "deny":
        return part
    return replace(part, behavior="deny", reason=f"{' '.join(argv)}: {found[1]}, whatever else is not known "
                   f"about it ({part.reason})")


#: What git runs by name from PATH, which the line never names: the helper names and the sub-commands
#: that may run them. git(1), git-config(1): ssh for an ``host:path`` or ``ssh://`` address (also a
#: remote's configured one), the signing programs (``-S``, ``commit.gpgSign``, ``--show-signature``), the
#: editor (a message not given, ``add -e``, ``branch --edit-description``; a terminal that is not dumb;
#: Debian's default is ``editor``). (What tar runs by name, its compression programs, also when it reads
#: an archive, is in its table and admitted as programs of the line: facts/program_tables.py implies.)
_GIT_HELPERS: tuple[tuple[tuple[str, ...], frozenset[str]], ...] = (
    (("ssh",), frozenset({"fetch", "pull", "push", "clone", "ls-remote", "remote", "submodule", "archive"})),
    (("gpg", "gpgsm", "ssh-keygen"), frozenset({"commit", "tag", "merge", "rebase", "cherry-pick", "revert", "am",
                                                "pull", "verify-commit", "verify-tag", "log", "show"})),
    (("editor", "vi"), frozenset({"commit", "tag", "merge", "rebase", "revert", "cherry-pick", "am", "pull",
                                  "notes", "add", "branch"})),
)


def _git_helpers(program: Program, request: HookRequest, options: Options) -> None:
    """Unprovable when a program git may run by name (:data:`_GIT_HELPERS`) is found on the line's PATH
    and is not the system's (identity.is_system): a ``~/.local/bin/ssh`` runs unchecked under an allowed
    ``git push`` (found by tests/attacks/test_shell_redteam_oracle.py: ``git ls-remote localhost:x``)."""
    words = [Word(w) for w in program.argv]
    sub = git_subcommand(words)
    name = words[sub].text if sub < len(words) else ""
    search = program.search if program.search is not None else options.path_env
    for helpers, subs in _GIT_HELPERS:
        if name not in subs:
            continue
        for helper in helpers:
            try:
                found = locate(helper, search, request.cwd, program.moved)
            except ArtifactAccessError:
                continue  # not installed: it cannot run it
            if not identity.is_system(found, helper):
                raise Unprovable(f"git {name} may run {helper!r} by name from PATH, and the one found there "
                                 f"({found}) is not the system's")


def _write_hook_audit(adm: Admission, part: Part, policy: Policy) -> None:
    """The program's audit line, saying what the hook answered: a program passed to the agent's own
    permissions by ``hooks.unlisted`` is ``passthrough`` (or that setting's ask/deny), with why and the
    admission's own answer beside it, never the admission's deny it did not enforce."""
    if not part.unlisted or part.behavior == adm.behavior:
        write_audit(adm)
        return
    record = {**adm.audit_record, "decision": part.behavior,
              "hook": {"answer": part.behavior, "admission": adm.behavior,
                       "why": f"hooks.unlisted is {policy.hooks_unlisted}: the policy names no rule for "
                              "this program and its admission failed only for generic reasons (no rule, "
                              "unknown effects, trust below a minimum)"}}
    write_audit(adm, record=record)


def _identified(program: Program, found: str, policy: Policy, options: Options) -> identity.Identified:
    """What the file the line calls ``argv[0]`` is by its bytes (agents/identity.py: PATH, registry.json)."""
    return identity.identify(found, os.path.basename(program.argv[0]), identity.governed_names(policy),
                             options.path_env)


def _pin_refused(program: Program, found: str, ident: identity.Identified) -> Part | None:
    """A denial when the program is read by another name than the line gives it and ``registry.json``
    pins the typed name to other bytes (identity.identify): admitted under the other name, the typed
    name's pin would go unchecked, where admission denies a mismatch in every mode
    (admission/agent_tools.registry_check); None otherwise."""
    if ident.pin is None:
        return None
    expected, actual = ident.pin
    typed = os.path.basename(program.argv[0])
    return Part(program.argv, "deny", f"{' '.join(program.argv)}: {found} has the bytes of {ident.name}, and "
                f"registry.json pins {typed!r} to other bytes (expected {expected}, actual {actual}): drift or "
                "tampering; if the tool was updated on purpose, index it again with `atip-trust scan "
                "--update-registry` once it verifies", found, None, program)


def _reread(program: Program, ident: identity.Identified) -> tuple[list[Program] | None, frozenset[str]]:
    """The program read again by what its bytes are (``ident``), when that is not the name the line
    gives it: itself under that name, then whatever it runs as that program; None otherwise (and for a
    script a shell reads, which is not executed). With it, the other names the bytes are known by,
    whose deny and ask rules apply too (``_known_as``)."""
    if program.script:
        return None, frozenset()
    name = ident.name
    return None if name is None else _renamed(program, name), ident.names - {os.path.basename(program.argv[0]), name}


def _known_as(part: Part, argv: tuple[str, ...], names: frozenset[str], policy: Policy) -> Part:
    """``part``, made a denial or a question by a deny or ask rule of another name the program's bytes
    have (the name the line typed, another program on PATH or in registry.json with the same bytes):
    a name gained or kept can add a rule, never take one away (issue 32, item 1)."""
    for name in sorted(names):
        if part.behavior == "deny":
            break
        found = spellings.strictest_reading(policy, name, (name, *argv[1:]), given=True)
        if found is not None and ORDER[found[0]] > ORDER[part.behavior]:
            part = replace(part, behavior=found[0], reason=f"{' '.join(argv)}: as {name} (its bytes are also "
                           f"{name}'s, or the line calls it so): {found[1]}", unlisted=False)
    return part


def _renamed(program: Program, name: str) -> list[Program]:
    """``program`` under the name its bytes have, then what it runs as that program."""
    again = programs_of_argv([name, *program.argv[1:]], env=program.env, cleared=program.cleared)
    first = replace(program, argv=(name, *program.argv[1:]), span=None,
                    state_dependent=program.state_dependent or reads_state(name, [Word(w) for w in program.argv]))
    # A runner that returns before its command runs (setsid -f under another name: runners.Outcome
    # .background) leaves what it runs after the rest of the line, whatever writes there.
    model = RUNNERS.get(name)
    late = model is not None and model([Word(name), *(Word(w) for w in program.argv[1:])]).background
    inner = [replace(p, after_writer=p.after_writer or program.after_writer or late, moved=p.moved or program.moved,
                     via=(*program.via, name, *p.via), literal=p.literal and program.literal)
             for p in again[1:]]
    return [first, *inner]


def _script_identity(program: Program, ident: identity.Identified) -> Program:
    """A script a shell reads (``bash FILE ARGS``) under the name its bytes are (``ident``): ``bash
    tools/hub repo delete x``, where ``tools/hub`` links to gh's script, is gh's ``repo delete`` to the
    rules (found by tests/attacks/test_shell_redteam_oracle.py; the file is read, not executed, so no
    runner model applies: only the name)."""
    return program if ident.name is None else replace(program, argv=(ident.name, *program.argv[1:]))


def _metadata_name(adm: Admission) -> str | None:
    """The program name the metadata found for these bytes by their digest gives, when it is not the
    name they were admitted under (admission dropped it then, with a ``metadata.name`` check naming it:
    admission/admit.py ``_unless_named``), or None."""
    for check in adm.report.checks:
        if check.name == "metadata.name" and check.status == "fail" and isinstance(check.actual, list) \
                and check.actual and isinstance(check.actual[0], str):
            name = check.actual[0]
            return name if name and "/" not in name and name != adm.tool else None
    return None


def _claimed(opened: Opened, program: Program, found: str, policy: Policy,
             options: Options) -> tuple[list[Program], Opened] | None:
    """Identity by verified metadata (issue 32, item 1): the file's metadata, found by its digest, names
    another program; admitted under that name, the metadata verifies (signed by a signer policy names,
    bound to these bytes and that name: admission/metadata_trust.py), so the file is that program. Then
    ``opened`` is closed and the program under that name, with its admission, is returned; None (and
    ``opened`` kept) when there is no such name or the metadata does not verify: metadata that is not
    verified never changes what a program is."""
    typed = opened.admission
    name = None if program.script else _metadata_name(typed)
    if name is None or (typed.behavior == "deny" and not all(r.code in GENERIC_REASONS
                                                               for r in typed.decision.reasons)):
        return None  # denied under its own name for what it is (a rule, a registry pin, tampering): it stays so
    other = admit_file(found, policy=policy, command=program.argv[1:], bundle_dir=options.bundle_dir,
                       options=replace(options.admit, name=name))
    try:
        adm = other.admission
        if adm.effects_verified and adm.metadata is not None and adm.metadata.name_problem(name) is None:
            again = _renamed(program, name)
            opened.art.close()
            return again, other
    except BaseException:
        other.art.close()
        raise
    other.art.close()
    return None


def _admit_as(again: list[Program], program: Program, found: str, request: HookRequest, policy: Policy,
              options: Options, depth: int, opened: Opened | None = None, also: frozenset[str] = frozenset()
              ) -> Part:
    """A program admitted as what its bytes are (``_reread``, ``_claimed``), with what it runs as that
    program; the strictest answer stands, and a line holding one is not pinned (``program`` is None).
    The deny and ask rules of the name the line typed still apply: a name the bytes gained can add a
    rule, never take one away."""
    first = again[0]
    shown = " ".join(first.argv)
    if depth >= _MAX_REREAD:
        if opened is not None:
            opened.art.close()
        raise Unprovable(f"{shown}: programs whose bytes are other programs nest deeper than the gate reads")
    own = _admit(first, request, policy, options, depth + 1, found, opened)
    parts = [replace(own, reason=f"{found} has the bytes of {first.argv[0]}: {own.reason}"),
             *(_admit(p, request, policy, options, depth + 1) for p in again[1:])]
    worst = max(parts, key=lambda p: ORDER[p.behavior])
    part = Part(first.argv, worst.behavior, " | ".join(p.reason for p in parts if p.behavior == worst.behavior),
                own.path, own.digest, None)
    return _known_as(part, program.argv, (also | {os.path.basename(program.argv[0])}) - {first.argv[0]}, policy)


_MAX_REREAD = 4


def _pin(line: str, parts: list[Part], options: Options) -> tuple[str | None, str]:
    """The line with each program run through ``atip-trust exec --expect-digest`` (execution/exec.pinned_argv),
    or None and why not."""
    source = line.encode("utf-8", "surrogatepass")
    edits: list[tuple[int, int, bytes]] = []
    for part in parts:
        program = part.program
        if program is None or program.span is None or part.digest is None or part.path is None:
            return None, (f"{' '.join(part.argv)}: --pin can only rewrite a program named at the top of "
                          "the line, not one a runner or a shell string runs")
        if program.env:
            # bash gives NAME=VALUE to the command it starts, which the rewrite makes the launcher: its
            # configuration (HOME, XDG_*, ATIP_*) would then come from the line (issue 32, item 7).
            return None, (f"{' '.join(part.argv)}: --pin cannot keep the assignments "
                          f"{', '.join(n + '=' for n in program.env)} from reaching its launcher")
        words = pinned_argv(os.path.abspath(part.path), f"sha256:{part.digest}", (),
                            program=options.pin or (), options=options.pin_options)
        edits.append((*program.span, shlex.join(words).encode()))
    for start, end, text in sorted(edits, reverse=True):
        source = source[:start] + text + source[end:]
    return source.decode("utf-8", "surrogatepass"), ""


def _unprovable(request: HookRequest, policy: Policy, why: Unprovable, options: Options) -> Verdict:
    """A line the model cannot prove is a question; what its text plainly names is still admitted, so a
    program the policy denies keeps the line denied whatever is appended to it (``gh repo delete x | sh``)."""
    question = f"cannot prove what this line runs ({why}); review it yourself"
    visible = visible_programs(request.command) if isinstance(request.command, str) else []
    denied = [p for p in (_admit(v, request, policy, options) for v in visible[:MAX_VISIBLE])
              if p.behavior == "deny"]
    if denied:
        return Verdict("deny", "atip-trust: " + " | ".join(p.reason for p in denied) + " | " + question,
                       tuple(denied))
    if names_none(policy) and policy.hooks_unlisted == "passthrough":
        # Whatever the line runs, this policy names none of it (issue 32, item 9): no opinion.
        return Verdict("passthrough", f"atip-trust: no opinion: {question}; the policy names no program")
    return Verdict("ask", "atip-trust: " + question)


def _admit_each(found: list[Program], request: HookRequest, policy: Policy, options: Options) -> list[Part]:
    """A part per program; a program met again with the same words and circumstances (only its place
    in the line differs) is admitted once, so a long line costs its distinct programs."""
    seen: dict[Program, Part] = {}
    parts: list[Part] = []
    for program in found:
        if program.implied and not _installed(program, request, options):
            continue
        key = replace(program, span=None)
        part = seen.get(key)
        if part is None:
            part = seen[key] = _admit(program, request, policy, options)
        parts.append(part if part.program is program else replace(part, program=program))
    return parts


def _installed(program: Program, request: HookRequest, options: Options) -> bool:
    """False for a program another one may run by name (``tar -x`` and each decompressor: Program.implied)
    that is not installed and that nothing earlier in the line can make: it runs nothing, so it is no part
    of the line (the archive that calls for it fails), not an unknown program for hooks.unlisted."""
    if program.after_writer:
        return True
    try:
        _locate(program, request.cwd, options.path_env)
    except ArtifactAccessError:
        return False
    except Unprovable:
        return True  # its own admission says why
    return True


def _quiet_by_bytes(found: list[Program], request: HookRequest, options: Options) -> list[Program]:
    """The programs, every other one counted after a writer when one counted as not writing by its name
    (shell_model.Program.quiet) is not that program's bytes (identity.is_system): a copy of ``cp`` called
    ``cat`` writes (issue 32, items 1 and 5). Where it runs among the others is not re-read: all count."""
    for i, program in enumerate(found):
        if not program.quiet:
            continue
        try:
            path = _locate(program, request.cwd, options.path_env)
        except ArtifactAccessError:
            continue  # not there: it runs nothing and writes nothing (its own part says so)
        except Unprovable:
            path = None
        if path is None or not identity.is_system(path, os.path.basename(program.argv[0])):
            return [p if k == i else replace(p, after_writer=True) for k, p in enumerate(found)]
    return found


def decide_command(request: HookRequest, *, policy: Policy, options: Options | None = None) -> Verdict | None:
    """The verdict for a shell command, or None (no opinion) for another tool or a line of shell
    builtins only. Each program's admission writes its own audit line."""
    if request.command is None:
        return None
    options = options or Options()
    # Every program is admitted as one an agent's user can be asked about (module docstring).
    options = replace(options, admit=replace(options.admit, interactive=True))
    try:
        try:
            if request.tool_name == "powershell":
                raise Unprovable("PowerShell commands are not read by bash's grammar")
            found = programs_of_argv(request.command) if isinstance(request.command, list) \
                else programs(request.command)
        except Unprovable as why:
            return _unprovable(request, policy, why, options)
    except OverBudget as why:  # issue 32, item 8: over budget is a denial naming the cause
        return Verdict("deny", f"atip-trust: the line is not read: {why}")
    parts = _admit_each(_quiet_by_bytes(found, request, options), request, policy, options)
    if not parts:
        return None
    worst = max(parts, key=lambda p: ORDER[p.behavior]).behavior
    shown = [p.reason for p in parts if worst == "allow" or p.behavior == worst]
    if worst != "allow" or options.pin is None:
        return Verdict(worst, "atip-trust: " + " | ".join(shown), tuple(parts))
    line = request.command if isinstance(request.command, str) else shlex.join(request.command)
    rewritten, why_not = _pin(line, parts, options) if isinstance(request.command, str) else (None, "")
    if rewritten is None:
        return Verdict("ask", "atip-trust: " + (why_not or "--pin cannot rewrite an argv command"), tuple(parts))
    return Verdict("allow", "atip-trust: " + " | ".join(shown) + " (pinned to the admitted bytes)",
                   tuple(parts), rewritten)


def answer(agent: str, data: bytes, *, policy: Policy, options: Options | None = None) -> HookAnswer:
    """The whole hook: parse, decide, render; an error of ours is a denial (:func:`render_error`)."""
    try:
        request = parse_request(agent, data)
        verdict = decide_command(request, policy=policy, options=options)
    except AtipTrustError as err:
        return render_error(agent, err.diagnostics())
    if verdict is None:
        return render(agent, None)
    return render(agent, verdict.behavior, verdict.reason, verdict.rewritten)


__all__ = ["GENERIC_REASONS", "Options", "Part", "Verdict", "answer", "changeable", "decide_command", "locate",
           "names_none", "names_program"]
