"""The default cache and state folders are platformdirs' answer, with or without platformdirs loaded.

state/dirs.py computes the plain Linux cases itself (platformdirs' import is a third of a warm admission)
and hands every other case to platformdirs. A folder that differed from platformdirs' would put the
verdict cache or the audit log somewhere an administrator does not look, or, for a relative variable,
under whatever directory ``admit`` runs in: these tests hold each case to platformdirs' own answer.
"""

from __future__ import annotations

import sys

import platformdirs
import pytest

from atip_trust.state import dirs

PLAIN = [  # (XDG value or None for unset, HOME or None for unset)
    ("/srv/xdg", "/home/ann"), ("/srv/xdg/", "/home/ann"), ("/srv/xdg", None), (None, "/home/ann"),
    (None, "/home/ann/"), (None, "/"), ("/a b/ü", "/home/ann"),
]
ODD = [("relative/xdg", "/home/ann"), ("", "/home/ann"), (None, "relative"), (None, ""), ("~/x", "/home/ann")]


def _env(monkeypatch: pytest.MonkeyPatch, kind: str, xdg: str | None, home: str | None) -> None:
    var = {"cache": "XDG_CACHE_HOME", "state": "XDG_STATE_HOME", "data": "XDG_DATA_HOME",
           "config": "XDG_CONFIG_HOME"}[kind]
    for name, value in ((var, xdg), ("HOME", home)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    monkeypatch.delenv("ANDROID_DATA", raising=False)


def _theirs(kind: str) -> str:
    # RFC §4.2: the data and config folders are the shared agent-tools tree, not atip-trust's own.
    return {"cache": lambda: platformdirs.user_cache_dir("atip-trust"),
            "state": lambda: platformdirs.user_state_dir("atip-trust"),
            "data": lambda: platformdirs.user_data_dir("agent-tools"),
            "config": lambda: platformdirs.user_config_dir("agent-tools")}[kind]()


def _ours(kind: str) -> str:
    return {"cache": dirs.user_cache_dir, "state": dirs.user_state_dir, "data": dirs.agent_tools_data_dir,
            "config": dirs.agent_tools_config_dir}[kind]()


KINDS = ["cache", "state", "data", "config"]


@pytest.mark.skipif(sys.platform != "linux", reason="the plain cases are Linux's")
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("xdg", "home"), PLAIN)
def test_a_plain_linux_environment_gets_platformdirs_folder_without_platformdirs(
        monkeypatch: pytest.MonkeyPatch, kind: str, xdg: str | None, home: str | None) -> None:
    _env(monkeypatch, kind, xdg, home)
    assert dirs.plain_dir(kind) is not None and dirs.plain_dir(kind, "agent-tools") is not None
    assert _ours(kind) == _theirs(kind)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("xdg", "home"), ODD)
def test_a_relative_or_empty_variable_is_left_to_platformdirs_never_taken_relative_to_here(
        monkeypatch: pytest.MonkeyPatch, kind: str, xdg: str | None, home: str | None) -> None:
    """A relative XDG variable (or HOME) would otherwise put the cache under the working directory,
    where another user's files may be: such a value is platformdirs' to judge."""
    _env(monkeypatch, kind, xdg, home)
    assert dirs.plain_dir(kind) is None
    try:
        expected = _theirs(kind)
    except RuntimeError:  # platformdirs refuses a home it cannot make absolute: so do we
        with pytest.raises(RuntimeError):
            _ours(kind)
        return
    assert _ours(kind) == expected


@pytest.mark.parametrize("platform", ["darwin", "win32", "freebsd14"])
def test_another_platform_is_asked_of_platformdirs(monkeypatch: pytest.MonkeyPatch, platform: str) -> None:
    monkeypatch.setattr(sys, "platform", platform)
    monkeypatch.setenv("XDG_CACHE_HOME", "/srv/xdg")
    assert dirs.plain_dir("cache") is None


def test_android_is_asked_of_platformdirs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANDROID_DATA", "/data")
    monkeypatch.setenv("ANDROID_ROOT", "/system")
    monkeypatch.setenv("XDG_CACHE_HOME", "/srv/xdg")
    assert dirs.plain_dir("cache") is None
