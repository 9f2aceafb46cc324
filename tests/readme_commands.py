"""The README's shell commands as bash reads them. A command broken over lines to fit a screen ends each
line but its last with a backslash; bash removes each backslash-newline pair and reads one command
(bash(1), QUOTING: "A \\<newline> pair is treated as a line continuation"). Tests that run the README's
commands or compare them with `.ci/run` read them here, joined the same way, so that breaking a command
over lines changes nothing they check."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def sh_blocks(section: str | None = None) -> list[str]:
    """The text of each ```sh block of the README, in order; only those after heading ``section`` (a
    line such as ``## Run the tests``) when it is given."""
    text = README.read_text(encoding="utf-8")
    if section is not None:
        text = text[text.index(section):]
    return re.findall(r"^```sh\n(.*?)\n```", text, re.S | re.M)


def joined(block: str) -> list[str]:
    """A block's commands, one a line, each continuation joined as bash joins it (the pair removed, so
    the indentation of the next line is a plain word separator, collapsed to one space here)."""
    text = re.sub(r"\\\n[ \t]*", "", block)
    return [line.strip() for line in text.splitlines() if line.strip()]


def readme_main_job() -> list[str]:
    """The README's "Set up" command (install, then run): its atip-trust arguments, checkout paths made
    absolute so they work from any directory."""
    root = README.parent
    line = next(ln for block in sh_blocks() for ln in joined(block)
                if "pip install -q ." in ln and ".venv/bin/atip-trust " in ln)
    words = shlex.split(line.split(".venv/bin/atip-trust ", 1)[1])
    return [str(root / w) if (root / w).exists() and not w.startswith("-") else w for w in words]
