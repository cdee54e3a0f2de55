"""The same queries on ``local[2]`` and on a standalone cluster of 1 worker x 2 cores, side by side.

Run (from the project root, on a quiet machine; about 2 minutes on 2 cores)
  python -m benchmarks.cluster               # prints a table, writes output/benchmarks/cluster.json
  python -m benchmarks.cluster --samples 5   # fewer micro-batches per figure

It starts the course's standalone cluster on free loopback ports in a temporary course
home (``python course.py cluster start`` as a learner would, then ``stop``), and runs each
side in a Python process of its own (one SparkContext per process):

- ``session_start_s``: from the session's start until the first executor can take a task
  (locally the driver is the executor; on the cluster the worker launches a JVM for it);
- ``stateful_batch_p50_ms``: stateful.py's query (rate source -> groupBy(key).count(),
  update mode, noop sink), micro-batch times after a warm-up, shuffle partitions as the
  course sets them on each side (the local cores; the cluster's executor cores);
- ``batch_groupby_s``: one batch job, 20 million rows grouped into 100 keys (CPU-bound).

A third side runs on the cluster with Spark's default 200 shuffle partitions: what the
course's "partitions = the executors' cores" saves there.

The cluster uses the same machine's 2 cores, so it cannot be faster: the figures show what a
cluster's extra hops (driver <-> executor RPC, task serialisation, a second JVM) cost per
micro-batch, which is what you pay for being able to add workers.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import harness  # noqa: F401  (puts streaming_tutorial/ on sys.path first)
from benchmarks.harness import Stats, load_average, machine

ROOT = Path(__file__).resolve().parents[1]
GROUPBY_ROWS = 20_000_000
SPARK_DEFAULT_PARTITIONS = (
    200  # what a cluster session gets when nobody sets spark.sql.shuffle.partitions
)


def child(master: str, samples: int, workdir: Path, partitions: int | None = None) -> dict:
    """One side's figures, measured in this process; ``partitions`` set explicitly, else the
    course's choice."""
    from pyspark.sql import functions as F

    from benchmarks import stateful
    from common.session import get_spark

    started = time.monotonic()
    chosen = {"spark.sql.shuffle.partitions": str(partitions)} if partitions else {}
    spark = get_spark("benchmark-cluster", master=master, ui=False, extra_conf=chosen)
    spark.range(1).count()  # a first task: an executor is there and has run something
    session_start = time.monotonic() - started
    try:
        stateful.measure(
            spark, workdir / "warm-up", {}, 0, 3
        )  # the JVMs' first query (not recorded)
        batches = Stats.of(stateful.measure(spark, workdir / "stateful", {}, 1, samples))
        timings = []
        for _ in range(3):
            began = time.monotonic()
            spark.range(GROUPBY_ROWS).groupBy((F.col("id") % 100).alias("key")).count().collect()
            timings.append(time.monotonic() - began)
        return {
            "master": master,
            "session_start_s": round(session_start, 2),
            "shuffle_partitions": int(spark.conf.get("spark.sql.shuffle.partitions")),
            "stateful_batch_p50_ms": round(batches.p50, 1),
            "stateful_batch_p95_ms": round(batches.p95, 1),
            "batch_groupby_s": round(sorted(timings)[1], 2),
        }
    finally:
        spark.stop()


def run_side(master: str, samples: int, home: Path, partitions: int | None = None) -> dict:
    name = f"{master.replace('/', '_').replace(':', '_')}-{partitions or 'course'}"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.cluster",
            "--child",
            master,
            "--samples",
            str(samples),
            "--workdir",
            str(home / "work" / name),
            "--partitions",
            str(partitions or 0),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "STREAMING_COURSE_HOME": str(home)},
    )
    if result.returncode != 0:
        raise SystemExit(f"the {master} side failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def cluster_cli(*args: str, home: Path) -> str:
    from tools import cluster

    result = cluster.run_cli(*args, home=home)
    if result.returncode != 0:
        raise SystemExit(result.stdout + result.stderr)
    return result.stdout


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--samples", type=int, default=15, help="micro-batches per figure (default: %(default)s)"
    )
    parser.add_argument(
        "--output", type=Path, default=ROOT / "output" / "benchmarks" / "cluster.json"
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--workdir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--partitions", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.samples, args.workdir, args.partitions or None)))
        return 0

    from infra.simulators import free_port

    load_before = load_average()
    with tempfile.TemporaryDirectory(prefix="bench-cluster-") as folder:
        home = Path(folder)
        port = free_port()
        sides = [run_side("local[2]", args.samples, home)]
        print("local[2] measured; starting the cluster ...", file=sys.stderr, flush=True)
        cluster_cli(
            "start",
            "--port",
            str(port),
            "--webui-port",
            str(free_port()),
            "--worker-webui-port",
            str(free_port()),
            "--cores",
            "2",
            "--memory",
            "2g",
            home=home,
        )
        try:
            sides.append(run_side(f"spark://127.0.0.1:{port}", args.samples, home))
            sides.append(
                run_side(f"spark://127.0.0.1:{port}", args.samples, home, SPARK_DEFAULT_PARTITIONS)
            )
        finally:
            cluster_cli("stop", home=home)
    local, remote, untuned = sides
    report = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": machine(),
        "load_before": load_before,
        "load_after": load_average(),
        "samples": args.samples,
        "local": local,
        "cluster": remote,
        "cluster_spark_default_partitions": untuned,
        "stateful_cluster_over_local": round(
            remote["stateful_batch_p50_ms"] / local["stateful_batch_p50_ms"], 2
        ),
        "stateful_cluster_default_over_course": round(
            untuned["stateful_batch_p50_ms"] / remote["stateful_batch_p50_ms"], 1
        ),
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"{'figure':<26}{'local[2]':>12}{'1 worker x 2 cores':>22}{'same, 200 partitions':>24}")
    for key in (
        "session_start_s",
        "shuffle_partitions",
        "stateful_batch_p50_ms",
        "stateful_batch_p95_ms",
        "batch_groupby_s",
    ):
        print(f"{key:<26}{local[key]:>12}{remote[key]:>22}{untuned[key]:>24}")
    print(f"(load {load_before} -> {report['load_after']}; written to {args.output})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
