"""Both cores: many independent items through threads (I/O and hashing) or processes (CPU-bound
verification), results always in input order, each item's failure its own (docs/caching.md).

Threads suit hashing: hashlib releases the GIL while it digests a buffer, and reads release it too.
Signature verification is mostly Python (sigstore-python, pydantic, our checks), so it needs
processes. Either way a caller gets one ``Outcome`` per item, in the order given:

* an exception raised for one item is that item's ``error`` (the others still run);
* a worker process that dies (a crash, the OOM killer) or an item that outlives ``timeout`` never
  hangs the batch: the pool is torn down, and every item it had not finished is run again on its own,
  in a fresh single-worker pool, where a crash or a time-out is charged to that item alone.

Processes start with ``fork`` where the platform has it (Linux), so the workers inherit what the
parent already imported and built (sigstore, the trusted root, its Verifier): call from a process
with no other threads running, as the CLI is.
"""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Generic, TypeVar

from atip_trust._base.lazy import lazy_import
from atip_trust._base.record import Record

# Processes only for verification (admission/batch.py): ``hash`` of many files, on threads, does not load
# multiprocessing and the process pool (a quarter of its start-up). concurrent.futures (which imports
# logging, ~8 ms) only once two items are to run at once.
if TYPE_CHECKING:
    import multiprocessing.context
    from concurrent import futures
    from concurrent.futures import Future, process
else:
    futures = lazy_import("concurrent.futures")
    process = lazy_import("concurrent.futures.process")  # (with futures)
    multiprocessing = lazy_import("multiprocessing")  # (with futures)

T = TypeVar("T")
R = TypeVar("R")


class Outcome(Record, Generic[R]):
    """One item's result, or why there is none (``error``: the exception, or a description)."""

    value: R | None = None
    error: BaseException | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


class WorkerLost(RuntimeError):
    """The process running an item died, or the item ran past its time limit."""


def default_workers(limit: int = 2) -> int:
    """The cores this process may use, at most ``limit``."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(limit, cores))


def _call(fn: Callable[[T], R], item: T) -> Outcome[R]:
    try:
        return Outcome(value=fn(item))
    except Exception as err:  # noqa: BLE001 - each item's failure is its own (module docstring)
        return Outcome(error=err)


def _call_many(fn: Callable[[T], R], items: list[T]) -> list[Outcome[R]]:
    return [_call(fn, item) for item in items]


def map_threads(fn: Callable[[T], R], items: Sequence[T], *, workers: int = 2) -> Iterator[Outcome[R]]:
    """``fn`` over ``items`` on up to ``workers`` threads, yielded in input order as they complete
    (a caller can print the first result while later ones are still being computed)."""
    if workers <= 1 or len(items) <= 1:
        for item in items:
            yield _call(fn, item)
        return
    with futures.ThreadPoolExecutor(max_workers=min(workers, len(items))) as pool:
        # A bounded number of items ahead of the consumer (results are small: digests). Wide enough
        # that the workers never wait for this thread to hand them more: with a window of a few, a
        # large item at the head left the other worker idle, and each refill waited for this thread
        # to be scheduled (~20% of hashing /usr/bin: bench/run.py ``usrbin``).
        window = 512 * workers
        pending: deque[Future[Outcome[R]]] = deque()
        queued = iter(items)
        for item in queued:
            pending.append(pool.submit(_call, fn, item))
            if len(pending) >= window:
                break
        while pending:
            done = pending.popleft().result()
            for item in queued:
                pending.append(pool.submit(_call, fn, item))
                break
            yield done


def _context() -> multiprocessing.context.BaseContext:
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else None)


def _kill(pool: process.ProcessPoolExecutor) -> None:
    """Stop a pool whose worker hangs: ``shutdown`` alone would wait for it forever."""
    procs = list(getattr(pool, "_processes", {}).values())  # the stdlib keeps no public handle
    for p in procs:
        try:
            p.kill()
        except (OSError, AttributeError):
            pass
    pool.shutdown(wait=True, cancel_futures=True)


def map_processes(fn: Callable[[T], R], items: Sequence[T], *, workers: int = 2,
                  timeout: float | None = None) -> list[Outcome[R]]:
    """``fn`` (a module-level function; its items and results must pickle) over ``items`` on
    ``workers`` processes; one ``Outcome`` per item, in input order. ``timeout``: seconds one item may
    take (None: no limit; items travel in chunks, and a chunk gets its items' time together). ``workers <= 1`` runs in this process (the reference a bench compares with;
    no time limit applies there)."""
    if workers <= 1 or len(items) <= 1 and timeout is None:
        return [_call(fn, item) for item in items]
    results: list[Outcome[R] | None] = [None] * len(items)
    n = min(workers, len(items))
    # Items travel in chunks (a few per worker and round): one round trip per item would cost the
    # parent more than a short verification takes, and the parent shares the same cores.
    size = max(1, min(64, len(items) // (n * 4)))
    groups = [range(i, min(i + size, len(items))) for i in range(0, len(items), size)]
    pool = process.ProcessPoolExecutor(max_workers=n, mp_context=_context())
    broken = False
    try:
        submitted = [pool.submit(_call_many, fn, [items[i] for i in g]) for g in groups]
        for g, fut in zip(groups, submitted):
            try:
                outs = fut.result(timeout=None if timeout is None else timeout * len(g))
            except (process.BrokenProcessPool, futures.TimeoutError):
                broken = True
                break
            for i, o in zip(g, outs):
                results[i] = o
    finally:
        if broken:
            _kill(pool)
        else:
            pool.shutdown(wait=True)
    # Whatever the broken pool left undone runs again alone, so that only the item at fault fails.
    for i, done in enumerate(results):
        if done is None:
            results[i] = _alone(fn, items[i], timeout)
    return [r if r is not None else Outcome(error=WorkerLost("no result")) for r in results]


def _alone(fn: Callable[[T], R], item: T, timeout: float | None) -> Outcome[R]:
    pool = process.ProcessPoolExecutor(max_workers=1, mp_context=_context())
    started = time.monotonic()
    try:
        out = pool.submit(_call, fn, item).result(timeout=timeout)
    except process.BrokenProcessPool:
        _kill(pool)
        return Outcome(error=WorkerLost("the worker process running this item died"))
    except futures.TimeoutError:
        _kill(pool)
        return Outcome(error=WorkerLost(
            f"not finished after {time.monotonic() - started:.1f} s (limit {timeout} s)"))
    pool.shutdown(wait=True)
    return out


__all__ = ["Outcome", "WorkerLost", "default_workers", "map_processes", "map_threads"]
