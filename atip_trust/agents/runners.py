"""Programs that run other programs, each read with its own grammar (the shell gate's table).

A line that runs ``env X=1 -- gh repo delete`` executes two programs; the gate must find the second
exactly where ``env`` will, or admit the wrong words. Each runner here is modelled from its manual
(coreutils env(1), nice(1), nohup(1), timeout(1), stdbuf(1); findutils find(1), xargs(1); sudo(8),
doas(1); util-linux setsid(1), flock(1), ionice(1), taskset(1), chrt(1), nsenter(1), unshare(1);
bash(1) for ``exec``, ``command``, ``builtin``, ``time`` and ``sh``/``bash -c``; git(1) and
git-config(1) for what git runs). Options are read as getopt does (``getopt.py``). Whatever a runner
can do that the table does not model (a shell it picks itself, a changed root, a program named by its
input) is :class:`Unprovable`: the gate cannot vouch for the line.

Programs that run code given to them but are not modelled here (interpreters, ``make``, ``strace``,
``ssh``...) are listed in facts/programs.py: the gate admits them with their words like any program,
and ``policy check`` warns when an allow rule ending in ``*`` names one (allowing it allows whatever it
runs).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from atip_trust._base.record import Record, replace
from atip_trust.agents.getopt import Grammar, parse_options
from atip_trust.agents.words import Unprovable, Word
from atip_trust.execution.env import changes_what_runs

#: glibc's execvp(3) search path when PATH is unset (confstr _CS_PATH), which ``env -i`` leaves.
DEFAULT_PATH = "/bin:/usr/bin"
#: What a shell started without PATH searches for the commands it reads (its compiled-in default, not
#: exported to what it runs): bash's ends with ".", the current directory (``env -i bash -c tool``
#: runs ./tool: found by tests/attacks/test_shell_redteam_oracle.py). ``sh`` may be bash.
SHELL_DEFAULT_PATH = {"bash": "/usr/local/bin:/usr/local/sbin:/usr/bin:/usr/sbin:/bin:/sbin:.",
                      "sh": "/usr/local/bin:/usr/local/sbin:/usr/bin:/usr/sbin:/bin:/sbin:.",
                      "dash": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
def changes_lookup(name: str) -> bool:
    """An assignment to ``name`` changes which program runs or makes it load other code: ``PATH`` and
    ``EXECIGNORE``, every
    variable ``exec`` drops unless a policy names it (execution/env.changes_what_runs: loader, interpreter and
    command-running variables) and git's whole namespace (``GIT_CONFIG_*`` injects configuration)."""
    return name in _LOOKUP or changes_what_runs(name) or name.startswith("GIT_")


#: bash's own variables for its command search and start-up: ``EXECIGNORE`` makes it skip matching
#: files on PATH, so ``EXECIGNORE='*/bin/tool'; tool`` runs the next ``tool`` (bash(1) Shell Variables);
#: with ``SSH_CLIENT`` (or ``SSH2_CLIENT``) set and ``SHLVL`` below 1, ``bash -c`` believes sshd
#: started it and reads ``~/.bashrc`` first (shell.c, SSH_SOURCE_BASHRC, which Debian builds with).
#: Found by tests/attacks/test_shell_redteam_oracle.py.
_LOOKUP = frozenset({"PATH", "EXECIGNORE", "SSH_CLIENT", "SSH2_CLIENT", "SHLVL"})


class Inner(Record):
    """A command a runner runs (its words), or a shell string it runs (``sh -c``)."""

    words: tuple[Word, ...] = ()
    #: Where a bare name is looked up: None for the line's PATH, else this search path.
    search: str | None = None
    #: The runner appends words only known at run time (xargs, ``find -exec ... {} +``).
    open_args: bool = False
    #: The runner changes directory first: a relative program path means something else.
    chdir: bool = False
    #: ``sh -c STRING``: a line of its own, parsed again.
    shell_string: str | None = None
    #: ``sh FILE``: the file is a script the shell reads (never looked up on PATH by the gate).
    script: bool = False
    #: The runner removes PATH from the environment (``env -i``, ``env -u PATH``): everything below it
    #: searches a default path (``search``), and a shell its own (SHELL_DEFAULT_PATH).
    cleared: bool = False


class Outcome(Record):
    """What a runner runs (possibly nothing) and whether it writes files before it does."""

    inner: tuple[Inner, ...] = ()
    writes: bool = False
    #: Variables the runner sets for what it runs (``env X=1 cmd``): checked against its table.
    env: tuple[str, ...] = ()
    #: The runner returns before its command has run (``setsid -f``, ``sudo -b``): a background job.
    background: bool = False


NOTHING = Outcome()


def _assignments(words: list[Word], i: int, who: str) -> int:
    """``NAME=VALUE`` operands before the command (env, sudo): each checked; returns the next index."""
    while i < len(words):
        w = words[i]
        if not w.literal:
            raise Unprovable(f"{who}: the word {w.text!r} is not known before the shell runs: it could "
                             "be an assignment or the program")
        if "=" not in w.text:
            break
        name = w.text.split("=", 1)[0]
        if changes_lookup(name):
            raise Unprovable(f"{who} sets {name}, which changes which program runs or what it loads")
        i += 1
    return i


def _names(assignments: list[Word]) -> tuple[str, ...]:
    return tuple(w.text.split("=", 1)[0] for w in assignments)


def _command(words: list[Word], i: int, **inner: object) -> Outcome:
    if i >= len(words):
        return NOTHING
    return Outcome((Inner(tuple(words[i:]), **inner),))  # type: ignore[arg-type]


# --- coreutils ---------------------------------------------------------------------------------

_ENV = Grammar(flags="i0v", valued="uCS", long_flags=("ignore-environment", "null", "debug",
                                                       "list-signal-handling", "help", "version"),
               long_valued=("unset", "chdir", "split-string"),
               long_optional=("default-signal", "ignore-signal", "block-signal"))
#: What ``env -S`` may split here: no quotes, escapes, ``$`` or ``#``, whose meaning env defines itself.
_PLAIN_SPLIT = r"[A-Za-z0-9_./=:,@%+ \t-]*"  # compiled on first use (re's cache), not at import


def _env(words: list[Word], depth: int = 0) -> Outcome:
    parsed = parse_options(words, 1, _ENV, "env")
    split = parsed.values("-S", "--split-string")
    if split:
        # -S's words take the place of the option and are read as options again (env(1) -S).
        text = split[-1] or ""
        if len(split) > 1 or depth or not re.fullmatch(_PLAIN_SPLIT, text):
            raise Unprovable(f"env -S {text!r}: only one plain string (no quotes, escapes or $) is read")
        again = [words[0], *(Word(t) for t in text.split()), *words[parsed.rest:]]
        return _env(again, depth + 1)
    rest = parsed.rest
    cleared = parsed.has("-i", "--ignore-environment")
    if rest < len(words) and words[rest].literal and words[rest].text == "-":
        rest, cleared = rest + 1, True  # a lone '-' is -i
    # With PATH removed (-i, -u PATH), execvp(3) searches glibc's default path instead.
    search = DEFAULT_PATH if cleared or "PATH" in parsed.values("-u", "--unset") else None
    start, rest = rest, _assignments(words, rest, "env")
    ran = _command(words, rest, search=search, chdir=parsed.has("-C", "--chdir"), cleared=search is not None)
    return replace(ran, env=_names(words[start:rest]))


def _nice(words: list[Word]) -> Outcome:
    i = 1
    if i < len(words) and words[i].literal and re.fullmatch(r"--?\d+", words[i].text):
        i += 1  # the historical 'nice -10 cmd'
    parsed = parse_options(words, i, Grammar(valued="n", long_flags=("help", "version"),
                                             long_valued=("adjustment",)), "nice")
    return _command(words, parsed.rest)


def _simple(grammar: Grammar, operands: int = 0) -> Callable[[list[Word]], Outcome]:
    """A runner whose command follows its options and ``operands`` fixed operands."""
    def model(words: list[Word]) -> Outcome:
        who = words[0].text.rsplit("/", 1)[-1]
        parsed = parse_options(words, 1, grammar, who)
        i = parsed.rest
        for _ in range(operands):
            if i >= len(words):
                return NOTHING
            if not words[i].literal:
                raise Unprovable(f"{who}: the operand {words[i].text!r} is not known before the shell runs")
            i += 1
        return _command(words, i)
    return model


# --- findutils ---------------------------------------------------------------------------------

_FIND_RUNS = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
_FIND_WRITES = frozenset({"-fprint", "-fprint0", "-fprintf", "-fls", "-delete"})


def _find(words: list[Word]) -> Outcome:
    inner: list[Inner] = []
    writes = False
    i = 1
    while i < len(words):
        w = words[i]
        if not w.literal:
            raise Unprovable(f"find: the word {w.text!r} is not known before the shell runs: it could be "
                             "an action that runs a program")
        if w.text in _FIND_WRITES:
            writes = True
        if w.text not in _FIND_RUNS:
            i += 1
            continue
        end = i + 1
        while end < len(words) and not (words[end].literal and (
                words[end].text == ";" or (words[end].text == "+" and words[end - 1].text == "{}"))):
            end += 1
        if end >= len(words) or end == i + 1:
            raise Unprovable(f"find {w.text} has no command ended by ';' or '{{}} +'")
        cmd = words[i + 1:end]
        if not cmd[0].literal or "{}" in cmd[0].text:
            raise Unprovable(f"find {w.text} runs a program named by the files it finds")
        if w.text.endswith("dir") and "/" in cmd[0].text and not cmd[0].text.startswith("/"):
            raise Unprovable(f"find {w.text} runs {cmd[0].text!r} relative to each file's directory")
        marked = tuple(c if "{}" not in c.text else Word(c.text, literal=False) for c in cmd)
        # -execdir runs the command in each found file's folder: git there reads that folder's
        # repository (a committed bare one), a relative PATH entry means another file (issue 32).
        inner.append(Inner(marked, open_args=words[end].text == "+", chdir=w.text.endswith("dir")))
        i = end + 1
    return Outcome(tuple(inner), writes)


_XARGS = Grammar(flags="0oprtx", valued="aEILnPsd", optional="eil",
                 long_flags=("null", "open-tty", "interactive", "no-run-if-empty", "verbose", "exit",
                             "show-limits", "help", "version"),
                 long_valued=("arg-file", "delimiter", "max-args", "max-procs", "max-chars",
                              "process-slot-var"),
                 long_optional=("eof", "replace", "max-lines"))


def _xargs(words: list[Word]) -> Outcome:
    parsed = parse_options(words, 1, _XARGS, "xargs")
    for name in parsed.values("--process-slot-var"):
        if name is not None and changes_lookup(name):
            raise Unprovable(f"xargs --process-slot-var={name} changes which program runs")
    replace = [v or "{}" for n, v in parsed.options if n in ("-I", "-i", "--replace")]
    cmd = words[parsed.rest:] or [Word("echo")]  # xargs(1): the default command is echo
    if any(r and r in cmd[0].text for r in replace):
        raise Unprovable("xargs puts its input in the program's name (-I)")
    # With -I, each word holding the replacement string becomes the input: not known from the line.
    cmd = [Word(w.text, literal=False) if any(r and r in w.text for r in replace) else w for w in cmd]
    return Outcome((Inner(tuple(cmd), open_args=True),))


# --- sudo and doas -----------------------------------------------------------------------------

_SUDO = Grammar(flags="ABbEeHiKklNnPSsVv", valued="CDgpRrTtUu", optional="h",
                long_flags=("askpass", "background", "bell", "edit", "set-home", "login", "remove-timestamp",
                            "reset-timestamp", "list", "no-update", "non-interactive", "preserve-groups",
                            "stdin", "shell", "version", "validate"),
                long_valued=("close-from", "chdir", "group", "prompt", "chroot", "role", "type",
                             "command-timeout", "other-user", "user"),
                long_optional=("preserve-env", "host", "help"))
_SUDO_SHELL = ("-i", "-s", "-e", "--login", "--shell", "--edit", "-R", "--chroot")
_SUDO_NO_COMMAND = ("-l", "-v", "-V", "-K", "--list", "--validate", "--version", "--remove-timestamp",
                    "-h", "--help")


def _sudo(words: list[Word]) -> Outcome:
    parsed = parse_options(words, 1, _SUDO, "sudo")
    for name in _SUDO_SHELL:
        if parsed.has(name):
            raise Unprovable(f"sudo {name} runs a shell, an editor or another root than the line shows")
    if any(parsed.has(n) for n in _SUDO_NO_COMMAND):
        return NOTHING
    rest = _assignments(words, parsed.rest, "sudo")
    ran = _elevated(words, rest, "sudo", parsed.has("-D", "--chdir"))
    return replace(ran, env=_names(words[parsed.rest:rest]), background=parsed.has("-b", "--background"))


def _doas(words: list[Word]) -> Outcome:
    parsed = parse_options(words, 1, Grammar(flags="Lns", valued="Cu"), "doas")
    if parsed.has("-s"):
        raise Unprovable("doas -s runs a shell")
    if parsed.has("-C", "-L"):
        return NOTHING
    return _elevated(words, parsed.rest, "doas", False)


def _elevated(words: list[Word], i: int, who: str, chdir: bool) -> Outcome:
    """sudo and doas search their own secure path, not the line's PATH: only a full path is known."""
    if i < len(words) and words[i].literal and "/" not in words[i].text:
        raise Unprovable(f"{who} looks {words[i].text!r} up on its own secure path, not this PATH: "
                         "name the program by its full path")
    return _command(words, i, chdir=chdir)


# --- util-linux ----------------------------------------------------------------------------------

def _flock(words: list[Word]) -> Outcome:
    parsed = parse_options(words, 1, Grammar(flags="sexnoFuhV", valued="wE",
                                             long_flags=("shared", "exclusive", "unlock", "nonblock",
                                                         "close", "no-fork", "verbose", "help", "version"),
                                             long_valued=("timeout", "conflict-exit-code")), "flock")
    i = parsed.rest + 1  # the lock file or descriptor
    if i < len(words) and (not words[i].literal or words[i].text in ("-c", "--command")):
        raise Unprovable("flock -c runs its string with $SHELL, a shell the line does not name")
    return _command(words, i)


def _with_pid_mode(grammar: Grammar, pid_options: tuple[str, ...], operands: int, who: str
                   ) -> Callable[[list[Word]], Outcome]:
    """ionice, taskset, chrt: with a pid option they act on running processes and run nothing."""
    def model(words: list[Word]) -> Outcome:
        parsed = parse_options(words, 1, grammar, who)
        if any(parsed.has(p) for p in pid_options):
            return NOTHING
        i = parsed.rest + operands
        if any(not w.literal for w in words[parsed.rest:i]):
            raise Unprovable(f"{who}: an operand is not known before the shell runs")
        return _command(words, i)
    return model


_NS_FILES = "muinpUCT"


def _nsenter(words: list[Word]) -> Outcome:
    parsed = parse_options(words, 1, Grammar(flags="aeFZchV", valued="tSGN", optional=_NS_FILES + "rwW",
                                             long_flags=("all", "preserve-credentials", "no-fork",
                                                         "follow-context", "join-cgroup", "keep-caps",
                                                         "help", "version"),
                                             long_valued=("target", "setuid", "setgid", "net-socket",
                                                          "user-parent", "env"),
                                             long_optional=("mount", "uts", "ipc", "net", "pid", "user",
                                                            "cgroup", "time", "root", "wd", "wdns")),
                           "nsenter")
    if parsed.has("-a", "--all", "-m", "--mount", "-r", "--root", "-W", "--wdns", "--env"):
        raise Unprovable("nsenter into another mount namespace or root: the program file is another one")
    if parsed.rest >= len(words):
        raise Unprovable("nsenter with no command runs $SHELL")
    return _command(words, parsed.rest, chdir=parsed.has("-w", "--wd"))


def _unshare(words: list[Word]) -> Outcome:
    parsed = parse_options(words, 1, Grammar(flags="fmuinpCTUrcVhl", valued="RwSG",
                                             long_flags=("fork", "map-root-user", "map-current-user",
                                                         "map-auto", "keep-caps", "help", "version"),
                                             long_valued=("root", "wd", "propagation", "setgroups",
                                                          "map-user", "map-group", "map-users", "map-groups",
                                                          "setuid", "setgid", "monotonic", "boottime"),
                                             long_optional=("mount", "uts", "ipc", "net", "pid", "user",
                                                            "cgroup", "time", "mount-proc", "kill-child",
                                                            "mount-binfmt")), "unshare")
    if parsed.has("-R", "--root", "--mount-binfmt", "-l"):
        raise Unprovable("unshare with another root or binfmt: the program file is another one")
    if parsed.rest >= len(words):
        raise Unprovable("unshare with no command runs $SHELL")
    return _command(words, parsed.rest, chdir=parsed.has("-w", "--wd"))


def _prlimit(words: list[Word]) -> Outcome:
    """prlimit(1): ``--pid`` acts on a running process; otherwise its options (each resource with an
    optional ``=limits``), then the command."""
    resources = ("as", "core", "cpu", "data", "fsize", "locks", "memlock", "msgqueue", "nice", "nofile",
                 "nproc", "rss", "rtprio", "rttime", "sigpending", "stack")
    parsed = parse_options(words, 1, Grammar(flags="hV", valued="po", optional="ACdefilmnqrstuvxyS",
                                             long_flags=("noheadings", "raw", "verbose", "help", "version"),
                                             long_valued=("pid", "output"), long_optional=resources), "prlimit")
    if parsed.has("-p", "--pid"):
        return NOTHING
    return _command(words, parsed.rest)


_SETARCH = Grammar(flags="vRFLXBIST3hV", long_flags=("verbose", "addr-no-randomize", "fdpic-funcptrs",
                                                      "mmap-page-zero", "addr-compat-layout", "read-implies-exec",
                                                      "32bit", "short-inode", "whole-seconds", "sticky-timeouts",
                                                      "3gb", "4gb", "uname-2.6", "list", "help", "version"))


def _setarch(words: list[Word]) -> Outcome:
    """setarch(8) ARCH [options] [command]; ``linux32``/``linux64`` take no ARCH. With no command it
    runs ``/bin/sh``: unprovable."""
    name = words[0].text.rsplit("/", 1)[-1]
    i = 1
    if name == "setarch":
        if i >= len(words) or not words[i].literal:
            raise Unprovable("setarch: the architecture is not known before the shell runs")
        if words[i].text in ("--list", "--help", "--version", "-h", "-V"):
            return NOTHING
        if not words[i].text.startswith("-"):
            i += 1  # the architecture (newer setarch may leave it out and start with options)
    rest = parse_options(words, i, _SETARCH, name).rest
    if rest >= len(words):
        raise Unprovable(f"{name} with no command runs /bin/sh")
    return _command(words, rest)


_SETPRIV = Grammar(flags="dhV", long_flags=("dump", "nnp", "no-new-privs", "init-groups", "keep-groups",
                                             "clear-groups", "reset-env", "help", "version"),
                   long_valued=("inh-caps", "ambient-caps", "bounding-set", "ruid", "euid", "rgid", "egid",
                                "reuid", "regid", "groups", "securebits", "pdeathsig", "selinux-label",
                                "apparmor-profile", "landlock-access", "landlock-rule", "seccomp-filter"))


_SETSID = Grammar(flags="cfw", long_flags=("ctty", "fork", "wait", "help", "version"))


def _setsid(words: list[Word]) -> Outcome:
    """setsid(1) forks when told to (``-f``) or when it is a process group leader already (``setsid
    setsid``, a shell with job control), and then returns at once unless ``-w``: what it runs may run
    after the rest of the line, as a background job (issue 32, item 5; found by
    tests/attacks/test_shell_redteam_oracle.py)."""
    parsed = parse_options(words, 1, _SETSID, "setsid")
    return replace(_command(words, parsed.rest), background=not parsed.has("-w", "--wait"))


def _setpriv(words: list[Word]) -> Outcome:
    parsed = parse_options(words, 1, _SETPRIV, "setpriv")
    return _command(words, parsed.rest)


# --- bash's own ----------------------------------------------------------------------------------

def _exec(words: list[Word]) -> Outcome:
    parsed = parse_options(words, 1, Grammar(flags="cl", valued="a"), "exec")
    if parsed.has("-a"):
        raise Unprovable("exec -a gives the program another name (a multi-call binary runs that tool)")
    if parsed.has("-l"):
        # argv[0] becomes "-NAME": a shell started so is a login shell and reads ~/.profile first
        # (found by tests/attacks/test_shell_redteam_oracle.py: exec -l bash -c true).
        raise Unprovable("exec -l makes the program a login shell, which reads start-up files first")
    return _command(words, parsed.rest)


def _command_builtin(words: list[Word]) -> Outcome:
    parsed = parse_options(words, 1, Grammar(flags="pvV"), "command")
    if parsed.has("-v", "-V"):
        return NOTHING  # describes the name, runs nothing
    return _command(words, parsed.rest, search=DEFAULT_PATH if parsed.has("-p") else None)


def _time(words: list[Word]) -> Outcome:
    return _command(words, parse_options(words, 1, Grammar(flags="p"), "time").rest)


_SHELL_FLAGS = "abefhkmnptuvxBCEHPTlr"
_SHELL_LONG = ("norc", "noprofile", "posix", "restricted", "login", "verbose", "noediting", "help",
               "version")


def login_shell(words: list[Word]) -> bool:
    """``sh``/``bash``/``dash`` started as a login shell (``-l`` in a leading cluster, ``--login``): it
    reads /etc/profile and ``~/.profile`` (``~/.bash_profile``...) first, files an earlier part of the
    line can write (bash(1) INVOCATION)."""
    i = 1
    while i < len(words):
        w = words[i]
        t = w.text
        if not w.literal or t in ("--", "-") or not t.startswith(("-", "+")):
            return not w.literal
        if t == "--login" or (t[0] == "-" and not t.startswith("--") and "l" in t[1:]):
            return True
        i += 2 if t in ("-o", "+o", "-O", "+O") else 1
    return False


def _shell(words: list[Word]) -> Outcome:
    """``sh``/``bash``/``dash`` ``[-flags] [-o opt] -c STRING [$0 ARGS...]`` or ``sh FILE``."""
    who = words[0].text.rsplit("/", 1)[-1]
    i, command = 1, False
    while i < len(words):
        w = words[i]
        if not w.literal:
            raise Unprovable(f"{who}: the word {w.text!r} is not known before the shell runs")
        t = w.text
        if t == "--" or t == "-":
            i += 1
            break
        if t in ("-o", "+o", "-O", "+O"):
            i += 2
            continue
        if t.startswith("--"):
            if t[2:] not in _SHELL_LONG:
                raise Unprovable(f"{who} option {t!r} is not one whose meaning is known here")
            i += 1
            continue
        if t[:1] in "-+" and len(t) > 1:
            flags = t[1:]
            if t[0] == "-" and "c" in flags:
                command = True
                flags = flags.replace("c", "")
            if any(f not in _SHELL_FLAGS for f in flags):
                raise Unprovable(f"{who} {t}: reads commands from somewhere the line does not show "
                                 "(-s, -i) or an option not known here")
            i += 1
            continue
        break
    if i >= len(words):
        raise Unprovable(f"{who} with no command string reads its commands from standard input")
    if command:
        if not words[i].literal:
            raise Unprovable(f"{who} -c: the command string is not known before the shell runs")
        return Outcome((Inner(shell_string=words[i].text),))
    script = words[i]
    if not script.literal or "/" not in script.text:
        raise Unprovable(f"{who} {script.text!r}: a script named without a '/' is searched on PATH "
                         "by the shell; name it ./script")
    return Outcome((Inner(tuple(words[i:]), script=True),))


# --- git -----------------------------------------------------------------------------------------

#: ``git -c`` keys (git-config(1)) that change nothing about which program runs; any other is refused
#: (aliases, pagers, editors, ssh commands, fsmonitor, hooks paths, diff and merge drivers, filters,
#: credential helpers, includes, safe.directory).
_GIT_SAFE_KEYS = (r"(user|color|advice|column|i18n)\.[a-z0-9.-]+|init\.defaultbranch|core\.quotepath|"
                            r"core\.autocrlf|core\.safecrlf|core\.filemode|pull\.(rebase|ff)|"
                            r"push\.default|diff\.(renames|noprefix|mnemonicprefix)|log\.(date|decorate)|"
                            r"commit\.verbose|status\.(short|branch)")
_GIT = Grammar(flags="hpPv", valued="Cc",
               long_flags=("paginate", "no-pager", "no-replace-objects", "no-lazy-fetch", "no-optional-locks",
                           "no-advice", "literal-pathspecs", "glob-pathspecs", "noglob-pathspecs",
                           "icase-pathspecs", "bare", "help", "version", "html-path", "man-path", "info-path"),
               long_valued=("git-dir", "work-tree", "namespace", "config-env", "list-cmds", "attr-source",
                            "super-prefix"),
               long_optional=("exec-path",))
#: git sub-commands that run programs named in their own arguments or picked by configuration.
_GIT_RUNS = frozenset({"filter-branch", "difftool", "mergetool", "instaweb", "web--browse", "daemon", "shell",
                       "send-email", "gui", "citool", "credential", "upload-pack", "receive-pack", "archimport",
                       "cvsimport", "svn", "p4", "quiltimport", "request-pull"})
#: Sub-commands built into git (git(1) GIT COMMANDS): anything else is an alias from configuration
#: or a ``git-NAME`` program from the exec path or PATH, neither of which the line shows.
_GIT_BUILTIN = frozenset((
    "add am annotate apply archive bisect blame branch bundle cat-file check-attr check-ignore "
    "check-mailmap check-ref-format checkout checkout-index cherry cherry-pick clean clone commit "
    "commit-graph commit-tree config count-objects describe diff diff-files diff-index diff-tree "
    "fetch for-each-ref for-each-repo format-patch fsck gc grep hash-object help init log ls-files "
    "ls-remote ls-tree merge merge-base merge-file mktag mktree mv name-rev notes pull push "
    "range-diff read-tree rebase reflog remote repack replace reset restore rev-list rev-parse revert "
    "rm shortlog show show-branch show-ref sparse-checkout stash status stripspace submodule switch "
    "symbolic-ref tag update-index update-ref var verify-commit verify-pack verify-tag version "
    "whatchanged worktree write-tree maintenance backfill"
).split())


def git_key(spec: str | None) -> None:
    """Unprovable unless the configuration key in ``spec`` (``KEY[=VALUE]``) is one that runs nothing."""
    key = (spec or "").split("=", 1)[0].lower()
    if not re.fullmatch(_GIT_SAFE_KEYS, key):
        raise Unprovable(f"git -c {key}: configuration that can make git run another program (or that "
                         "is not known here)")


def git_subcommand(words: list[Word]) -> int:
    """Where git's sub-command is in ``words`` (``len(words)`` when there is none)."""
    return parse_options(words, 1, _GIT, "git").rest


def git_globals(words: list[Word]) -> list[tuple[str, str | None]]:
    """git's own options (before its sub-command), as git reads them."""
    return list(parse_options(words, 1, _GIT, "git").options)


def git_directories(words: list[Word]) -> list[str]:
    """The directories git's ``-C`` options move to, in order."""
    return [v for v in parse_options(words, 1, _GIT, "git").values("-C") if v is not None]


def git(words: list[Word], open_args: bool = False) -> Outcome:
    """git runs no other program the line shows; what it could run from its arguments is refused."""
    parsed = parse_options(words, 1, _GIT, "git")
    for name, value in parsed.options:
        if name == "-c" or name == "--config-env":
            git_key(value)
        elif name == "--exec-path" and value is not None:
            raise Unprovable("git --exec-path=DIR runs git's helper programs from another folder")
    if parsed.rest >= len(words):
        if open_args:
            raise Unprovable("git's sub-command comes from input")
        return NOTHING
    sub = words[parsed.rest]
    if not sub.literal:
        raise Unprovable(f"git: the sub-command {sub.text!r} is not known before the shell runs")
    rest = [w.text for w in words[parsed.rest + 1:]]
    if sub.text in _GIT_RUNS or sub.text not in _GIT_BUILTIN:
        raise Unprovable(f"git {sub.text} runs an alias, a helper program or a tool the line does not show")
    if (sub.text == "submodule" and "foreach" in rest) or (sub.text == "bisect" and "run" in rest) or \
            (sub.text == "rebase" and any(a in ("-x", "--exec", "-i", "--interactive") or
                                          a.startswith(("--exec=", "-x")) for a in rest)):
        raise Unprovable(f"git {sub.text} runs a command given in its arguments")
    if any(not w.literal for w in words[parsed.rest + 1:]) and sub.text in ("submodule", "bisect", "rebase"):
        raise Unprovable(f"git {sub.text}: an argument is not known before the shell runs")
    return NOTHING




_TIMEOUT = Grammar(flags="v", valued="ks", long_flags=("foreground", "preserve-status", "verbose", "help",
                                                       "version"),
                   long_valued=("kill-after", "signal"))

#: The runner table: basename -> its model. ``exec``, ``command``, ``builtin`` and ``time`` are the
#: shell's own and only apply when they are the command word (shell_model knows that).
RUNNERS: dict[str, Callable[[list[Word]], Outcome]] = {
    "env": _env,
    "nice": _nice,
    "nohup": _simple(Grammar(long_flags=("help", "version"))),
    "timeout": _simple(_TIMEOUT, operands=1),
    "setsid": _setsid,
    "stdbuf": _simple(Grammar(valued="ioe", long_valued=("input", "output", "error"),
                              long_flags=("help", "version"))),
    "find": _find,
    "xargs": _xargs,
    "sudo": _sudo,
    "doas": _doas,
    "flock": _flock,
    "ionice": _with_pid_mode(Grammar(flags="thV", valued="cnpPu",
                                     long_flags=("ignore", "help", "version"),
                                     long_valued=("class", "classdata", "pid", "pgid", "uid")),
                             ("-p", "-P", "-u", "--pid", "--pgid", "--uid"), 0, "ionice"),
    "taskset": _with_pid_mode(Grammar(flags="apchV", long_flags=("all-tasks", "pid", "cpu-list", "help",
                                                                  "version")),
                              ("-p", "--pid"), 1, "taskset"),
    "chrt": _with_pid_mode(Grammar(flags="abdfiphmorRvV", valued="DPT",
                                   long_flags=("all-tasks", "batch", "deadline", "fifo", "idle", "pid", "help",
                                               "max", "other", "rr", "reset-on-fork", "verbose", "version"),
                                   long_valued=("sched-runtime", "sched-period", "sched-deadline")),
                           ("-p", "--pid", "-m", "--max"), 1, "chrt"),
    "nsenter": _nsenter,
    "unshare": _unshare,
    "sh": _shell,
    "bash": _shell,
    "dash": _shell,
    "git": git,
    "prlimit": _prlimit,
    "setarch": _setarch,
    "linux32": _setarch,
    "linux64": _setarch,
    "setpriv": _setpriv,
    # GNU time(1) as a program (a quoted or path-named 'time'); -o writes its report to a file.
    "time": _simple(Grammar(flags="apqvV", valued="fo", long_flags=("append", "portability", "quiet",
                                                                     "verbose", "help", "version"),
                            long_valued=("format", "output"))),
}
#: The shell's own runners (no program file of that name runs when they are the command word).
SHELL_RUNNERS: dict[str, Callable[[list[Word]], Outcome]] = {
    "exec": _exec,
    "command": _command_builtin,
    "time": _time,
}

__all__ = ["DEFAULT_PATH", "SHELL_DEFAULT_PATH", "Inner", "Outcome", "RUNNERS", "SHELL_RUNNERS", "changes_lookup",
           "git", "git_directories", "git_globals", "git_key", "git_subcommand", "login_shell"]
