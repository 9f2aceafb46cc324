"""The tool name an admission decides for is a path's last component exactly as pathlib reads it.

Policy rules match on the tool's name (``"gh pr *"``), so the name taken from ``admit PATH`` must be the
one every other part of the product (and a reader of the policy) sees for that path. ``admission/admit``
computes it without importing pathlib (start-up, docs/caching.md); these tests hold it to
``PurePosixPath(path).name`` for crafted and arbitrary paths.
"""

from __future__ import annotations

from pathlib import PurePosixPath

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from atip_trust.admission.admit import tool_name_of

from conftest import examples

CRAFTED = ["/usr/bin/gh", "bin/gh/", "bin/gh/.", "bin//gh", "./gh", "/", "//", ".", "./", "a/..", "../gh",
           "/usr/bin/./gh/./", "gh", "/gh\u00a0", "a/ b", "a/.hidden", "a/...", "///x//"]


@pytest.mark.parametrize("path", CRAFTED)
def test_a_crafted_path_names_the_tool_pathlib_names(path: str) -> None:
    expected = PurePosixPath(path).name if "/" in path else path
    assert tool_name_of(path) == expected


@settings(max_examples=examples(400), deadline=None)
@given(st.lists(st.sampled_from(["", ".", "..", "gh", "a b", "x.y", "\u00a0", "-", "\\"]), min_size=1,
                max_size=6).map("/".join))
def test_any_slash_joined_path_names_the_tool_pathlib_names(path: str) -> None:
    expected = PurePosixPath(path).name if "/" in path else path
    assert tool_name_of(path) == expected
