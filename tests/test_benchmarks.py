"""``python -m benchmarks``: the statistics it reports, and a tiny run that writes every key.

Timings belong to the benchmark, not to tests: nothing here asserts how fast anything was.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest

from benchmarks.harness import Results, Stats, Target, percentile, table
from benchmarks.plots import partitions_points, state_points

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Every figure issue 11 names (docs/PERFORMANCE.md's table is made of them).
KEYS = [
    "stateful_default_over_tuned",
    "stateful_batch_p50_ms",
    "stateful_batch_p50_ms_min",
    "stateful_batch_p50_ms_max",
    "stateless_batch_p50_ms",
    "stateless_batch_p95_ms",
    *[
        f"state_store_{provider}_{tier}_{what}"
        for provider in ("hdfs", "rocksdb")
        for tier in ("10k", "100k", "1m")
        for what in ("batch_ms", "memory_mb")
    ],
    "producer_msgs_per_s",
    "producer_confluent_msgs_per_s",
    "e2e_microbatch_p50_ms",
    "e2e_microbatch_p99_ms",
    "e2e_realtime_p50_ms",
    "e2e_realtime_p99_ms",
    "files_to_delta_rows_per_s",
    "kafka_to_delta_rows_per_s",
    "rate_to_noop_rows_per_s",
    "first_output_s",
]


# --- the statistics
# ----------------------------------------------------------------------------------


def test_stats_are_the_median_the_extremes_and_nearest_rank_percentiles():
    stats = Stats.of([400, 100, 300, 200, 500, 1000, 600, 700, 800, 900])
    assert (stats.p50, stats.min, stats.max, stats.n) == (550, 100, 1000, 10)
    assert (stats.p95, stats.p99) == (1000, 1000)
    assert Stats.of([3, 1, 2]) == Stats(2, 1, 3, 3, 3, 3)


def test_percentile_is_nearest_rank():
    values = list(range(1, 101))
    assert [percentile(values, q) for q in (1, 50, 95, 99, 100)] == [1, 50, 95, 99, 100]
    assert percentile([7], 99) == 7


def test_no_measurement_is_an_error_not_a_zero():
    with pytest.raises(ValueError, match="no measurements"):
        Stats.of([])


def test_results_write_the_median_with_its_min_and_max_beside_it(tmp_path):
    results = Results({"machine": {"cores": 2}})
    results.put_stats("stateful_batch", Stats.of([300, 200, 250, 400, 260]))
    results.put_median("producer_msgs_per_s", Stats.of([50_000.4, 60_000, 55_000]))
    written = json.loads(results.write(tmp_path / "results.json").read_text())
    assert written["machine"] == {"cores": 2} and "date" in written
    assert {key: written[key] for key in written if key.startswith("stateful")} == {
        "stateful_batch_p50_ms": 260,
        "stateful_batch_p50_ms_min": 200,
        "stateful_batch_p50_ms_max": 400,
        "stateful_batch_p95_ms": 400,
        "stateful_batch_p99_ms": 400,
        "stateful_batch_n": 5,
    }
    assert (written["producer_msgs_per_s"], written["producer_msgs_per_s_min"]) == (
        55_000,
        50_000.4,
    )


def test_the_table_says_whether_each_target_is_met():
    shown = table(
        {"a_ms": 240.0, "b_per_s": 40_000.0, "c": 3.5},
        [Target("a_ms", at_most=250), Target("b_per_s", at_least=50_000)],
        ["a_ms", "b_per_s", "c", "missing"],
    )
    lines = shown.splitlines()
    assert [line.split("|")[0].strip() for line in lines[2:]] == ["a_ms", "b_per_s", "c"]
    assert [cell.strip() for cell in lines[2].split("|")] == ["a_ms", "240", "<= 250", "yes"]
    assert [cell.strip() for cell in lines[3].split("|")] == ["b_per_s", "40,000", ">= 50000", "NO"]
    assert [cell.strip() for cell in lines[4].split("|")] == ["c", "3.5", "", ""]


def test_the_plots_read_their_points_from_the_figures():
    figures = {
        "stateful_partitions_200_p50_ms": 7000.0,
        "stateful_partitions_2_p50_ms": 300.0,
        "stateful_partitions_2_p50_ms_min": 1.0,
        "state_store_rocksdb_1m_batch_ms": 500.0,
        "state_store_rocksdb_10k_batch_ms": 200.0,
        "state_store_hdfs_10k_batch_ms": 210.0,
        "state_store_hdfs_10k_batch_ms_max": 9.0,
    }
    assert partitions_points(figures) == [(2, 300.0), (200, 7000.0)]
    assert state_points(figures) == {
        "hdfs": [(10_000, 210.0)],
        "rocksdb": [(10_000, 200.0), (1_000_000, 500.0)],
    }
    # A --quick run stops at 100k keys: its "1m" size is drawn where it was, or left out if
    # repeated.
    quick = {
        "state_store_hdfs_10k_batch_ms": 1.0,
        "state_store_hdfs_100k_batch_ms": 2.0,
        "state_store_hdfs_1m_batch_ms": 3.0,
        "state_store_100k_keys": 100_000,
        "state_store_1m_keys": 100_000,
    }
    assert state_points(quick) == {"hdfs": [(10_000, 1.0), (100_000, 2.0)]}


# --- one tiny run, as a learner runs it
# ----------------------------------------------------------------


@pytest.mark.kafka
@pytest.mark.smoke
def published_plots() -> dict:
    docs = os.path.join(ROOT, "docs")
    return {
        name: open(os.path.join(docs, name), "rb").read()
        for name in sorted(os.listdir(docs))
        if name.endswith(".png")
    }


def test_a_tiny_run_writes_every_key_as_a_number(kafka_bootstrap, course_home, tmp_path):
    output = tmp_path / "bench"
    published = published_plots()
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--tiny", "--output", str(output)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={
            **os.environ,
            "STREAMING_COURSE_HOME": str(course_home),
            "KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap,
            "PYTHONUNBUFFERED": "1",
        },
    )

    assert result.returncode == 0, result.stderr[-3000:]
    figures = json.loads((output / "results.json").read_text())
    missing = [key for key in KEYS if key not in figures]
    assert not missing, missing
    assert all(
        isinstance(figures[key], (int, float)) and math.isfinite(figures[key]) for key in KEYS
    )
    assert set(figures["machine"]) >= {"cores", "memory_gib", "java", "pyspark"} and figures["date"]
    assert figures["size"] == "tiny"
    # Progress while it ran, the table at the end, the plots beside results.json (not in docs/).
    assert "[1/" in result.stderr and "] first output: 01_basic_streaming.py" in result.stderr
    assert "stateful_default_over_tuned" in result.stdout and "| target" in result.stdout
    assert sorted(path.name for path in output.glob("*.png")) == [
        "state_store_size.png",
        "stateful_partitions.png",
    ]
    assert published_plots() == published, "a run changed the plots in docs/"
    assert not (output / "work").exists(), "the scratch folder is removed"
    assert not (course_home / "checkpoints").exists() or not any(
        (course_home / "checkpoints").iterdir()
    )


def test_only_a_full_run_publishes_its_plots(capsys):
    from benchmarks.__main__ import parse_args

    assert parse_args(["--publish"]).publish
    assert not parse_args(["--quick"]).publish
    for shorter in (["--quick"], ["--tiny"], ["--only", "stateful,state_stores"]):
        with pytest.raises(SystemExit):
            parse_args(["--publish", *shorter])
        assert "--publish copies a full run's plots" in capsys.readouterr().err


@pytest.mark.smoke
def test_no_broker_is_advice_and_exit_1_not_a_traceback(course_home, tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks",
            "--tiny",
            "--only",
            "producer",
            "--output",
            str(tmp_path / "bench"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={
            **os.environ,
            "STREAMING_COURSE_HOME": str(course_home),
            "KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:1",
        },
    )

    assert result.returncode == 1
    assert (
        "No Kafka broker answers at 127.0.0.1:1" in result.stderr
        and "Traceback" not in result.stderr
    )
    assert not (tmp_path / "bench" / "results.json").exists()
