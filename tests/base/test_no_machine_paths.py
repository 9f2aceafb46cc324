"""No tracked file names an absolute path of the machine it was written on (issue 34 item 9): on another
machine such a path finds nothing, or the wrong thing, and the test that reads it passes or skips for the
wrong reason. Shared material is found at ``../shared/`` or through a documented variable
(tests/shared_material.py).

A path is a machine's when it lies under a folder that holds people's or a machine's own files (``/work``,
``/root``, ``/Users``, ``/mnt``, ``/media``), or under any other top folder where it exists on this machine
(a real home folder, say) — except the system folders the product itself reads or names (``/etc``,
``/usr``, ``/bin``, ``/Library``, ``/dev``, ``/proc``, ``/tmp`` …): made-up examples (``/home/ann``,
``/tmp/evil.so``) exist nowhere and stay allowed. The checker is a plain function so that the test of the
test can plant a path and see it caught."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
#: Top folders that hold a person's or a machine's own files: never named, whether or not they exist here.
MACHINE_ROOTS = frozenset({"work", "root", "Users", "mnt", "media"})
#: Top folders of the system: the product reads or names paths in them (/etc/atip-trust, /bin/sh, /usr/bin,
#: /Library/Application Support/atip-trust, /dev/null, /proc/self), and scratch folders (/tmp, /var/tmp).
SYSTEM_ROOTS = frozenset({"etc", "usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "dev", "proc", "sys",
                          "tmp", "var", "run", "opt", "Library", "System", "Applications", "private",
                          "nonexistent", "nix", "snap", "srv", "boot"})
#: An absolute path: a ``/`` not preceded by a word character, ``:``, ``/`` or ``.`` (so neither a
#: relative path, a URL nor ``./x``), then its components.
_PATH = re.compile(r"(?<![\w:/.~$\\-])/([A-Za-z0-9_.+@-]+)((?:/[A-Za-z0-9_.+@-]+)*)")
_CAP = 2 * 1024 * 1024


def machine_paths(text: str, exists: bool = True) -> list[str]:
    """The machine paths ``text`` names (module docstring); ``exists``: also test existence on this machine."""
    found = []
    for m in _PATH.finditer(text):
        top, rest = m.group(1), m.group(2)
        if top in SYSTEM_ROOTS:
            continue
        below = rest.split("/")[1:]  # the components under the top folder
        first = f"/{top}/{below[0]}" if below else f"/{top}"
        if (top in MACHINE_ROOTS and rest) or (exists and rest and os.path.exists(first)):
            found.append(m.group(0))
    return found


def tracked_files() -> list[Path]:
    try:
        out = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z"], capture_output=True, timeout=60, check=True)
    except (OSError, subprocess.CalledProcessError) as err:
        pytest.skip(f"not a git checkout ({err}): no tracked files to check")
    return [REPO / name for name in out.stdout.decode("utf-8", "surrogateescape").split("\0") if name]


def test_no_tracked_file_names_a_machine_path() -> None:
    bad = []
    for path in tracked_files():
        try:
            if path.stat().st_size > _CAP:
                continue
            text = path.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue  # binary or vanished: no path to read
        bad += [f"{path.relative_to(REPO)}: {p}" for p in machine_paths(text)]
    assert not bad, "absolute paths of a machine in tracked files:\n" + "\n".join(bad)


#: The planted paths (and the look-alikes that must not be caught) are written with ``|`` for ``/``, so
#: that this file does not name them.
@pytest.mark.parametrize(("text", "caught"), [
    ('candidates.append(Path("|work/shared/fixtures/interop"))', ["|work/shared/fixtures/interop"]),
    ("Run: |work/venv/bin/python bench/provenance.py", ["|work/venv/bin/python"]),
    ('MIRROR = "|root/.mirror/slsa-verifier"', ["|root/.mirror/slsa-verifier"]),
    ("see |Users/ann/src/atip", ["|Users/ann/src/atip"]),
    ('"/etc/atip-trust/org-policy.json" and /usr/bin/env and /bin/sh', []),
    ('"/Library/Application Support/atip-trust/org-policy.json"', []),
    ("https:||github.com|work|x and docs|work|x and .|work|x and ~|work|x", []),
    ('{"HOME": "/root", "XDG": "/home/ann", "LD_PRELOAD": "/tmp/evil.so"}', []),
])
def test_the_checker_catches_a_planted_machine_path(text: str, caught: list[str]) -> None:
    planted = text.replace("|", "/")
    assert machine_paths(planted, exists=False) == [c.replace("|", "/") for c in caught]


def test_the_checker_catches_this_checkouts_own_absolute_path() -> None:
    if REPO.parts[1] in SYSTEM_ROOTS:
        pytest.skip(f"the checkout {REPO} is under a system folder")
    assert machine_paths(f"fixtures = '{REPO}/fixtures'") == [f"{REPO}/fixtures"]
