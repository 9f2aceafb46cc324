"""``policy explain``: what a policy allows, in plain words."""

from __future__ import annotations

from atip_trust.facts.program_tables import has_table
from atip_trust.facts.programs import is_unmodelled_runner
from atip_trust.facts.report import TrustLevel
from atip_trust.policy.compose import local_allow_stands
from atip_trust.policy.model import CommandRule, Policy
from atip_trust.policy.verifiers import verifier_rules


def _rule(r: CommandRule) -> str:
    cond = r.conditions("the tool is at least {}", "it is signed by {}")
    where = f" [{r.source}]"
    return f"{r.text}" + (f" — only when {' and '.join(cond)}" if cond else "") + where


def explain_policy(policy: Policy) -> list[str]:
    """What ``policy`` does, in lines a person reads (``atip-trust policy explain``), one step a part."""
    lines: list[str] = []
    for step in (_header, _anchors, _builders_and_sources, _requirements_and_tools, _rules, _defaults):
        lines.extend(step(policy))
    lines.extend(f"Note: {n}" for n in policy.notes)
    return lines


def _header(policy: Policy) -> list[str]:
    """The policy, its mode, and what is always denied."""
    lines: list[str] = []
    name = policy.name or "policy"
    lines.append(f"{name} ({policy.digest}), mode {policy.mode}"
                 + {"enforce": ": decisions are enforced.",
                    "warn": ": denials are reported but allowed.",
                    "audit": ": decisions are only logged, everything is allowed."}[policy.mode])
    lines.append("Tools whose bytes show tampering (COMPROMISED) are always denied.")
    return lines


def _anchors(policy: Policy) -> list[str]:
    """Who and what may vouch: signers, verifiers, keys, the log requirement, trusted roots."""
    lines: list[str] = []
    if policy.signers_declared:
        if policy.signers:
            lines.append("Trusted signers (regexps match the whole string):")
            lines.extend(f"  - {s.describe()}" for s in policy.signers)
        else:
            lines.append("Trusted signers: none — no signature can make a tool VERIFIED.")
    else:
        lines.append("Trusted signers: none stated; identity flags must name them"
                     + (", or a VSA verifier below vouches." if verifier_rules(policy) else ", or nothing verifies."))
    lines.extend(_verifiers(policy))
    if policy.public_keys:
        lines.append("Trusted public keys (a --key counts only when its sha256 SPKI digest is listed):")
        lines.extend(
            "  - " + " ".join(x for x in ((k.name or ""), (k.path or ""), (k.digest or "")) if x)
            for k in policy.public_keys
        )
    if policy.verifiers:
        lines.append("VSA verifiers whose summaries count: " + ", ".join(
            f"{v.entry.get('id')} [{v.source}]" for v in policy.verifiers))
    if policy.org_fixes_anchors:
        lines.append("The org policy fixes the trust anchors: local layers and flags can only narrow them "
                     "(docs/trust-roots.md, \"The anchor set\").")
    lines.append("Transparency log entry: " + {True: "required", False: "not required (timestamps may stand)",
                                               None: "as the trusted root implies (required when it lists a log)"}
                 [policy.tlog_required] + ".")
    roots = policy.trusted_roots or ["production"]
    lines.append("Sigstore trusted root: " + ", ".join(
        {"production": "public-good (embedded)", "staging": "staging (embedded)"}.get(r, r) for r in roots))
    return lines


def _builders_and_sources(policy: Policy) -> list[str]:
    """Trusted builders (the SLSA level comes from them), sources and shim registries."""
    lines: list[str] = []
    if policy.trusted_builders:
        lines.append("Trusted builders (SLSA level comes from this list, never from the provenance):")
        for b in policy.trusted_builders:
            extra = "; ".join(x for x in (b.name, f"level published at {b.source}" if b.source else None,
                                          f"from {b.origin}" if b.origin else None) if x)
            lines.append(f"  - level {b.level}: {b.id}" + (f" ({extra})" if extra else ""))
            proof = "; ".join(
                x for x in (
                    f"issuer {b.signer_issuer}" if b.signer_issuer else None,
                    "build signer " + " or ".join(b.signer_workflow) if b.signer_workflow else None,
                    f"runner_environment {b.runner_environment}" if b.runner_environment else None,
                    "key " + " or ".join(b.signer_key) if b.signer_key else None,
                ) if x
            )
            lines.append("      only when signed with " + proof if proof and (b.signer_workflow or
                         b.runner_environment or b.signer_key) else
                         "      no level: the entry does not say how its signature proves the builder")
    if policy.sources:
        lines.append("Allowed source repositories:")
        lines.extend(f"  - {s.repository} refs {', '.join(s.refs) or 'any'}" for s in policy.sources)
    for reg in policy.registries:
        lines.append(f"Shim registry {reg.name or reg.url} (priority {reg.priority}, {reg.mode}), "
                     f"shims signed by: " + ("; ".join(s.describe() for s in reg.signers) or "nobody"))
    return lines


def _requirements_and_tools(policy: Policy) -> list[str]:
    """Requirements, tool lists, delegation, and local allow rules the org ignores."""
    lines: list[str] = []
    req = policy.requirements
    if req.min_trust_level is not None:
        lines.append(f"Every tool must be at least {req.min_trust_level.name}.")
    if req.provenance_required:
        lines.append("Valid SLSA provenance is required.")
    if req.min_slsa_level:
        lines.append(f"SLSA Build level {req.min_slsa_level} or higher is required.")
    if req.metadata_sources is not None:
        lines.append("Metadata must come from: " + (", ".join(req.metadata_sources) or "nowhere"))
    if req.signature_threshold:
        lines.append(f"At least {req.signature_threshold} distinct trusted signers must have signed.")
    for t in policy.tool_deny:
        lines.append(f"Denied tool: {t.name or ''}{' with digest ' + t.digest if t.digest else ''} [{t.source}]")
    for source, allow in policy.tool_allowlists:
        lines.append(f"Only these tools may run ({source} allowlist, a filter: tools.allow): "
                     + ", ".join(f"{t.name or '*'}{'@' + t.digest if t.digest else ''}" for t in allow))
        lines.append("  A tool on this list is not allowed by it: it still needs a permission (an allow rule "
                     "in permissions.allow, or verified read-only metadata); every other tool is denied.")
    for source, tools in policy.delegation_allowlists:
        lines.append(f"Delegation ({source}): only {', '.join(tools) or 'no tools'}.")
    for cls in policy.effect_restrictions:
        lines.append(f"Delegation forbids the {cls} effect (unknown or unverified counts as present).")
    if not local_allow_stands(policy.layers):
        lines.append("Only the org policy's allow rules count (permissions.localAllow false): allow rules, "
                     "tools.allow digests and allowVerifiedReadOnly of other layers are ignored.")
    if policy.ignored_allow_rules:
        lines.append("Allow rules ignored (the org policy sets permissions.localAllow false: only its own "
                     "allow rules count):")
        lines.extend(f"  - {r}" for r in policy.ignored_allow_rules)
    return lines


def _rules(policy: Policy) -> list[str]:
    """Command rules and capability gates."""
    lines: list[str] = []
    for title, rules in (("Denied", policy.deny_rules), ("Asked", policy.ask_rules),
                         ("Allowed", policy.allow_rules)):
        if rules:
            lines.append(f"{title} commands:")
            lines.extend(f"  - {_rule(r)}" for r in rules)
    if policy.gates:
        lines.append("Capability gating (effects count as safe only when verified metadata says so):")
        for cls, g in sorted(policy.gates.items()):
            needs = f"needs {g.min_trust_level.name}, otherwise {g.below}" \
                if g.min_trust_level > TrustLevel.COMPROMISED else ""
            always = f"{g.always} at any trust level" if g.always else ""
            lines.append(f"  - {cls}: {'; '.join(x for x in (needs, always) if x)}")
    return lines


def _defaults(policy: Policy) -> list[str]:
    """What happens to anything else; audit, warnings and waivers."""
    lines: list[str] = []
    d = policy.defaults
    if d.allow_verified_read_only:
        lines.append(f"A command that verified metadata declares read-only is allowed for "
                     f"{d.read_only_min_trust_level.name} tools.")
    lines.append(f"Anything else: {'ask (deny when no one can answer)' if d.no_match == 'ask' else 'deny'}.")
    lines.append({"passthrough": "Agent shell hooks: a program this policy does not name gets no opinion (the "
                                 "agent's own permissions decide); a tampered tool is still denied.",
                  "ask": "Agent shell hooks: a program this policy does not name is asked.",
                  "deny": "Agent shell hooks: a program this policy does not name is denied."}[policy.hooks_unlisted])
    lines.extend(_audit(policy))
    lines.extend(f"Warning: {w}" for w in runner_warnings(policy))
    lines.extend(f"Warning: {w}" for w in table_warnings(policy))
    for w in policy.waivers:
        lines.append(f"Waiver for {w.digest or w.tool} until {w.expires.isoformat()}: {w.reason}")
    return lines


def _verifiers(policy: Policy) -> list[str]:
    """``trust.verifiers`` (docs/vsa.md): who may vouch for a tool with a VSA, and on what terms."""
    rules = verifier_rules(policy)
    if not rules:
        return []
    out = ["VSA verifiers (a PASSED VSA of the tool's digest from one of these makes it VERIFIED; a FAILED "
           "one is evidence of failure):"]
    for v in rules:
        uris = "any resource" if v.resource_uris is None else "resources " + ", ".join(v.resource_uris)
        policies = "" if v.policy_digests is None else "; policies " + ", ".join(v.policy_digests)
        out.append(f"  - {v.describe()}: level >= {v.min_level}, at most {v.max_age_text} old, {uris}"
                   f"{policies} [{v.source}]")
    return out


def _audit(policy: Policy) -> list[str]:
    """The ``audit`` settings as they apply: which log, and whether --audit-log / --no-audit may change it."""
    log = policy.audit_log
    where = (f"Audit log: {log}" if log else "Audit log: the user state directory's audit.jsonl (or --audit-log)")
    if log and policy.audit_log_pinned:
        where += " (set by the org policy: a different --audit-log is refused)"
    required = ("every admission must leave an audit line: --no-audit is refused (audit.required)"
                if policy.audit_required else "--no-audit turns the line off")
    return [f"{where}; {required}."]


def runner_warnings(policy: Policy) -> list[str]:
    """Allow rules ending in ``*`` whose program runs code it is given and that the agent shell gate
    does not unwrap (facts/programs.py): allowing it allows whatever it runs."""
    out: list[str] = []
    for rule in policy.allow_rules:
        first = rule.first_word
        if first is not None and rule.kind in ("prefix", "wildcard") and rule.pattern.rstrip().endswith("*") \
                and is_unmodelled_runner(first):
            out.append(f"allow rule {rule.text!r} [{rule.source}] lets {first} run whatever it is given "
                       f"(a script, a command string, a build recipe): the shell gate cannot see inside it, so "
                       "this allows every program it runs")
    return out


def table_warnings(policy: Policy) -> list[str]:
    """Allow rules over a program that has no table of what it may be told (facts/program_tables.py,
    issue 32): the shell gate cannot tell whether a variable or an option given to it makes it run another
    program. Programs that run whatever they are given are warned about by :func:`runner_warnings`."""
    out: list[str] = []
    seen: set[str] = set()
    for rule in policy.allow_rules:
        first = rule.first_word
        if first is None or "*" in first or first in seen or has_table(first) or is_unmodelled_runner(first):
            continue
        seen.add(first)
        out.append(f"allow rule {rule.text!r} [{rule.source}] covers {first}, whose table of the variables and "
                   "options known not to make it run another program is not written (docs/agents.md): the "
                   "shell gate admits it with its words but cannot tell what they make it run")
    return out


__all__ = ["explain_policy", "runner_warnings", "table_warnings"]
