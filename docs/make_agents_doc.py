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

from atip_trust.facts.program_tables import COMMON_ENV, TABLES

OUTPUT = ROOT / "docs" / "agents.md"
BEGIN, END = "<!-- program-tables:begin -->", "<!-- program-tables:end -->"


def _cell(text: str) -> str:
    return text.replace("|", "\\|") or "—"


def tables() -> str:
    """The generated section (without the marks)."""
    common = ", ".join(f"`{v}`" for v in COMMON_ENV)
    lines = [
        "",
        ("Generated from `atip_trust/facts/program_tables.py` by `docs/make_agents_doc.py`. Every program also "
        f"accepts the common variables {common}. A runner's `*` means every variable is passed on to the "
        "command it runs, which is checked with it. An option is refused in any spelling the program reads "
        "(a prefix of the long name, `=value`, its letter anywhere in a cluster); a word that is not literal "
        "could be any option and is refused too."),
        "",
        "| program | may be told (variables) | refused options | refused sub-commands | what it can run; files |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name in sorted(TABLES):
        t = TABLES[name]
        env = ", ".join(f"`{v}`" for v in t.env) or "only the common ones"
        if t.env_refused:
            env += " except " + ", ".join(f"`{v}`" for v in t.env_refused)
        refused = "; ".join(f"`{r.option}`" + (f" after {'/'.join(r.after)}" if r.after else "") + f": {r.why}"
                            for r in t.refused)
        subs = ", ".join(f"`{s}`" for s in t.refused_subcommands)
        if t.subcommands:
            subs = (subs + "; " if subs else "") + "any not built in (" + ", ".join(f"`{s}`" for s in t.subcommands) + ")"
        what = t.runs + (f"; files: {t.files}" if t.files else "")
        lines.append(f"| `{name}` | {_cell(env)} | {_cell(refused)} | {_cell(subs)} | {_cell(what)} |")
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
