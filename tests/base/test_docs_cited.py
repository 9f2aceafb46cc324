"""The code and docs cite only documents that are in the repository (issue 23): a comment that sends the
reader to a Markdown file names one they can open. Code once cited the contract, design and style notes
kept outside the repository; their content now lives in docs/ (contract.md, architecture.md,
sigstore.md) and this test keeps it so.

A name ending in ``.md`` counts as found when it exists relative to the repository root, to docs/, or to
the folder of the file that names it (as a Markdown link is read). URLs are not citations of ours.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("atip_trust", "tests", "bench", "fixtures", "docs")

#: ``.md`` names that are not documents of this repository, each with why it may appear.
NOT_CITATIONS = {
    "TOOL.md": "the file name AIP-14 gives a tool's contract: a format the code reads, not a document",
    "ACTION.md": "the file name AIP-39 gives an action a TOOL.md implements: a format the code reads",
    "DRIVER.md": "the file name AIP-30 gives a tool's implementation: named in a migration warning",
    "atip-rfc-v0.6.md": "the ATIP RFC, read by a test from a sibling checkout and skipped when absent; "
                        "code cites it by section (RFC §N)",
}

_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://\S+")
#: A path-like word ending in .md: not the tail of a longer word, URL or template (``{name}.safety.md``).
_MD_NAME = re.compile(r"(?<![\w./\-{}$<>])((?:\.{1,2}/)*\w[\w./-]*\.md)(?![\w])")


def scanned_files(root: Path) -> list[Path]:
    files = [root / "README.md"] if (root / "README.md").is_file() else []
    for top in SCANNED:
        files += sorted(p for p in (root / top).rglob("*")
                        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc")
    return files


def text_of(path: Path) -> str | None:
    data = path.read_bytes()
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def missing_citations(root: Path) -> list[str]:
    """``file:line: name`` for every ``.md`` name that no file of the repository answers."""
    missing: list[str] = []
    for path in scanned_files(root):
        text = text_of(path)
        if text is None:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            for name in _MD_NAME.findall(_URL.sub(" ", line)):
                if Path(name).name in NOT_CITATIONS:
                    continue
                if not any((base / name).is_file() for base in (root, root / "docs", path.parent)):
                    missing.append(f"{path.relative_to(root)}:{number}: {name}")
    return missing


def test_every_cited_markdown_file_is_in_the_repository() -> None:
    assert missing_citations(ROOT) == []


def test_a_citation_of_a_document_outside_the_repository_is_caught(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "contract.md").write_text("# contract\n", encoding="utf-8")
    (tmp_path / "atip_trust").mkdir()
    outside = "DESIGN" + ".md"  # spelled in two parts: this file is scanned too
    (tmp_path / "atip_trust" / "mod.py").write_text(
        f'"""Exit codes: docs/contract.md and contract.md; principle 1 ({outside}).\n'
        '(https://github.com/sigstore/fulcio/blob/main/docs/oid-info.md, f"{name}.safety.md")"""\n',
        encoding="utf-8")
    assert missing_citations(tmp_path) == [f"atip_trust/mod.py:1: {outside}"]
