"""Counters and a latency histogram in the Prometheus text exposition format (version 0.0.4).

Kept by hand rather than through a client library: four series, written under one lock, are less code
than a dependency, and the format is a stable, documented text.
"""

from __future__ import annotations

import threading

#: Upper bounds (seconds) of the latency histogram's buckets: a warm decision is around a millisecond.
BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)


class Metrics:
    """Decisions by endpoint and outcome, verdict-cache hits, and the request latency histogram."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.decisions: dict[tuple[str, str], int] = {}
        self.requests: dict[int, int] = {}
        self.buckets = [0] * len(BUCKETS)
        self.count = 0
        self.total = 0.0

    def decided(self, endpoint: str, outcome: str) -> None:
        with self._lock:
            key = (endpoint, outcome)
            self.decisions[key] = self.decisions.get(key, 0) + 1

    def answered(self, status: int, seconds: float) -> None:
        with self._lock:
            self.requests[status] = self.requests.get(status, 0) + 1
            self.count += 1
            self.total += seconds
            for i, bound in enumerate(BUCKETS):
                if seconds <= bound:
                    self.buckets[i] += 1

    def text(self, cache_hits: int) -> str:
        with self._lock:
            lines = [
                "# HELP atip_trust_decisions_total Decisions answered, by endpoint and outcome.",
                "# TYPE atip_trust_decisions_total counter",
            ]
            for (endpoint, outcome), n in sorted(self.decisions.items()):
                lines.append(f'atip_trust_decisions_total{{endpoint="{endpoint}",outcome="{outcome}"}} {n}')
            lines += ["# HELP atip_trust_requests_total HTTP requests answered, by status.",
                      "# TYPE atip_trust_requests_total counter"]
            for status, n in sorted(self.requests.items()):
                lines.append(f'atip_trust_requests_total{{status="{status}"}} {n}')
            lines += ["# HELP atip_trust_verdict_cache_hits_total Admissions answered from the verdict cache.",
                      "# TYPE atip_trust_verdict_cache_hits_total counter",
                      f"atip_trust_verdict_cache_hits_total {cache_hits}",
                      "# HELP atip_trust_request_seconds Time from a request's arrival to its answer.",
                      "# TYPE atip_trust_request_seconds histogram"]
            for bound, n in zip(BUCKETS, self.buckets, strict=True):  # one count per bound
                lines.append(f'atip_trust_request_seconds_bucket{{le="{bound:g}"}} {n}')
            lines += [f'atip_trust_request_seconds_bucket{{le="+Inf"}} {self.count}',
                      f"atip_trust_request_seconds_sum {self.total:.6f}",
                      f"atip_trust_request_seconds_count {self.count}"]
        return "\n".join(lines) + "\n"


__all__ = ["BUCKETS", "Metrics"]
