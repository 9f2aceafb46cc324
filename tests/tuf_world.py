"""A TUF repository of the test Sigstore's trusted root, published and served over loopback HTTP: the
world the trust-root update tests (tests/state/test_trust_root_update.py) and the store-damage tests
(tests/state/test_trust_root_store_damage.py) share."""

from __future__ import annotations

import json
import re
from pathlib import Path

from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

import testsigstore
from tufrepo import TufRepo


def published_repo(folder: Path, sigstore: testsigstore.TestSigstore) -> TufRepo:
    """A repository in ``folder`` whose first version carries ``sigstore``'s trusted root."""
    repo = TufRepo(folder, json.dumps(sigstore.trusted_root()).encode())
    repo.publish()
    return repo


def serve(httpserver: HTTPServer, repo: TufRepo) -> str:
    """``repo``'s folder served as files, read at each request (tests change them); its base URL."""
    def handler(request: Request) -> Response:
        path = repo.dir / request.path.lstrip("/")
        if ".." in request.path or not path.is_file():
            return Response("not found", status=404)
        return Response(path.read_bytes(), status=200)

    httpserver.expect_request(re.compile(".*")).respond_with_handler(handler)
    return httpserver.url_for("/").rstrip("/")


def first_root(folder: Path, repo: TufRepo) -> Path:
    """``repo``'s version-1 root written to ``folder``: what a user passes as the initial trusted root."""
    path = folder / "1.root.json"
    path.write_bytes(repo.root_bytes(1))
    return path
