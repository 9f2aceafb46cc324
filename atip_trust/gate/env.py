"""The environment a verified tool runs with: the policy's ``exec.env``, for every runner.

``atip-trust exec``, the discovery probe runner and the bridge's call loop all start verified bytes;
verifying those bytes means little if the environment makes the process load others. The dynamic
loader reads ``LD_PRELOAD`` / ``LD_AUDIT`` / ``LD_LIBRARY_PATH`` (ld.so(8)), macOS's dyld the
``DYLD_*`` variables, and interpreters their own start-up and module-path variables (python(1)
``PYTHONSTARTUP``/``PYTHONPATH``, perlrun(1) ``PERL5OPT``/``PERL5LIB``, node ``NODE_OPTIONS``, ruby
``RUBYOPT``, bash(1) ``BASH_ENV``/``ENV`` and exported ``BASH_FUNC_*`` functions). Those are
dropped in every mode unless a policy names them in ``exec.env.allow`` (architecture.md principle 6:
verify the bytes you run).
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
#: What ``scrub`` keeps besides ``allow``: what a command-line tool needs to find its user and locale.
SCRUB_KEEP: tuple[str, ...] = ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LC_*", "TZ",
                               "TMPDIR")


def is_injection(name: str) -> bool:
    """True for a variable that loads or runs foreign code in the process (module docstring)."""
    return name in INJECTION_NAMES or name.startswith(INJECTION_PREFIXES)


def _matches(name: str, patterns: tuple[str, ...]) -> bool:
    return any(name == p or (p.endswith("*") and name.startswith(p[:-1])) for p in patterns)


def named_explicitly(name: str, patterns: tuple[str, ...]) -> bool:
    """An injection variable is kept only when named exactly (or by a prefix pattern longer than
    a bare ``*``): ``allow: ["*"]`` never lets ``LD_PRELOAD`` through."""
    return any(name == p or (p.endswith("*") and len(p) > 1 and name.startswith(p[:-1]))
               for p in patterns)


def _apply(rule: EnvRule, env: dict[str, str]) -> dict[str, str]:
    if rule.mode == "pass":
        return env
    keep = rule.allow if rule.mode == "allowlist" else SCRUB_KEEP + rule.allow
    return {k: v for k, v in env.items() if _matches(k, keep)}


def injection_allowed(policy: Policy, name: str) -> bool:
    """True when every layer that states ``exec.env`` names ``name`` in its ``allow`` list (and at
    least one does): the only way an injection variable reaches a verified tool."""
    rules = policy.exec_settings.env
    return bool(rules) and all(named_explicitly(name, r.allow) for r in rules)


def exec_environment(policy: Policy, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment a verified tool is started with under ``policy``'s ``exec.env``.

    ``environ`` defaults to this process's. Each layer's filter applies in turn (pass / scrub /
    allowlist), so a variable survives only where every layer that speaks keeps it; injection
    variables (:func:`is_injection`) are dropped unless every such layer names them in ``allow``.
    """
    env = dict(os.environ if environ is None else environ)
    for rule in policy.exec_settings.env:
        env = _apply(rule, env)
    return {k: v for k, v in env.items() if not is_injection(k) or injection_allowed(policy, k)}


def dropped_names(policy: Policy, environ: Mapping[str, str] | None = None) -> list[str]:
    """The variable names :func:`exec_environment` leaves out (for reasons and audit lines)."""
    before = dict(os.environ if environ is None else environ)
    after = exec_environment(policy, before)
    return sorted(k for k in before if k not in after)


__all__ = ["INJECTION_NAMES", "INJECTION_PREFIXES", "dropped_names", "exec_environment",
           "injection_allowed", "is_injection"]
