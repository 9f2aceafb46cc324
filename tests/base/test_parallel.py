"""Both cores (_base/parallel.py, admission/batch.py): many items through threads or processes come back in
input order, one item's failure (an exception, a dead worker, a hang) is that item's alone, and a
batch never hangs. Batch verification on two processes decides exactly what one process decides."""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from atip_trust._base.parallel import WorkerLost, map_processes, map_threads
from atip_trust.admission.batch import VerifyJob, verify_batch
from atip_trust.evaluation.evaluate import Constraints
from atip_trust.signature.identity import IdentityRule

import testsigstore
from verify_helpers import cli

ID = "https://github.com/acme/tool/.github/workflows/release.yml@refs/tags/v1.0.0"
ISS = "https://token.actions.githubusercontent.com"


def _square_or_fail(n: int) -> int:
    if n == 3:
        raise ValueError("three is refused")
    return n * n


def _die_on_two(n: int) -> int:
    if n == 2:
        os._exit(7)  # the worker process dies mid-item, as under the OOM killer
    return n


def _hang_on_one(n: int) -> int:
    if n == 1:
        time.sleep(120)
    return n


def test_threads_keep_input_order_and_an_exception_is_that_items_own() -> None:
    out = list(map_threads(_square_or_fail, list(range(8)), workers=2))
    assert [o.value for o in out] == [0, 1, 4, None, 16, 25, 36, 49]
    assert isinstance(out[3].error, ValueError) and all(o.ok for i, o in enumerate(out) if i != 3)


def test_processes_keep_input_order_and_an_exception_is_that_items_own() -> None:
    out = map_processes(_square_or_fail, list(range(8)), workers=2)
    assert [o.value for o in out] == [0, 1, 4, None, 16, 25, 36, 49]
    assert isinstance(out[3].error, ValueError)


def test_a_worker_that_dies_fails_only_its_own_item() -> None:
    out = map_processes(_die_on_two, list(range(6)), workers=2, timeout=60)
    assert [o.value for o in out] == [0, 1, None, 3, 4, 5]
    assert isinstance(out[2].error, WorkerLost) and "died" in str(out[2].error)


@pytest.mark.slow
def test_a_hanging_item_times_out_alone_and_the_batch_does_not_hang() -> None:
    started = time.monotonic()
    out = map_processes(_hang_on_one, list(range(4)), workers=2, timeout=3)
    assert time.monotonic() - started < 60
    assert [o.value for o in out] == [0, None, 2, 3]
    assert isinstance(out[1].error, WorkerLost) and "limit 3" in str(out[1].error)


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    ts = testsigstore.TestSigstore(seed=41)
    d = tmp_path_factory.mktemp("batch")
    root = ts.write_trusted_root(d / "trusted_root.json")
    jobs: list[VerifyJob] = []
    for i in range(6):
        body = f"#!/bin/sh\necho tool {i}\n".encode()
        art = d / f"tool{i}"
        art.write_bytes(body)
        bundle = d / f"tool{i}.sigstore.json"
        bundle.write_text(json.dumps(ts.sign_artifact(body, identity=ID, issuer=ISS)))
        if i == 2:
            art.write_bytes(body + b"# tampered\n")  # signed bytes replaced: COMPROMISED
        jobs.append(VerifyJob(str(art), (str(bundle),)))
    jobs.insert(4, VerifyJob(str(d / "missing"), (str(d / "tool0.sigstore.json"),)))
    return {"root": root, "jobs": jobs}


def test_batch_verification_on_two_processes_decides_what_one_process_decides(signed) -> None:
    kw: dict[str, Any] = {"constraints": Constraints(signers=(IdentityRule(identity=ID, issuer=ISS),)),
                          "trusted_root": signed["root"], "cache": False}
    two = verify_batch(signed["jobs"], workers=2, **kw)
    one = verify_batch(signed["jobs"], workers=1, **kw)
    assert [r.artifact for r in two] == [j.artifact for j in signed["jobs"]]
    assert [r.exit_code for r in two] == [0, 0, 1, 0, 2, 0, 0]
    assert [r.exit_code for r in one] == [r.exit_code for r in two]
    assert two[2].result is not None and two[2].result["trust_level"] == "COMPROMISED"
    assert two[4].error is not None and "missing" in two[4].error["message"]
    levels = [r.result["trust_level"] if r.result else None for r in two]
    assert levels == [r.result["trust_level"] if r.result else None for r in one]


def test_hash_of_many_files_prints_in_the_order_given(tmp_path: Path) -> None:
    names = []
    for i in range(40):
        p = tmp_path / f"f{i:02d}"
        p.write_bytes(os.urandom(1 << 16) if i % 3 else b"")
        names.append(str(p))
    names.insert(7, str(tmp_path / "absent"))
    r = cli("hash", *names)
    assert r.code == 2 and "absent" in r.err
    printed = [line.split("  ", 1) for line in r.out.splitlines()]
    assert [name for _, name in printed] == [n for n in names if not n.endswith("absent")]
    assert all(hexdigest == hashlib.sha256(Path(name).read_bytes()).hexdigest()
               for hexdigest, name in printed)
