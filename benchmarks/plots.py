"""The two pictures of docs/PERFORMANCE.md, drawn from results.json's figures.

- ``stateful_partitions.png``: stateful batch time (p50) against shuffle partitions.
- ``state_store_size.png``: update batch time (p50) against state size, one line per provider.
"""

from __future__ import annotations

import re
from pathlib import Path

PARTITIONS_KEY = re.compile(r"stateful_partitions_(\d+)_p50_ms$")
STATE_KEY = re.compile(r"state_store_(hdfs|rocksdb)_(10k|100k|1m)_batch_ms$")
KEYS_PER_TIER = {"10k": 10_000, "100k": 100_000, "1m": 1_000_000}
PROVIDER_NAMES = {
    "hdfs": "HDFS-backed (Spark's default)",
    "rocksdb": "RocksDB + changelog checkpointing",
}


def partitions_points(figures: dict) -> list[tuple[int, float]]:
    points = {
        int(m.group(1)): value for key, value in figures.items() if (m := PARTITIONS_KEY.match(key))
    }
    return sorted(points.items())


def state_points(figures: dict) -> dict[str, list[tuple[int, float]]]:
    """{provider: [(keys, batch ms)]}, at the keys each size really held (state_store_<tier>_keys:
    --quick stops at 100k); a size that repeats a smaller one's keys is left out."""
    lines: dict[str, dict[int, float]] = {}
    for key, value in figures.items():
        if m := STATE_KEY.match(key):
            keys = int(figures.get(f"state_store_{m.group(2)}_keys", KEYS_PER_TIER[m.group(2)]))
            lines.setdefault(m.group(1), {}).setdefault(keys, value)
    return {name: sorted(points.items()) for name, points in sorted(lines.items())}


def draw(figures: dict, folder: Path, title_note: str) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")  # files only, no window
    import matplotlib.pyplot as plt

    folder.mkdir(parents=True, exist_ok=True)
    written = []
    figure, axes = plt.subplots(figsize=(6, 3.6))
    points = partitions_points(figures)
    axes.plot(
        [p for p, _ in points],
        [ms for _, ms in points],
        marker="o",
        label="the course's other settings",
    )
    if "stateful_default_batch_p50_ms" in figures:
        axes.plot(
            [figures.get("stateful_default_partitions", 200)],
            [figures["stateful_default_batch_p50_ms"]],
            marker="s",
            linestyle="none",
            color="tab:red",
            label="Spark's defaults",
        )
    axes.legend(fontsize=8)
    axes.set_xscale("log")
    axes.set_xlabel("spark.sql.shuffle.partitions")
    axes.set_ylabel("stateful micro-batch, p50 (ms)")
    axes.set_ylim(bottom=0)
    axes.set_title(f"rate -> groupBy().count(), update mode\n{title_note}", fontsize=9)
    axes.grid(True, alpha=0.3)
    figure.tight_layout()
    written.append(folder / "stateful_partitions.png")
    figure.savefig(written[-1], dpi=100)
    plt.close(figure)

    figure, axes = plt.subplots(figsize=(6, 3.6))
    for name, points in state_points(figures).items():
        axes.plot(
            [k for k, _ in points], [ms for _, ms in points], marker="o", label=PROVIDER_NAMES[name]
        )
    axes.set_xscale("log")
    axes.set_xlabel("keys in state")
    axes.set_ylabel("update micro-batch, p50 (ms)")
    axes.set_ylim(bottom=0)
    axes.set_title(f"1,000 keys updated per batch\n{title_note}", fontsize=9)
    axes.legend(fontsize=8)
    axes.grid(True, alpha=0.3)
    figure.tight_layout()
    written.append(folder / "state_store_size.png")
    figure.savefig(written[-1], dpi=100)
    plt.close(figure)
    return written
