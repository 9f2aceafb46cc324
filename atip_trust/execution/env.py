"""The environment a verified tool runs with: the policy's ``exec.env``, for every runner.

``atip-trust exec``, the discovery probe runner and the bridge's call loop all start verified bytes;
verifying those bytes means little if the environment makes the process load others. The dynamic
loader reads ``LD_PRELOAD`` / ``LD_AUDIT`` / ``LD_LIBRARY_PATH`` (ld.so(8)), macOS's dyld the
``DYLD_*`` variables, and interpreters their own start-up and module-path variables (python(1)
``PYTHONSTARTUP``/``PYTHONPATH``, perlrun(1) ``PERL5OPT``/``PERL5LIB``, node ``NODE_OPTIONS``, ruby
``RUBYOPT``, bash(1) ``BASH_ENV``/``ENV`` and exported ``BASH_FUNC_*`` functions). Other variables
name a *command* the tool runs on its own: git(1) "ENVIRONMENT VARIABLES" (``GIT_SSH_COMMAND``,
``GIT_PAGER``, ``GIT_EDITOR``, ``GIT_EXTERNAL_DIFF``, ``GIT_EXEC_PATH``, and ``GIT_CONFIG_COUNT`` /
``GIT_CONFIG_KEY_n`` / ``GIT_CONFIG_VALUE_n`` / ``GIT_CONFIG_PARAMETERS``, which set any configuration,
``core.sshCommand`` and ``alias.x=!cmd`` included), the pagers and editors POSIX and man(1) name
(``PAGER``, ``EDITOR``, ``VISUAL``, ``MANPAGER``), less(1)'s input preprocessor ``LESSOPEN``, the
askpass helpers, GNU tar's ``TAR_OPTIONS`` (``--to-command``). A verified ``git`` told to run
``GIT_SSH_COMMAND`` runs bytes nobody verified (issue 22). Both kinds are dropped in every mode unless
a policy names them in ``exec.env.allow`` (architecture.md principle 6: verify the bytes you run).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from atip_trust.policy.model import EnvRule, Policy

#: Variables that make a process load or run code other than its own (exact names).
INJECTION_NAMES: frozenset[str] = frozenset({
    # the shell: startup files, exported functions, the word splitter, xtrace prompt
    "BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "PS4", "PROMPT_COMMAND", "IFS", "CDPATH", "GLOBIGNORE",
    "ZDOTDIR",
    # Python
    "PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "PYTHONUSERBASE", "PYTHONINSPECT",
    "PYTHONBREAKPOINT", "PYTHONWARNINGS", "PYTHONEXECUTABLE", "PYTHONPLATLIBDIR", "PYTHONSAFEPATH",
    # Perl, Ruby, Node, Lua, Tcl, Java
    "PERL5LIB", "PERLLIB", "PERL5OPT", "PERL5DB", "RUBYOPT", "RUBYLIB", "NODE_OPTIONS", "NODE_PATH",
    "LUA_INIT", "LUA_PATH", "LUA_CPATH", "TCLLIBPATH", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS",
    "JDK_JAVA_OPTIONS", "CLASSPATH",
    # glibc: modules loaded by iconv and by OpenSSL's config
    "GCONV_PATH", "OPENSSL_CONF", "OPENSSL_ENGINES", "HOSTALIASES", "LOCPATH", "NLSPATH",
})
#: Prefixes of such variables: the dynamic loaders' whole namespaces, bash's exported functions.
INJECTION_PREFIXES: tuple[str, ...] = ("LD_", "DYLD_", "BASH_FUNC_", "LUA_INIT_", "LUA_PATH_",
                                       "LUA_CPATH_")
#: Variables that name a command the tool itself runs (module docstring; exact names).
COMMAND_NAMES: frozenset[str] = frozenset({
    # git(1) ENVIRONMENT VARIABLES: programs git starts, and where it finds its own (GIT_EXEC_PATH)
    "GIT_SSH", "GIT_SSH_COMMAND", "GIT_PAGER", "GIT_EDITOR", "GIT_SEQUENCE_EDITOR", "GIT_EXTERNAL_DIFF",
    "GIT_EXEC_PATH", "GIT_ASKPASS", "GIT_PROXY_COMMAND", "GIT_TEMPLATE_DIR",
    # pagers, editors, browsers, askpass helpers (POSIX, man(1), less(1), ssh(1), sudo(8))
    "PAGER", "MANPAGER", "EDITOR", "VISUAL", "BROWSER", "LESSOPEN", "LESSCLOSE", "SSH_ASKPASS",
    "SUDO_ASKPASS",
    # remote shells of rsync and cvs; GNU tar's default options (--to-command, --use-compress-program)
    "RSYNC_RSH", "CVS_RSH", "TAR_OPTIONS",
})
#: Prefixes of such variables: git's environment configuration (GIT_CONFIG_COUNT, GIT_CONFIG_KEY_n,
#: GIT_CONFIG_VALUE_n, GIT_CONFIG_PARAMETERS, GIT_CONFIG_GLOBAL, GIT_CONFIG_SYSTEM, GIT_CONFIG).
COMMAND_PREFIXES: tuple[str, ...] = ("GIT_CONFIG",)
#: What ``scrub`` keeps besides ``allow``: what a command-line tool needs to find its user and locale.
SCRUB_KEEP: tuple[str, ...] = ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LC_*", "TZ",
                               "TMPDIR")


def is_injection(name: str) -> bool:
    """True for a variable that loads or runs foreign code in the process (module docstring)."""
    return name in INJECTION_NAMES or name.startswith(INJECTION_PREFIXES)


def is_command_running_variable(name: str) -> bool:
    """True for a variable that names a command (or configuration that names one) the tool runs by
    itself: ``GIT_SSH_COMMAND``, ``GIT_CONFIG_*``, ``PAGER``, ``EDITOR`` ... (module docstring). The
    loader and interpreter variables are :func:`is_injection`; :func:`changes_what_runs` is either."""
    return name in COMMAND_NAMES or name.startswith(COMMAND_PREFIXES)


def changes_what_runs(name: str) -> bool:
    """True for every variable ``exec_environment`` drops unless the policy names it: one that makes
    the process load foreign code (:func:`is_injection`) or run a command of its own choosing
    (:func:`is_command_running_variable`). An assignment ``NAME=value prog`` to such a name changes
    which bytes a verified ``prog`` runs."""
    return is_injection(name) or is_command_running_variable(name)


def _matches(name: str, patterns: tuple[str, ...]) -> bool:
    return any(name == p or (p.endswith("*") and name.startswith(p[:-1])) for p in patterns)


def named_explicitly(name: str, patterns: tuple[str, ...]) -> bool:
    """An injection or command variable is kept only when named exactly (or by a prefix pattern
    longer than a bare ``*``): ``allow: ["*"]`` never lets ``LD_PRELOAD`` through."""
    return any(name == p or (p.endswith("*") and len(p) > 1 and name.startswith(p[:-1]))
               for p in patterns)


def _apply(rule: EnvRule, env: dict[str, str]) -> dict[str, str]:
    if rule.mode == "pass":
        return env
    keep = rule.allow if rule.mode == "allowlist" else SCRUB_KEEP + rule.allow
    return {k: v for k, v in env.items() if _matches(k, keep)}


def injection_allowed(policy: Policy, name: str) -> bool:
    """True when every layer that states ``exec.env`` names ``name`` in its ``allow`` list (and at
    least one does): the only way an injection or command variable reaches a verified tool."""
    rules = policy.exec_settings.env
    return bool(rules) and all(named_explicitly(name, r.allow) for r in rules)


def exec_environment(policy: Policy, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment a verified tool is started with under ``policy``'s ``exec.env``.

    ``environ`` defaults to this process's. Each layer's filter applies in turn (pass / scrub /
    allowlist), so a variable survives only where every layer that speaks keeps it; injection
    variables and command variables (:func:`changes_what_runs`) are dropped unless every such layer
    names them in ``allow``.
    """
    env = dict(os.environ if environ is None else environ)
    for rule in policy.exec_settings.env:
        env = _apply(rule, env)
    return {k: v for k, v in env.items() if not changes_what_runs(k) or injection_allowed(policy, k)}


def dropped_names(policy: Policy, environ: Mapping[str, str] | None = None) -> list[str]:
    """The variable names :func:`exec_environment` leaves out (for reasons and audit lines)."""
    before = dict(os.environ if environ is None else environ)
    after = exec_environment(policy, before)
    return sorted(k for k in before if k not in after)


__all__ = ["COMMAND_NAMES", "COMMAND_PREFIXES", "INJECTION_NAMES", "INJECTION_PREFIXES", "changes_what_runs",
           "dropped_names", "exec_environment", "injection_allowed", "is_command_running_variable",
           "is_injection"]
