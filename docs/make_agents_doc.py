"""Write the program tables into docs/agents.md, from atip_trust/facts/program_tables.py.

The tables of what each program may be told (issue 32) are code the shell gate runs; the documentation
shows them as generated here, between the ``<!-- program-tables:begin -->`` and ``<!-- program-tables:end
-->`` marks, so they cannot drift: tests/agents/test_program_tables.py fails when the committed file
differs from what this script writes.

    python docs/make_agents_doc.py          # rewrite the tables in docs/agents.md
    python docs/make_agents_doc.py --check  # exit 1 if docs/agents.md is stale
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from atip_trust.facts.git_options import GIT_SUBCOMMANDS
from atip_trust.facts.program_tables import COMMON_ENV, TABLES, Table

OUTPUT = ROOT / "docs" / "agents.md"
BEGIN, END = "<!-- program-tables:begin -->", "<!-- program-tables:end -->"


def _cell(text: str) -> str:
    return text.replace("|", "\\|") or "—"


def _refused(t: Table) -> str:
    return "; ".join(f"`{r.option}`" + (f" after {'/'.join(r.after)}" if r.after else "") + f": {r.why}"
                     for r in t.refused)


def _options(text: str) -> str:
    return " ".join(f"`{w}`" for w in text.split())


def tables() -> str:
    """The generated section (without the marks)."""
    common = ", ".join(f"`{v}`" for v in COMMON_ENV)
    lines = [
        "",
        ("Generated from `atip_trust/facts/program_tables.py` (git's sub-commands from "
         "`atip_trust/facts/git_options.py`) by `docs/make_agents_doc.py`. Every program also accepts the "
         f"common variables {common}. A runner's `*` means every variable is passed on to the command it "
         "runs, which is checked with it, and its options are read by its own grammar in "
         "`atip_trust/agents/runners.py`. Any other program may be told only the options listed for it below "
         "(`-x:` takes a value, `-x::` an optional attached one; `--name=` takes a value, `--name=?` an "
         "optional attached one; git also takes `--no-NAME` for each `--NAME`, and `-NUM`): short options in "
         "any cluster, `--name=value`, options after operands, `--` ending them. An abbreviation of a long "
         "option, an option not listed, a value a table checks, or a word that is not literal where an option "
         "may stand is unprovable. The refused options are those left out because they name a program."),
        "",
        "| program | may be told (variables) | refused options | refused sub-commands | what it can run; files |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name in sorted(TABLES):
        t = TABLES[name]
        env = ", ".join(f"`{v}`" for v in t.env) or "only the common ones"
        if t.env_refused:
            env += " except " + ", ".join(f"`{v}`" for v in t.env_refused)
        subs = ", ".join(f"`{s}`" for s in t.refused_subcommands)
        if t.subcommands:
            subs = (subs + "; " if subs else "") + "any other not in its table"
        what = t.runs + (f"; files: {t.files}" if t.files else "")
        lines.append(f"| `{name}` | {_cell(env)} | {_cell(_refused(t))} | {_cell(subs)} | {_cell(what)} |")
    lines += ["", "Options each program may be told:", "", "| program | options |", "| --- | --- |"]
    for name in sorted(TABLES):
        t = TABLES[name]
        if t.options is not None:
            extra = f" (sub-commands: {', '.join(f'`{s}`' for s in t.subcommands)})" if t.subcommands else ""
            checked = "".join(f"; `{c.option}` not matching `{c.pattern}` ({c.why})" for c in t.checked)
            if t.script:
                checked += (f"; its script ({'/'.join(f'`{o}`' for o in t.script_options)}, else the first operand) "
                            "read command by command, each one the table knows runs nothing and touches no file, "
                            f"unless `{t.sandbox}`")
            if t.implies:
                runs: dict[str, list[str]] = {}  # option -> the programs it may run, in the table's order
                for o, p in t.implies:
                    runs.setdefault(o, []).append(p)
                by_programs: dict[tuple[str, ...], list[str]] = {}  # options running the same programs, together
                for o, ps in runs.items():
                    by_programs.setdefault(tuple(ps), []).append(o)
                checked += "; " + ", ".join(
                    f"{' '.join(f'`{o}`' for o in opts)} {'runs' if len(opts) == 1 else 'run'} "
                    f"{' or '.join(f'`{p}`' for p in ps)}" for ps, opts in by_programs.items()) + " (admitted as a program)"
            lines.append(f"| `{name}` | {_cell(_options(t.options) + extra + checked)} |")
    lines += ["", "git's sub-commands and the options each may be told (after git's own options; "
              + "".join(f"`{c.option}` not matching `{c.pattern}`: {c.why}; " for c in TABLES["git"].checked)
              + "`config` sets only keys that run nothing):", "", "| git sub-command | options |", "| --- | --- |"]
    for sub in sorted(GIT_SUBCOMMANDS):
        lines.append(f"| `{sub}` | {_cell(_options(GIT_SUBCOMMANDS[sub]))} |")
    lines.append("")
    return "\n".join(lines)


def render() -> str:
    text = OUTPUT.read_text(encoding="utf-8")
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    if not rest:
        raise SystemExit(f"{OUTPUT}: the mark {BEGIN} is missing")
    return f"{head}{BEGIN}\n{tables()}{END}{tail}"


def main(argv: list[str]) -> int:
    out = render()
    if "--check" in argv:
        stale = OUTPUT.read_text(encoding="utf-8") != out
        if stale:
            print(f"{OUTPUT} is stale: run python docs/make_agents_doc.py", file=sys.stderr)
        return int(stale)
    OUTPUT.write_text(out, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
