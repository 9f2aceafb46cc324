"""Shared test fixtures: paths, the interop folder, and the project's fixture generators on sys.path."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import settings
from pytest_httpserver import HTTPServer

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"

# The local test Sigstore and other fixture generators live in fixtures/ (docs/contract.md layout).
if str(FIXTURES) not in sys.path:
    sys.path.insert(0, str(FIXTURES))

# Every tests/ sub-folder on sys.path: suites import another suite's helpers and fixtures by module name
# (``from test_bridge_loop import loop``), and pytest's default import mode puts a folder on sys.path
# only when it collects a test in it, which may come after the suite that imports from it.
for _folder in sorted(p for p in Path(__file__).resolve().parent.iterdir()
                      if p.is_dir() and p.name != "__pycache__" and any(p.glob("test_*.py"))):
    if str(_folder) not in sys.path:
        sys.path.append(str(_folder))

from interop_cases import find_interop  # noqa: E402
from shared_material import where  # noqa: E402
from verify_helpers import forget_process_state  # noqa: E402

INTEROP = find_interop()

#: Hypothesis profiles: ``ci`` (CI set to anything but false/0/no, as .ci/run sets it) runs every property
#: test at the example count its author wrote; ``dev`` (a developer's default run) a quarter of it.
#: HYPOTHESIS_PROFILE names one explicitly. Tests give their count through ``examples(n)``.
settings.register_profile("ci", deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None)
_CI = os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")
PROFILE = os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if _CI else "dev")
settings.load_profile(PROFILE)


def examples(n: int) -> int:
    """``n`` examples under the ``ci`` profile, a quarter of them (at least 10) under ``dev``."""
    return max(10, n // 4) if PROFILE == "dev" else n


@pytest.fixture(scope="session")
def interop_dir() -> Path:
    if not (INTEROP / "index.json").is_file():
        pytest.skip(f"interop fixtures not found: {where('fixtures', 'interop', env='ATIP_INTEROP_DIR')}")
    return INTEROP


@pytest.fixture(autouse=True, scope="session")
def _private_verdict_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Every test run gets its own verdict cache (state/verdict_cache.py), never the user's; subprocesses
    inherit it through the environment."""
    os.environ["ATIP_CACHE_DIR"] = str(tmp_path_factory.mktemp("verdict-cache"))


@pytest.fixture(autouse=True, scope="session")
def _private_agent_tools(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Every test run gets its own RFC §4.2 ``agent-tools`` tree (registry.json, tools/, shims/,
    overrides/: admission/agent_tools.py), never the user's; subprocesses inherit it."""
    os.environ["XDG_DATA_HOME"] = str(tmp_path_factory.mktemp("xdg-data"))
    os.environ["XDG_CONFIG_HOME"] = str(tmp_path_factory.mktemp("xdg-config"))


@pytest.fixture(scope="session")
def _second_server_session() -> Iterator[HTTPServer]:
    server = HTTPServer(host="127.0.0.1", port=0)
    server.start()
    yield server
    server.clear()
    server.stop()


@pytest.fixture
def second_server(_second_server_session: HTTPServer) -> Iterator[HTTPServer]:
    """Another origin for redirect and credential tests: 127.0.0.1 on its own port (pytest-httpserver's
    default server listens as ``localhost``)."""
    _second_server_session.clear()
    yield _second_server_session
    _second_server_session.clear()


@pytest.fixture(autouse=True)
def _fresh_process_state() -> Iterator[None]:
    """Each test starts without the memos an earlier test left in this process (verify_helpers.py,
    PROCESS_MEMOS), as each starts in a fresh process when its CLI calls are subprocesses."""
    forget_process_state()
    yield
    forget_process_state()


#: Every module that holds its own copy of the same-timestamp window (RACY_NS, _base/statmemo.py).
RACY_MODULES = ("atip_trust._base.statmemo", "atip_trust.state.verdict_cache", "atip_trust.registry.local")


@pytest.fixture
def settle(monkeypatch: pytest.MonkeyPatch) -> Callable[[], None]:
    """``settle()`` instead of sleeping past the stat fast path's same-timestamp window (2 s): from then
    on every file counts as changed long enough ago to be remembered, as after the sleep, and files
    changed before it stay racy until it is called (the window keeps its real width until then)."""
    def now_settled() -> None:
        for name in RACY_MODULES:
            monkeypatch.setattr(importlib.import_module(name), "RACY_NS", 0)
    return now_settled
