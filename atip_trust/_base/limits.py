"""Byte and depth caps for every untrusted input, in one place (practice 2).

Caps are enforced while reading, before any parser sees the bytes.
"""

from __future__ import annotations

from atip_trust._base.record import Record


class Limits(Record):
    """Caps on untrusted inputs. Override by constructing a new instance; the default is ``LIMITS``."""


    #: ATIP ``--agent`` output or shim file.
    metadata_bytes: int = 4 * 1024 * 1024
    #: One Sigstore bundle (a real one is 4-20 KiB; a DSSE bundle with a large statement stays far below).
    bundle_bytes: int = 4 * 1024 * 1024
    #: A ``.jsonl`` file of bundles.
    bundle_lines_bytes: int = 64 * 1024 * 1024
    #: Lines in a ``.jsonl`` file.
    bundle_lines: int = 10000
    #: Policy files.
    policy_bytes: int = 1 * 1024 * 1024
    #: A trusted_root.json (public-good is ~10 KiB).
    trusted_root_bytes: int = 1 * 1024 * 1024
    #: PEM keys and detached signatures.
    key_bytes: int = 64 * 1024
    #: Nesting depth of any JSON document; ATIP metadata nests commands, not much more than ~20 deep.
    json_depth: int = 64
    #: Network fetches (``--fetch``): seconds and bytes.
    fetch_timeout: float = 10.0
    fetch_bytes: int = 8 * 1024 * 1024
    #: Read size for streaming hashes: large enough to amortise syscalls, small enough to stay bounded.
    hash_chunk: int = 1024 * 1024
    #: A command line decided against command rules (the argv joined by spaces). Linux caps one argument
    #: at 128 KiB (MAX_ARG_STRLEN) and the whole argv+environment near 2 MiB (ARG_MAX); matching is
    #: linear, the cap bounds the work a hostile command can cause. Above it: deny, naming both sizes.
    command_chars: int = 256 * 1024
    #: Words in that command line.
    command_words: int = 65536
    #: Places where the sub-command may start after leading options of unknown arity (``git -C . push``):
    #: deny and ask rules are tried at each; above the cap the command is denied as ambiguous.
    command_start_candidates: int = 64
    #: An AIP-14 ``TOOL.md`` (a contract is a few KiB of frontmatter and prose).
    tool_md_bytes: int = 256 * 1024
    #: YAML events (scalars, collection starts and ends) in one frontmatter: a bound on the parsed tree
    #: that does not depend on how the text is spelled.
    yaml_events: int = 20000


LIMITS = Limits()

__all__ = ["Limits", "LIMITS"]
