"""``atip-trust hash FILE...`` and ``hash --check FILE``: GNU ``sha256sum``/``sha512sum``, line for line.

Output is what coreutils writes, so each side checks the other's: ``<hex>  FILE`` by default,
``SHA256 (FILE) = <hex>`` with ``--tag``; ``-`` is standard input. A bare name is looked up on PATH
once (docs/cli-guide.md, "hash") and its line names the file found, so the line checks the bytes that
were hashed. ``--format json`` keeps the typed form (``{"path", "digest": "sha256:<hex>"}``). A file name
containing a backslash, newline or carriage return is escaped (``\\``, ``\n``, ``\r``) and its line starts
with a backslash, as coreutils does, so a name like ``"x\n<forged hex>  /usr/bin/gh"`` cannot forge a second
line for whoever parses the output.

Each file is opened once, refused unless it is a regular file (without blocking on a FIFO), and hashed
from that descriptor (``Artifact``). One bad file fails the run (exit 2) but the others are still hashed.
Many files are hashed on two threads (hashlib releases the GIL; _base/parallel.py), printed in the
order given as each is ready; with ``-`` among them (standard input is read once, in order) on one.

``--check`` reads ``sha256sum`` lines and ``--tag`` lines, and prints ``NAME: OK``, ``NAME: FAILED``
or ``NAME: FAILED open or read`` per listed file, with coreutils' warnings on standard error: exit 1 when
any file did not match or could not be read (a failed verification), exit 2 when the list has no
properly formatted line at all or cannot be read (nothing could be evaluated, docs/contract.md).
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import os
import re
import sys
from typing import TYPE_CHECKING, Any, BinaryIO

from atip_trust._base.lazy import lazy_import
from atip_trust._base.limits import LIMITS
from atip_trust._base.parallel import default_workers, map_threads
from atip_trust._version import __version__
from atip_trust.cli.common import EXIT_ERROR, EXIT_FAIL, EXIT_OK, add_common_options
from atip_trust.cli.output import dump_json, one_line
from atip_trust.errors import (
    ArtifactAccessError,
    AtipTrustError,
    MalformedInputError,
    UntrustedInputError,
    UsageError,
)
from atip_trust.facts.artifact import Artifact
from atip_trust.facts.digest import ALGORITHMS, Digest, hash_fd

if TYPE_CHECKING:
    from atip_trust.cli import sarif
    from atip_trust.cli.sarif import Rule
    from atip_trust.facts.digest import Algorithm
else:
    sarif = lazy_import("atip_trust.cli.sarif")  # only for --format sarif, or a file that fails

#: SARIF rule ids (stable).
RULE_UNREADABLE = "atip-trust/hash/unreadable"
RULE_NOT_REGULAR = "atip-trust/hash/not-a-regular-file"
RULE_MISMATCH = "atip-trust/hash/mismatch"
RULE_IMPROPER = "atip-trust/hash/improper-line"


@functools.cache
def _rules() -> dict[str, Rule]:
    """The SARIF rules of ``hash``, built on first use (not at import)."""
    return {
        RULE_UNREADABLE: sarif.Rule(
            "File could not be read", "The file could not be opened or read, so its digest is unknown.",
            "Check that the path exists and is readable."),
        RULE_NOT_REGULAR: sarif.Rule(
            "Not a regular file", "The path names a directory, FIFO, device or socket; only regular "
            "files are hashed (a FIFO is refused without blocking).", "Pass the file itself."),
        RULE_MISMATCH: sarif.Rule(
            "Checksum does not match", "The file's digest differs from the one the checksum list "
            "states: the file changed, or the list describes another file.",
            "Do not use the file; obtain it again from its publisher and compare."),
        RULE_IMPROPER: sarif.Rule(
            "Improperly formatted checksum line", "A line of the checksum list is neither "
            "'<hex>  NAME' nor 'SHA256 (NAME) = <hex>'; it was skipped.", "Fix or remove the line."),
    }


#: Longest checksum line read (a path of PATH_MAX bytes, escaped, plus the digest and the tag).
_MAX_LINE = 3 * 4096 + 256
_HEX_LEN = {"sha256": 64, "sha512": 128}


def _escape(name: str, triggers: tuple[bytes, ...] = (b"\\", b"\n", b"\r")) -> tuple[bytes, bytes]:
    """(prefix, escaped name) as coreutils writes them: raw bytes, with ``\\``, ``\n``, ``\r``
    escaped and a leading backslash on the line when the name holds one of ``triggers`` (any of
    the three for a checksum line; a newline only for ``--check``'s ``NAME: OK``, as coreutils 9
    does). ``os.fsencode`` undoes Python's surrogate escaping of non-UTF-8 names."""
    raw = os.fsencode(name)
    if any(c in raw for c in triggers):
        return b"\\", raw.replace(b"\\", b"\\\\").replace(b"\n", b"\\n").replace(b"\r", b"\\r")
    return b"", raw


def sum_line(digest: Digest, name: str, *, tag: bool = False) -> bytes:
    """One output line as GNU ``sha256sum`` (or ``sha256sum --tag``) writes it, as bytes."""
    prefix, raw = _escape(name)
    if tag:
        return prefix + digest.algorithm.upper().encode() + b" (" + raw + b") = " + digest.hex.encode() + b"\n"
    return prefix + digest.hex.encode("ascii") + b"  " + raw + b"\n"


def register(sub: Any) -> None:
    p = add_common_options(sub.add_parser(
        "hash", help="print digests as sha256sum does, or check a list (-c)",
        description="Print '<hex>  FILE' per file, as sha256sum/sha512sum do ('-' is standard input); "
        "--tag prints 'SHA256 (FILE) = <hex>'; --format json gives 'sha256:<hex>'. With --check, read "
        "such lines and report NAME: OK / FAILED.",
    ))
    p.add_argument("files", nargs="*", metavar="FILE",
                   help="files to hash (a bare name is looked up on PATH once; - is standard input)")
    p.add_argument("--algorithm", choices=ALGORITHMS, default="sha256", help="digest algorithm (default: sha256)")
    p.add_argument("--tag", action="store_true", help="BSD-style lines: SHA256 (FILE) = <hex>")
    p.add_argument("-c", "--check", metavar="FILE",
                   help="read checksums from FILE ('-' for standard input) and check them")
    p.set_defaults(func=run)


def _hash_stdin(algorithm: Algorithm) -> Digest:
    h = hashlib.new(algorithm)
    try:
        # A pipe or terminal: read as it comes (pread, as hash_fd uses, needs a seekable file).
        for block in iter(lambda: sys.stdin.buffer.read(LIMITS.hash_chunk), b""):
            h.update(block)
    except (OSError, ValueError, AttributeError) as err:
        raise ArtifactAccessError(f"cannot read standard input: {err}", path="-") from err
    return Digest(algorithm, h.digest())


def digest_of(name: str, algorithm: Algorithm, *, path_lookup: bool = False,
              overlap: bool = True) -> tuple[Digest, str]:
    """The digest of ``name`` and the name to print for it.

    ``-`` is standard input (as in coreutils; ``./-`` names a file called ``-``). With ``path_lookup``
    (``hash NAME``, docs/cli-guide.md) a bare name is looked up on PATH once, as the shell would run it, and the
    line names the file that was hashed, so ``sha256sum -c`` checks those same bytes. Names read from a
    checksum list are always files: a list line must check the file it names, not one found on PATH.
    ``overlap``: ``hash_fd``'s reader thread for a large file (off when files are hashed in parallel).
    """
    if name == "-":
        return _hash_stdin(algorithm), name
    with Artifact.open(name, lookup=path_lookup) as art:
        shown = art.path if path_lookup and "/" not in name else name
        return hash_fd(art.fd, (algorithm,), overlap=overlap)[algorithm], shown


def _write_bytes(data: bytes) -> None:
    sys.stdout.flush()
    sys.stdout.buffer.write(data)


def run(args: argparse.Namespace) -> int:
    if args.check is not None:
        if args.files:
            raise UsageError("give either FILE... or --check FILE, not both")
        return run_check(args)
    if not args.files:
        raise UsageError("no FILE given (use '-' for standard input)")
    rc = EXIT_OK
    rows: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    names: list[str] = list(args.files)
    workers = 1 if "-" in names else default_workers()
    outcomes = map_threads(lambda n: digest_of(n, args.algorithm, path_lookup=True, overlap=workers == 1),
                           names, workers=workers)
    for name, outcome in zip(names, outcomes, strict=True):  # one outcome per name, in order
        try:
            if outcome.error is not None:
                raise outcome.error
            assert outcome.value is not None
            d, shown = outcome.value
        except AtipTrustError as err:
            # Keep going through the other files; the run fails as a whole.
            rc = EXIT_ERROR
            sys.stderr.write(f"atip-trust: error: {one_line(err.diagnostics())}\n")
            rows.append({"path": name, "error": err.diagnostics()})
            rid = RULE_NOT_REGULAR if isinstance(err, UntrustedInputError) else RULE_UNREADABLE
            results.append(sarif.sarif_result(rid, err.diagnostics(), name, identity=(rid,)))
            continue
        rows.append({"path": name, "digest": str(d)} if shown == name
                    else {"path": name, "file": shown, "digest": str(d)})
        if args.format == "text":
            _write_bytes(sum_line(d, shown, tag=args.tag))
    if args.format == "json":
        dump_json(rows)
    elif args.format == "sarif":
        dump_json(sarif.sarif_log(results, {r["ruleId"]: _rules()[r["ruleId"]] for r in results},
                            version=__version__))
    return rc


# --check ------------------------------------------------------------------------------------------

_UNESCAPE = re.compile(rb"\\(.?)", re.DOTALL)


def _unescape(raw: bytes) -> bytes | None:
    """coreutils' ``filename_unescape``: ``\\\\``, ``\\n``, ``\\r``; any other escape is malformed."""
    bad = False

    def sub(m: re.Match[bytes]) -> bytes:
        nonlocal bad
        ch = m.group(1)
        if ch == b"\\":
            return b"\\"
        if ch == b"n":
            return b"\n"
        if ch == b"r":
            return b"\r"
        bad = True
        return b""

    out = _UNESCAPE.sub(sub, raw)
    return None if bad else out


class _Entry:
    __slots__ = ("name", "hexdigest", "line")

    def __init__(self, name: bytes, hexdigest: str, line: int) -> None:
        self.name = name
        self.hexdigest = hexdigest
        self.line = line


class _Parser:
    """Parses checksum lines as coreutils' ``split_3``/``bsd_split_3`` do, for one algorithm."""

    def __init__(self, algorithm: Algorithm) -> None:
        self.algorithm = algorithm
        self.tag = algorithm.upper().encode()
        self.hexlen = _HEX_LEN[algorithm]
        #: "<hex> NAME" with one space (BSD reversed) is allowed only if the first untagged line used it:
        #: mixing the two would let a name with a leading space or '*' be read two ways.
        self.bsd_reversed: bool | None = None

    def parse(self, line: bytes) -> tuple[bytes, str] | None:
        i = 0
        while i < len(line) and line[i] in b" \t":
            i += 1
        escaped = line[i:i + 1] == b"\\"
        if escaped:
            i += 1
        if line.startswith(self.tag, i):
            return self._parse_tagged(line[i + len(self.tag):], escaped)
        rest = line[i:]
        hexdigest = rest[: self.hexlen]
        if len(rest) <= self.hexlen + 1 or rest[self.hexlen:self.hexlen + 1] not in (b" ", b"\t"):
            return None
        if not re.fullmatch(rb"[0-9A-Fa-f]+", hexdigest):
            return None
        j = self.hexlen + 1
        if rest[j:j + 1] not in (b" ", b"*"):
            if self.bsd_reversed is False:
                return None
            self.bsd_reversed = True
        elif self.bsd_reversed is not True:
            self.bsd_reversed = False
            j += 1
        name = rest[j:]
        if escaped:
            unescaped = _unescape(name)
            if unescaped is None:
                return None
            name = unescaped
        return (name, hexdigest.decode().lower()) if name else None

    def _parse_tagged(self, s: bytes, escaped: bool) -> tuple[bytes, str] | None:
        if s.startswith(b" "):
            s = s[1:]
        if not s.startswith(b"("):
            return None
        s = s[1:]
        end = s.rfind(b")")  # BSD tools do not escape names: the last ')' ends it
        if end < 0:
            return None
        name, rest = s[:end], s[end + 1:].lstrip(b" \t")
        if not rest.startswith(b"="):
            return None
        hexdigest = rest[1:].lstrip(b" \t")
        if len(hexdigest) != self.hexlen or not re.fullmatch(rb"[0-9A-Fa-f]+", hexdigest):
            return None
        if escaped:
            unescaped = _unescape(name)
            if unescaped is None:
                return None
            name = unescaped
        return name, hexdigest.decode().lower()


def _open_list(path: str) -> BinaryIO:
    """The checksum list: a file, a pipe (``-c <(sha256sum ...)``) or standard input (``-``)."""
    if path == "-":
        return sys.stdin.buffer
    try:
        return open(path, "rb")  # noqa: SIM115 - closed by the caller
    except IsADirectoryError as err:
        raise UntrustedInputError("is a directory, not a checksum list", path=path) from err
    except OSError as err:
        raise ArtifactAccessError(f"cannot open checksum list: {(err.strerror or str(err)).lower()}",
                                  path=path) from err


def _read_entries(args: argparse.Namespace) -> tuple[list[_Entry], list[int]]:
    parser = _Parser(args.algorithm)
    entries: list[_Entry] = []
    improper: list[int] = []
    stream = _open_list(args.check)
    try:
        for number, raw in enumerate(iter(lambda: stream.readline(_MAX_LINE + 1), b""), start=1):
            if raw.startswith(b"#"):
                continue  # a comment, as coreutils allows
            line = raw[:-1] if raw.endswith(b"\n") else raw
            line = line[:-1] if line.endswith(b"\r") else line
            if not line:
                continue
            parsed = parser.parse(line) if len(raw) <= _MAX_LINE else None
            if parsed is None or (args.check == "-" and parsed[0] == b"-"):
                improper.append(number)
                continue
            entries.append(_Entry(parsed[0], parsed[1], number))
    except OSError as err:
        raise ArtifactAccessError(f"cannot read checksum list: {(err.strerror or str(err)).lower()}",
                                  path=args.check) from err
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()
    return entries, improper


def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def run_check(args: argparse.Namespace) -> int:
    entries, improper = _read_entries(args)
    listing = "standard input" if args.check == "-" else args.check
    if not entries:
        raise MalformedInputError("no properly formatted checksum lines found", path=listing)
    rows: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    mismatched = unreadable = 0
    for e in entries:
        name = os.fsdecode(e.name)
        expected = Digest.from_hex(args.algorithm, e.hexdigest)
        row: dict[str, Any] = {"path": name, "expected": str(expected), "actual": None}
        try:
            actual, _ = digest_of(name, args.algorithm)
        except AtipTrustError as err:
            unreadable += 1
            sys.stderr.write(f"atip-trust: {one_line(err.diagnostics())}\n")
            row.update(status="FAILED open or read", error=err.diagnostics())
            results.append(sarif.sarif_result(RULE_UNREADABLE, f"{name}: {err.message}", name,
                                        identity=(str(expected),)))
        else:
            row["actual"] = str(actual)
            if actual == expected:
                row["status"] = "OK"
            else:
                mismatched += 1
                row["status"] = "FAILED"
                results.append(sarif.sarif_result(
                    RULE_MISMATCH, f"{name}: computed {actual}, the list states {expected}", name,
                    props={"expected": str(expected), "actual": str(actual), "list": args.check,
                           "line": e.line},
                    identity=(str(expected), str(actual))))
        rows.append(row)
        if args.format == "text":
            prefix, raw = _escape(name, triggers=(b"\n",))
            _write_bytes(prefix + raw + b": " + row["status"].encode() + b"\n")
    for number in improper:
        results.append(sarif.sarif_result(RULE_IMPROPER, f"line {number} is improperly formatted",
                                    args.check if args.check != "-" else None, level="warning",
                                    line=number))
    if improper:
        sys.stderr.write(f"atip-trust: WARNING: {_plural(len(improper), 'line is', 'lines are')} "
                         "improperly formatted\n")
    if unreadable:
        sys.stderr.write(f"atip-trust: WARNING: "
                         f"{_plural(unreadable, 'listed file', 'listed files')} could not be read\n")
    if mismatched:
        sys.stderr.write(f"atip-trust: WARNING: "
                         f"{_plural(mismatched, 'computed checksum', 'computed checksums')} did NOT match\n")
    if args.format == "json":
        dump_json({"list": args.check, "algorithm": args.algorithm, "checked": rows,
                   "improperly_formatted_lines": improper, "failed": mismatched, "unreadable": unreadable})
    elif args.format == "sarif":
        dump_json(sarif.sarif_log(results, {r["ruleId"]: _rules()[r["ruleId"]] for r in results},
                            version=__version__))
    return EXIT_FAIL if mismatched or unreadable else EXIT_OK
