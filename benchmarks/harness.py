"""What every benchmark shares: the machine, statistics, progress lines, batch times, results.json.

    stats = Stats.of([412, 380, 395, 401, 388])     # median 395, min 380, max 412, p95, p99
    results.put_stats("stateful_batch", stats)      # stateful_batch_p50_ms, _min, _max, _p95, _p99
    with progress.step("stateful", "course settings"):   # [3/9] stateful: course settings ... 12 s
        ...
    results.write(folder / "results.json")

A figure is the median of at least ``MIN_SAMPLES`` measurements after warm-up ones are
dropped, with min and max beside it. The ``--tiny`` size (the smoke test's) takes fewer:
it checks that every key is written, not what the numbers are.
"""

from __future__ import annotations

import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator, Sequence

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "streaming_tutorial"), str(ROOT)]

# The names of Spark's state store settings (lesson 15 writes out the ones it uses).
PROVIDER_CONF = "spark.sql.streaming.stateStore.providerClass"
# Spark's default provider:
HDFS_PROVIDER = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
CHANGELOG_CONF = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"

from lesson13_latency import percentile  # noqa: E402  (nearest rank, as lesson 13 reports latency)

MIN_SAMPLES = (
    5  # per figure, after warm-up (the --tiny size takes fewer: it checks keys, not numbers)
)
POLL_SECONDS = 0.05  # how often a running query's progress is read


@dataclass(frozen=True)
class Stats:
    """A sample's median (p50), min, max, p95 and p99, and how many measurements it holds."""

    p50: float
    min: float
    max: float
    p95: float
    p99: float
    n: int

    @classmethod
    def of(cls, samples: Sequence[float]) -> "Stats":
        if not samples:
            raise ValueError("no measurements: the benchmark ran no batch after its warm-up")
        return cls(
            statistics.median(samples),
            min(samples),
            max(samples),
            percentile(samples, 95),
            percentile(samples, 99),
            len(samples),
        )


def load_average() -> float:
    return round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else 0.0


def memory_gib() -> float:
    try:
        return round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        return 0.0


def java_version() -> str:
    """'17.0.12' from ``java -version`` (it prints on stderr), '' if there is no java."""
    try:
        shown = subprocess.run(
            ["java", "-version"], capture_output=True, text=True, timeout=30
        ).stderr
    except (OSError, subprocess.TimeoutExpired):
        return ""
    found = re.search(r'version "([^"]+)"', shown)
    return found.group(1) if found else shown.strip().splitlines()[0] if shown.strip() else ""


def machine() -> dict:
    import pyspark

    return {
        "cores": os.cpu_count() or 1,
        "memory_gib": memory_gib(),
        "java": java_version(),
        "pyspark": pyspark.__version__,
        "python": platform.python_version(),
        "system": platform.system(),
    }


class Progress:
    """Numbered progress lines on stderr: ``[3/9] stateful: course settings ... 12 s``."""

    def __init__(self, steps: int, stream=sys.stderr):
        self.steps, self.done, self.stream = steps, 0, stream
        self.started = time.monotonic()

    @contextmanager
    def step(self, benchmark: str, what: str) -> Iterator[None]:
        self.done += 1
        head = f"[{self.done}/{self.steps}] {benchmark}: {what}"
        print(f"{head} ...", file=self.stream, flush=True)
        began = time.monotonic()
        try:
            yield
        finally:
            print(f"{head} ... {time.monotonic() - began:.0f} s", file=self.stream, flush=True)

    def elapsed(self) -> float:
        return time.monotonic() - self.started


class Results:
    """The flat object written to results.json: named figures, the date and the machine."""

    def __init__(self, info: dict | None = None):
        self.figures: dict[str, float] = {}
        self.info = info or {}

    def put(self, key: str, value: float) -> None:
        self.figures[key] = round(float(value), 3)

    def put_stats(self, prefix: str, stats: Stats, unit: str = "ms") -> None:
        """prefix_p50_<unit> (the figure), with _min, _max, _p95, _p99 and _n beside it."""
        self.put(f"{prefix}_p50_{unit}", stats.p50)
        for name in ("min", "max", "p95", "p99"):
            self.put(
                f"{prefix}_p50_{unit}_{name}"
                if name in ("min", "max")
                else f"{prefix}_{name}_{unit}",
                getattr(stats, name),
            )
        self.put(f"{prefix}_n", stats.n)

    def put_median(self, key: str, stats: Stats) -> None:
        """key = the median, key_min and key_max beside it, key_n the number of measurements."""
        self.put(key, stats.p50)
        self.put(f"{key}_min", stats.min)
        self.put(f"{key}_max", stats.max)
        self.put(f"{key}_n", stats.n)

    def as_dict(self) -> dict:
        return {
            "date": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            **self.info,
            **self.figures,
        }

    def write(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            json.dumps(self.as_dict(), indent=2, sort_keys=False) + "\n", encoding="utf-8"
        )
        return path


# --- batch times from a running query -----------------------------------------------------------


def reports(query) -> list[dict]:
    """The query's recent progress reports as dicts (pyspark 4 gives objects with a .json)."""
    return [
        json.loads(report.json) if hasattr(report, "json") else report
        for report in query.recentProgress
    ]


def data_batches(query) -> list[dict]:
    """Reports of micro-batches that read rows (idle reports and empty batches left out), by
    batch id."""
    seen = {}
    for report in reports(query):
        if report["numInputRows"] > 0 and "addBatch" in report["durationMs"]:
            seen[report["batchId"]] = report
    return [seen[batch] for batch in sorted(seen)]


def wait_for_batches(query, count: int, timeout: float) -> list[dict]:
    """Poll until ``query`` has run ``count`` micro-batches with rows; their reports. Raises if it
    failed or took longer than ``timeout`` seconds (the benchmark then says which step)."""
    deadline = time.monotonic() + timeout
    while True:
        if query.exception() is not None:
            raise RuntimeError(f"the query failed: {str(query.exception()).splitlines()[0][:300]}")
        batches = data_batches(query)
        if len(batches) >= count:
            return batches[:count]
        if time.monotonic() > deadline:
            raise TimeoutError(f"{len(batches)} of {count} micro-batches within {timeout:g} s")
        time.sleep(POLL_SECONDS)


def batch_times(query, warm_up: int, measured: int, timeout: float) -> list[float]:
    """``durationMs.triggerExecution`` of ``measured`` micro-batches after ``warm_up`` dropped
    ones."""
    batches = wait_for_batches(query, warm_up + measured, timeout)
    return [batch["durationMs"]["triggerExecution"] for batch in batches[warm_up:]]


def stop(query) -> None:
    """Stop ``query`` between two micro-batches (stopping mid-batch logs the writers' aborts)."""
    from infra.runner import stop_between_batches

    try:
        stop_between_batches(query)
    except Exception:  # noqa: BLE001 - a query that already died has nothing left to stop
        pass


@contextmanager
def sql_conf(spark, settings: dict[str, str | None]) -> Iterator[None]:
    """Session SQL confs for the queries started inside; the earlier values back afterwards.

    A streaming query keeps the confs it started with (several are written into its
    checkpoint), so one session can run both sides of a comparison one after the other.
    None unsets a key (Spark's default applies).
    """
    before = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.unset(key) if value is None else spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in before.items():
            spark.conf.unset(key) if value is None else spark.conf.set(key, value)


# --- the table at the end -----------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    key: str
    at_least: float | None = None
    at_most: float | None = None

    def describe(self) -> str:
        return f">= {self.at_least:g}" if self.at_least is not None else f"<= {self.at_most:g}"

    def met(self, value: float) -> bool:
        if self.at_least is not None:
            return value >= self.at_least
        return value <= self.at_most


def table(figures: dict, targets: Sequence[Target], shown: Sequence[str]) -> str:
    """name | value | target | met? for the headline figures (and every figure with a target)."""
    by_key = {target.key: target for target in targets}
    rows = [("figure", "value", "target", "met?")]
    for key in shown:
        if key not in figures:
            continue
        target = by_key.get(key)
        value = figures[key]
        rows.append(
            (
                key,
                f"{value:,.0f}" if abs(value) >= 100 else f"{value:g}",
                target.describe() if target else "",
                ("yes" if target.met(value) else "NO") if target else "",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = [
        " | ".join(
            cell.ljust(width) if i in (0, 2, 3) else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        )
        for row in rows
    ]
    lines.insert(1, "-+-".join("-" * width for width in widths))
    return "\n".join(lines)
