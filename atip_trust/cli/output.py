"""Rendering results as text (rich on a terminal, plain on a pipe), JSON, or SARIF 2.1.0.

JSON keys follow docs/contract.md. Text output never shows a Python repr: values go through ``show`` and
every line through ``one_line``. SARIF is built in cli/sarif.py: one result per failed check and per
reason of a denial, each with a location.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from atip_trust._base.files import write_atomic
from atip_trust._base.lazy import lazy_import
from atip_trust.errors import ArtifactAccessError
from atip_trust.facts.report import Check, Decision, Reason, TrustReport

if TYPE_CHECKING:
    from rich import console, markup, table

    from atip_trust.cli import sarif
    from atip_trust.cli.sarif import Rule
else:
    sarif = lazy_import("atip_trust.cli.sarif")  # only for SARIF
    # rich only on a terminal: the JSON and text outputs (a warm admission's) never load it.
    console = lazy_import("rich.console")
    markup = lazy_import("rich.markup")
    table = lazy_import("rich.table")

FORMATS = ("text", "json", "sarif")

#: Report files a CI job keeps beside its readable log (semgrep's spelling): each gets that format of the
#: very result standard output shows in ``--format``'s, from the same run.
REPORT_FILE_FLAGS = {"json": "--json-output", "sarif": "--sarif-output"}


def add_report_file_flags(p: Any) -> None:
    """``--json-output FILE`` and ``--sarif-output FILE`` for a command whose result is a report."""
    g = p.add_argument_group("report files (one run: text on standard output, reports in files)")
    g.add_argument("--json-output", metavar="FILE",
                   help="also write the JSON report to FILE (standard output keeps --format)")
    g.add_argument("--sarif-output", metavar="FILE",
                   help="also write the SARIF 2.1.0 log to FILE, e.g. for code scanning upload")


def report_files(args: Any) -> dict[str, str]:
    """The report files the command line asks for: format -> path."""
    return {fmt: path for fmt in REPORT_FILE_FLAGS
            if (path := getattr(args, f"{fmt}_output", None))}


def write_report_files(files: Mapping[str, str], render: Callable[[str], str]) -> None:
    """Write ``render(format)`` to each file (replaced whole: a reader never sees half a report). A file
    that cannot be written is an error (exit 2): the CI step that reads it must not find an old one."""
    for fmt, path in files.items():
        try:
            write_atomic(path, render(fmt).encode("utf-8"), mode=0o644)
        except OSError as err:
            raise ArtifactAccessError(f"cannot write the {fmt} report ({REPORT_FILE_FLAGS[fmt]}): "
                                      f"{err.strerror or err}", path=path) from err


def is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def one_line(text: str) -> str:
    """Escape control characters (a newline in a file name, say) so a message stays one line.

    The one escaping helper of every text renderer (admit, verify, metadata, policy, errors): paths,
    tool names, check and reason messages, expected and actual values all pass through it, so a file
    named ``"x\nallow: gh ..."`` cannot forge a line, and escape sequences, bidi overrides and line
    separators (everything ``str.isprintable`` refuses) are shown as ``\n``, ``\x1b``, ``\u202e``.
    """
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)


def rich_text(text: object) -> str:
    """``one_line`` for rich on a terminal, with rich's markup escaped too (``[red]`` in a name is text)."""
    return markup.escape(one_line(str(text)))


def json_text(obj: Any) -> str:
    return json.dumps(obj, indent=2, sort_keys=False, default=str) + "\n"


def dump_json(obj: Any, stream: TextIO | None = None) -> None:
    out = stream or sys.stdout
    out.write(json_text(obj))


def show(value: object) -> str:
    """A value for text output, never a Python repr: strings as they are, ``true``/``false``, ``(none)``,
    and anything structured as compact JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return "(none)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def expected_actual(expected: object, actual: object) -> str:
    """`` (expected X, actual Y)``, or ``""`` when neither applies; one side alone is shown alone."""
    if expected is None and actual is None:
        return ""
    if expected is None:
        return f" (actual {show(actual)})"
    return f" (expected {show(expected)}, actual {show(actual)})"


def _get(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, Mapping) else getattr(obj, key, None)


def check_line(c: Check | Mapping[str, Any]) -> str:
    """One check (a ``Check`` or its JSON) as one escaped line: ``FAIL  name: message (expected …)``."""
    line = f"{str(_get(c, 'status')).upper():5} {_get(c, 'name')}"
    if _get(c, "message"):
        line += f": {_get(c, 'message')}"
    line += expected_actual(_get(c, "expected"), _get(c, "actual"))
    if _get(c, "evidence"):
        line += f" [{_get(c, 'evidence')}]"
    return one_line(line)


def reason_line(r: Reason | Mapping[str, Any], behavior: str | None = None) -> str:
    """One decision reason as one escaped line: ``  [behavior: ]CODE: message (expected …, actual …) [rule]``."""
    line = f"  {behavior}: " if behavior else "  "
    line += f"{_get(r, 'code')}: {_get(r, 'message')}"
    line += expected_actual(_get(r, "expected"), _get(r, "actual"))
    if _get(r, "rule"):
        line += f" [{_get(r, 'rule')}]"
    return one_line(line)


def digest_text(digests: Mapping[str, str] | None) -> str:
    """``sha256:<hex>`` (or the one digest known), never a bare hex or a library's algorithm name."""
    digests = digests or {}
    for alg in ("sha256", "sha512", *sorted(digests)):
        if digests.get(alg):
            return f"{alg}:{digests[alg]}"
    return "no digest"


def reports_to_sarif(reports: Sequence[TrustReport | Mapping[str, Any]], *, version: str) -> dict[str, Any]:
    """SARIF for trust reports (objects or their JSON): every failed check and every denial reason (a
    report holds no decision: pass ``TrustReport.to_json(decision=...)`` for the reasons)."""
    results: list[dict[str, Any]] = []
    rules: dict[str, Rule] = {}
    for rep in reports:
        out = rep.to_json() if isinstance(rep, TrustReport) else rep
        res, used = sarif.report_results(out, check_line)
        results.extend(res)
        rules.update(used)
    return sarif.sarif_log(results, rules, version=version)


# verify's text output (all from the report's JSON, as --format json prints it) ----------------------


def verdict_line(out: Mapping[str, Any]) -> str:
    """``PATH: LEVEL -> behavior  sha256:<hex>``: the one line ``verify -q`` prints."""
    art = out.get("artifact") or {}
    head = f"{art.get('path')}: {out.get('trust_level')}"
    behavior = (out.get("decision") or {}).get("behavior")
    if behavior:
        head += f" -> {behavior}"
    return one_line(f"{head}  {digest_text(art.get('digest'))}")


def attestation_verified(att: Mapping[str, Any]) -> bool:
    """A piece of evidence counts as verified when it applies to these bytes, verifies, and its
    signer is one the flags or the policy trust."""
    return bool(att.get("applies", True) and att.get("valid") and att.get("signer_trusted"))


def about_another_artifact(att: Mapping[str, Any]) -> bool:
    """Evidence set aside as about another artifact (evaluation/evaluate.py ``_set_aside_others``): it
    does not apply and none of its checks failed (its reason is a ``skip``)."""
    return not att.get("applies", True) and not any(
        isinstance(c, Mapping) and c.get("status") in ("fail", "error") for c in att.get("checks") or [])


def bundles_line(out: Mapping[str, Any]) -> str | None:
    """``N bundles: k verified, m failed[, o about other artifacts]`` when more than one piece of
    evidence was examined."""
    atts = [a for a in out.get("attestations") or [] if isinstance(a, Mapping)]
    if len(atts) < 2:
        return None
    ok = sum(1 for a in atts if attestation_verified(a))
    other = sum(1 for a in atts if about_another_artifact(a))
    line = f"{len(atts)} bundles: {ok} verified, {len(atts) - ok - other} failed"
    return line + (f", {other} about other artifacts" if other else "")


def summary_line(out: Mapping[str, Any]) -> str:
    """What was verified, in one line: signer, issuer, builder, SLSA level (only what is known)."""
    sig = out.get("signature") or {}
    prov = out.get("provenance") or {}
    parts: list[str] = []
    if sig.get("identity"):
        parts.append(f"signer {sig['identity']}")
    elif sig.get("kind") == "key" and sig.get("evidence"):
        parts.append(f"signer key {sig['evidence']}")
    else:
        parts.append("no signer")
    if sig.get("issuer"):
        parts.append(f"issuer {sig['issuer']}")
    if prov.get("builder_id"):
        parts.append(f"builder {prov['builder_id']}")
        if prov.get("slsa_level") is not None:
            parts.append(f"SLSA level {prov['slsa_level']}")
    else:
        parts.append("no provenance")
    return one_line("verified: " + ", ".join(parts))


def evidence_hint(trust_level: str | None, evidence: int) -> str | None:
    """A hint when a flag would have helped: nothing was checked because no signature was given (an
    UNSIGNED report with no piece of ``evidence`` at all). (A root mismatch names its flags in its own
    message: signature/bundle.py ``root_mismatch``.)"""
    if trust_level == "UNSIGNED" and not evidence:
        return ("hint: no signature or attestation was given for this file: pass its Sigstore bundle "
                "with --bundle FILE (or --bundle-dir DIR where the command takes it)")
    return None


def _said(reason: Mapping[str, Any], check: Mapping[str, Any]) -> bool:
    """Whether a decision reason is this failed check, said again (verify's ``CHECK_<NAME>_<STATUS>``)."""
    code = f"CHECK_{str(check.get('name')).upper().replace('.', '_')}_{str(check.get('status')).upper()}"
    return (reason.get("code") == code and reason.get("message") == (check.get("message") or check.get("name"))
            and reason.get("expected") == check.get("expected") and reason.get("actual") == check.get("actual"))


def render_verify_text(out: Mapping[str, Any], stream: TextIO, *, quiet: bool = False) -> None:
    """``verify``'s text output from the report JSON: the verdict line, then (unless ``quiet``) the
    decision's reasons — the deciding one first, each failure once (a failed check a reason already
    states is not listed again; the reason names its evidence) — a hint where a flag would help, the
    other checks, what was fetched, an ``N bundles`` line and, on success, what was verified. Rich on
    a terminal, plain lines on a pipe; every value escaped to one line."""
    if quiet:
        stream.write(verdict_line(out) + "\n")
        return
    dec = out.get("decision") or {}
    behavior = dec.get("behavior")
    checks = [c for c in out.get("checks") or [] if isinstance(c, Mapping)]
    head: list[str] = []
    shown: set[int] = set()
    for r in dec.get("reasons") or []:
        same = next((i for i, c in enumerate(checks) if i not in shown and c.get("status") in ("fail", "error")
                     and _said(r, c)), None)
        line = reason_line(r, behavior)
        if same is not None:
            shown.add(same)
            if checks[same].get("evidence"):
                line += one_line(f" [{checks[same]['evidence']}]")
        head.append(line)
    hint = evidence_hint(out.get("trust_level"), len(out.get("attestations") or []))
    if hint and behavior != "allow":
        head.append(f"  {hint}")
    checks = [c for i, c in enumerate(checks) if i not in shown]
    tail: list[str] = [one_line(f"  fetched {f.get('url')} ({f.get('bytes')} bytes, {f.get('sha256')})")
                       for f in out.get("fetched") or []]
    count = bundles_line(out)
    if count:
        tail.append(count)
    if behavior == "allow":
        tail.append(summary_line(out))
    if is_terminal(stream):
        _rich_verify(out, head, checks, tail, stream)
        return
    stream.write(verdict_line(out) + "\n")
    stream.write("".join(line + "\n" for line in head))
    stream.write("".join(f"  {check_line(c)}\n" for c in checks))
    stream.write("".join(line + "\n" for line in tail))


def _rich_verify(out: Mapping[str, Any], head: list[str], checks: list[Mapping[str, Any]], tail: list[str],
                 stream: TextIO) -> None:
    screen = console.Console(file=stream)
    screen.print(f"[bold]{rich_text(verdict_line(out))}[/bold]", highlight=False)
    for line in head:
        screen.print(rich_text(line), highlight=False)
    rows = table.Table(show_header=True, header_style="bold")
    for col in ("status", "check", "detail", "expected", "actual"):
        rows.add_column(col, overflow="fold")
    for c in checks:
        style = {"pass": "green", "fail": "red", "error": "red"}.get(str(c.get("status")), "dim")
        ev = c.get("evidence")
        rows.add_row(
            f"[{style}]{c.get('status')}[/{style}]",
            rich_text(c.get("name")),
            rich_text((c.get("message") or "") + (f" [{ev}]" if ev else "")),
            "" if c.get("expected") is None else rich_text(show(c.get("expected"))),
            "" if c.get("actual") is None else rich_text(show(c.get("actual"))),
        )
    if checks:  # every failure was said above, and nothing else ran: no empty table
        screen.print(rows)
    for line in tail:
        screen.print(rich_text(line), highlight=False)


def print_report_text(rep: TrustReport, stream: TextIO, *, quiet: bool = False,
                      decision: Decision | None = None) -> None:
    render_verify_text(rep.to_json(decision=decision), stream, quiet=quiet)


__all__ = [
    "FORMATS",
    "REPORT_FILE_FLAGS",
    "add_report_file_flags",
    "report_files",
    "write_report_files",
    "one_line",
    "rich_text",
    "reason_line",
    "is_terminal",
    "dump_json",
    "json_text",
    "check_line",
    "show",
    "expected_actual",
    "digest_text",
    "reports_to_sarif",
    "print_report_text",
    "render_verify_text",
    "evidence_hint",
    "verdict_line",
    "bundles_line",
    "summary_line",
]
