"""Programs that run code they are given, which the agent shell gate does not model.

The shell gate (agents/runners.py) unwraps the runners it models (``env``, ``sudo``, ``xargs``,
``find -exec``, ``sh -c``, git's command-running configuration...) and admits what they run. The
programs here run code too (a script, a Makefile recipe, a remote command, a debugger's target) but
what they run is not read from the line: the gate admits them with their words like any program. A
policy that allows one of them with a trailing ``*`` allows whatever it runs, so ``policy check`` and
``policy explain`` say so (issue 22).
"""

from __future__ import annotations

import re

#: (sed is not here: its table, facts/program_tables.py, reads its script and refuses the commands that run
#: the pattern space or touch files.)
UNMODELLED = frozenset((
    "python python2 python3 pypy pypy3 node nodejs deno bun perl ruby php lua luajit tclsh wish Rscript "
    "osascript awk gawk mawk nawk make gmake cmake ninja npm npx yarn pnpm pip pip3 uv uvx pipx "
    "poetry cargo go java dotnet pwsh powershell zsh ksh mksh ash fish csh tcsh busybox ssh scp rsync "
    "watch parallel strace ltrace gdb lldb valgrind perf chroot runuser su script expect tmux screen at "
    "batch crontab systemd-run docker podman kubectl vim vi nvim emacs less more man ed ex xdg-open "
    "open rr entr nodemon tox nox pytest bazel gradle mvn ant sbt rake bundle composer terraform "
    # Runners of a command the gate does not unwrap (issue 32: "and the rest of the class").
    "numactl cgexec firejail bwrap proot fakeroot fakechroot catchsegv nocache cpulimit trickle torsocks "
    "proxychains proxychains4 tsocks sg newgrp pkexec unbuffer xvfb-run flatpak-spawn dbus-run-session"
).split())
_VERSIONED = re.compile(r"(python|pypy|ruby|perl|php|node|lua)[0-9.]+")


def is_unmodelled_runner(name: str) -> bool:
    """``name`` (a program name or path) runs code it is given and the shell gate does not model it
    (``python3.12`` counts as python)."""
    base = name.rsplit("/", 1)[-1]
    return base in UNMODELLED or bool(_VERSIONED.fullmatch(base))


__all__ = ["UNMODELLED", "is_unmodelled_runner"]
