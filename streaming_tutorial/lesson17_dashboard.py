"""The shop pipeline's live terminal dashboard (lesson 17), its summary and its picture.

    board = ShopBoard(spark, queries, folder, funnel_sql=..., trending=...)
    with Dashboard(board.snapshot) as screen:        # redrawn in place, a few times a second

        def redraw():
            board.refresh()         # the figures that cost a Spark job, every few seconds
            screen.tick()           # off a terminal: print the dashboard now and then

        run_queries(queries, args, every=redraw)

``render(snapshot)`` is a pure function from the figures to text: the same ``Snapshot``, the
same lines. On a terminal, rich's ``Live`` redraws it in place ``REFRESH_PER_SECOND`` times a
second; when stdout is not a terminal (the tour, the tests, CI) ``tick`` prints it every
``PLAIN_EVERY_SECONDS`` instead. Figures that cost a Spark job (a memory table, a Delta table)
are read by ``ShopBoard.refresh`` every few seconds; a query's progress is read at every redraw.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Sequence

from lesson17_alerts import (
    describe_alert,
    latest_per_key,
    read_alerts,
    read_batch_files,
    sent_to_kafka,
)

from common import paths
from common.timestamps import parse_iso
from teaching import plots

REFRESH_PER_SECOND = 4
PLAIN_EVERY_SECONDS = 10.0  # how often the plain (not a terminal) dashboard is printed
TOP = 5  # categories, products and alerts shown


@dataclass(frozen=True)
class QueryLine:
    """One query's last micro-batch, from its progress report."""

    name: str
    batch: int | None = None
    batch_ms: int | None = None
    input_rate: float | None = None  # rows per second arriving
    watermark: str = "-"  # HH:MM:SS, '-' without one
    state_rows: int | None = None


@dataclass
class Snapshot:
    """Every figure the dashboard shows, at one moment."""

    seconds: float = 0.0
    revenue_window: str = "-"  # the latest 5-minute window, '10:40-10:45'
    # category, purchases and revenue in the latest window, revenue in all windows
    revenue: list[tuple[str, int, float, float]] = field(default_factory=list)
    # every category that sold, by its revenue in all windows, the highest first
    category_totals: list[tuple[str, float]] = field(default_factory=list)
    funnel: tuple[int, int, int] = (0, 0, 0)  # views, carts, purchases
    # name, views, carts, purchases
    products: list[tuple[str, int, int, int]] = field(default_factory=list)
    # open (in state), closed, with a purchase, mean length in seconds of the closed ones
    sessions: tuple[int | None, int, int, float] = (None, 0, 0, 0.0)
    alerts: list[str] = field(default_factory=list)  # the latest first
    alert_count: int = 0
    queries: list[QueryLine] = field(default_factory=list)


def query_line(name: str, report: dict | None) -> QueryLine:
    """A progress report (``query.lastProgress``) as one dashboard line."""
    if not report:
        return QueryLine(name)
    mark = (report.get("eventTime") or {}).get("watermark")
    operators = report.get("stateOperators") or []
    return QueryLine(
        name,
        report["batchId"],
        report["durationMs"].get("triggerExecution"),
        report.get("inputRowsPerSecond"),
        mark[11:19] if mark and not mark.startswith("1970") else "-",
        sum(operator["numRowsTotal"] for operator in operators) if operators else None,
    )


def percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def table(header: Sequence[str], rows: Sequence[Sequence]) -> list[str]:
    """Left-aligned columns, two spaces apart, indented by two."""
    cells = [[str(cell) for cell in header]] + [
        ["-" if cell is None else str(cell) for cell in row] for row in rows
    ]
    widths = [max(len(row[column]) for row in cells) for column in range(len(header))]
    lines = []
    for row in cells:
        padded = "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        lines.append("  " + padded.rstrip())
    return lines


def funnel_line(views: int, carts: int, purchases: int) -> str:
    return (
        f"views {views} -> carts {carts} ({percent(carts, views)}) -> purchases {purchases} "
        f"({percent(purchases, carts)}); overall {percent(purchases, views)}"
    )


def render(snapshot: Snapshot) -> str:
    """The dashboard as text: a pure function of ``snapshot``."""
    s = snapshot
    lines = [
        f"Shop pipeline, {s.seconds:.0f} s",
        f"Revenue per category (latest window {s.revenue_window})",
    ]
    lines += table(
        ("category", "purchases", "revenue", "all windows"),
        [
            (name, count, f"{now:.2f}", f"{total:.2f}")
            for name, count, now, total in s.revenue[:TOP]
        ],
    )
    lines += [f"Funnel: {funnel_line(*s.funnel)}", "Top products"]
    lines += table(("product", "views", "carts", "purchases"), s.products[:TOP])
    open_, closed, bought, _ = s.sessions
    lines += [
        f"Sessions: {'-' if open_ is None else open_} open (in state), {closed} closed, "
        f"{bought} ended in a purchase ({percent(bought, closed)})",
        f"Alerts: {s.alert_count}" + (", the latest:" if s.alerts else ""),
    ]
    lines += [f"  {alert}" for alert in s.alerts[:TOP]]
    lines += ["Queries"] + table(
        ("query", "batch", "batch ms", "rows/s in", "watermark", "state rows"),
        [
            (
                q.name,
                q.batch,
                q.batch_ms,
                None if q.input_rate is None else f"{q.input_rate:.1f}",
                q.watermark,
                q.state_rows,
            )
            for q in s.queries
        ],
    )
    return "\n".join(lines)


def render_summary(snapshot: Snapshot) -> str:
    """What the run added up to: funnel rates, top categories and products, sessions, alerts."""
    s = snapshot
    views, carts, purchases = s.funnel
    _, closed, bought, seconds = s.sessions
    lines = [
        f"Funnel rates: view -> cart {percent(carts, views)}, "
        f"cart -> purchase {percent(purchases, carts)}, "
        f"view -> purchase {percent(purchases, views)} "
        f"({views} views, {carts} carts, {purchases} purchases)",
        "Top categories by revenue: "
        + (", ".join(f"{name} {total:.2f}" for name, total in s.category_totals[:TOP]) or "-"),
        "Top products by purchases: "
        + (", ".join(f"{name} {bought_}" for name, _, _, bought_ in s.products[:TOP]) or "-"),
        f"Sessions closed: {closed}, {bought} ended in a purchase ({percent(bought, closed)}), "
        f"{seconds:.0f} s long on average",
        f"Alerts: {s.alert_count}",
    ]
    return "\n".join(lines + [f"  {alert}" for alert in s.alerts[:TOP]])


class ShopBoard:
    """The shop pipeline's figures, gathered while it runs (see the module docstring)."""

    def __init__(
        self, spark, queries: Sequence, folder: Path, *, funnel_sql: str, trending: Path
    ) -> None:
        self.spark = spark
        self.queries = list(queries)
        self.folder = folder
        # Query name -> id: the batch files of this checkpoint's queries are named after it.
        self.ids = {query.name: query.id for query in self.queries}
        self.funnel_sql = funnel_sql
        self.trending = trending
        self.started = time.monotonic()
        self.figures = Snapshot()
        self.last_batch: dict[str, dict] = {}  # query name -> its last report of a batch that ran

    def refresh(self) -> None:
        """Read the figures that cost a Spark job or a file read (every few seconds, not at each
        redraw)."""
        revenue = latest_per_key(
            read_batch_files(self.folder / "revenue", self.ids["revenue"]),
            "window_start",
            "category",
        )
        latest = max((row["window_start"] for row in revenue), default=None)
        totals = {}
        for row in revenue:
            totals[row["category"]] = round(totals.get(row["category"], 0.0) + row["revenue"], 2)
        now = [row for row in revenue if row["window_start"] == latest]
        end = now[0]["window_end"][11:16] if now else ""
        sessions = read_batch_files(self.folder / "sessions", self.ids["sessions"])
        alerts = read_alerts(self.folder / "alerts")
        funnel = (
            self.spark.sql(self.funnel_sql).first()
            if self.spark.catalog.tableExists("funnel")
            else None
        )
        self.figures = Snapshot(
            revenue_window=f"{latest[11:16]}-{end}" if latest else "-",
            revenue=sorted(
                (
                    (row["category"], row["purchases"], row["revenue"], totals[row["category"]])
                    for row in now
                ),
                key=lambda row: (-row[2], row[0]),
            ),
            category_totals=sorted(totals.items(), key=lambda item: (-item[1], item[0])),
            funnel=(funnel.views or 0, funnel.carts or 0, funnel.purchases or 0)
            if funnel
            else (0, 0, 0),
            products=self.read_products(),
            sessions=(
                None,
                len(sessions),
                sum(row["purchased"] for row in sessions),
                sum(row["seconds"] for row in sessions) / len(sessions) if sessions else 0.0,
            ),
            alerts=[describe_alert(alert) for alert in reversed(alerts)],
            alert_count=len(alerts) + len(sent_to_kafka(self.folder / "alerts")),
        )

    def read_products(self) -> list[tuple[str, int, int, int]]:
        # The table exists from its first commit on: the query makes _delta_log/ before it writes
        # 00000000000000000000.json (a redraw in between failed with DELTA_TABLE_NOT_FOUND).
        if not any((self.trending / "_delta_log").glob("*.json")):
            return []
        rows = (
            self.spark.read.format("delta")
            .load(paths.uri(self.trending))
            .orderBy("purchases", "views", "product_name", ascending=[False, False, True])
            .limit(TOP)
            .collect()
        )
        # The schema lets a product have no name: then its id stands for it.
        return [
            (row.product_name or row.product_id, row.views, row.carts, row.purchases)
            for row in rows
        ]

    def plot(self, target: Path) -> Path:
        """Save the run's picture (``plot_pipeline``): the latest row of each revenue window, the
        funnel table."""
        revenue = latest_per_key(
            read_batch_files(self.folder / "revenue", self.ids["revenue"]),
            "window_start",
            "category",
        )
        funnel = (
            self.spark.sql("SELECT * FROM funnel ORDER BY window_start").collect()
            if self.spark.catalog.tableExists("funnel")
            else []
        )
        return plot_pipeline(revenue, funnel, target)

    def snapshot(self) -> Snapshot:
        """The last figures, with each query's latest micro-batch (cheap: read at every redraw)."""
        lines = []
        for query in self.queries:
            report = query.lastProgress
            if report and "addBatch" in report["durationMs"]:  # not an idle report
                self.last_batch[query.name] = report
            lines.append(query_line(query.name, self.last_batch.get(query.name)))
        state = next((line.state_rows for line in lines if line.name == "sessions"), None)
        return replace(
            self.figures,
            seconds=time.monotonic() - self.started,
            sessions=(state, *self.figures.sessions[1:]),
            queries=lines,
        )


class Dashboard:
    """Show ``render(figures())`` while the ``with`` block runs: live on a terminal, else every
    few seconds."""

    def __init__(
        self,
        figures: Callable[[], Snapshot],
        *,
        live: bool | None = None,
        every_seconds: float = PLAIN_EVERY_SECONDS,
        out=print,
    ) -> None:
        self.figures = figures
        self.every_seconds = every_seconds
        self.out = out
        self.live = sys.stdout.isatty() if live is None else live
        self.last_text = ""  # the last frame rendered
        self.last_print = 0.0  # when the plain dashboard was last printed
        self.printed = ""  # the last frame printed
        self._live = None  # rich's Live display, on a terminal

    def text(self) -> str:
        try:
            self.last_text = render(self.figures())
        except Exception:  # a query stopping while it is read (py4j): show the last frame again
            pass
        return self.last_text

    def __enter__(self) -> "Dashboard":
        self.last_print = time.monotonic()
        if self.live:
            from rich.live import Live
            from rich.text import Text

            # Live redraws in a thread of its own, calling get_renderable each time.
            self._live = Live(
                get_renderable=lambda: Text(self.text()), refresh_per_second=REFRESH_PER_SECOND
            )
            self._live.start()
        return self

    def tick(self) -> None:
        """Plain mode: print the dashboard if ``every_seconds`` have passed since the last print."""
        if not self.live and time.monotonic() - self.last_print >= self.every_seconds:
            self.last_print = time.monotonic()
            self.show()

    def show(self) -> None:
        """Print the dashboard, unless it has not changed since the last print (but for its
        clock)."""
        text = self.text()
        if text.split("\n", 1)[-1] != self.printed.split("\n", 1)[-1]:
            self.printed = text
            self.out(text + "\n")

    def __exit__(self, *exc) -> None:
        if self._live is not None:
            self._live.stop()  # the last frame stays on the screen
        else:
            self.show()


def plot_pipeline(revenue: Sequence[dict], funnel: Sequence, target: Path) -> Path:
    """Save a PNG: revenue per category per 5-minute window, and the funnel per 2-minute window."""
    from matplotlib.dates import DateFormatter

    figure, (top, bottom) = plots.new_figure(2, 1, figsize=(9, 7), dpi=100)
    for category in sorted({row["category"] for row in revenue}):
        points = sorted(
            (parse_iso(row["window_start"]), row["revenue"])
            for row in revenue
            if row["category"] == category
        )
        top.plot([x for x, _ in points], [y for _, y in points], marker="o", label=category)
    top.xaxis.set_major_formatter(DateFormatter("%H:%M"))
    top.set_title("Revenue per category, per 5-minute window (event time)")
    top.set_ylabel("revenue")
    top.legend(loc="upper right", fontsize=8)
    starts = [row.window_start.strftime("%H:%M") for row in funnel]
    for offset, (name, color) in enumerate(
        (("views", "tab:blue"), ("carts", "tab:orange"), ("purchases", "tab:green"))
    ):
        bottom.bar(
            [index + (offset - 1) * 0.27 for index in range(len(funnel))],
            [row[name] for row in funnel],
            width=0.27,
            color=color,
            label=name,
        )
    bottom.set_xticks(range(len(funnel)), starts, rotation=45, fontsize=7)
    bottom.set_title("The funnel, per 2-minute window")
    bottom.legend(loc="upper right", fontsize=8)
    for axis in (top, bottom):
        axis.grid(color="lightgray", linewidth=0.6)
    return plots.save_figure(figure, target)
