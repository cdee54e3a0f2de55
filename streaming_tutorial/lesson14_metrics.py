"""Watching queries from outside the process: Prometheus metrics on the Spark UI's port, and
event logs a history server shows after the run.

The PrometheusServlet (``spark.metrics.conf.*``) and the event log are read only when the
session is created, so both go to ``get_spark(extra_conf=...)``::

    settings = {**prometheus_conf("course"), **event_log_conf(folder)}
    with lesson_session(LESSON, args, extra_conf=settings):
        ...
        page = fetch_prometheus(spark.sparkContext.uiWebUrl)
        for metric in streaming_metrics(page): ...

``spark.sql.streaming.metricsEnabled`` is read by each query when it starts (so
``spark.conf.set`` before ``start()`` works too; prometheus_conf sets it with the rest). It
registers one metrics source per query, named
``spark.streaming.<queryName>``, with six gauges; the PrometheusServlet sink serves every
source at ``/metrics/prometheus`` on the UI's port, in lines like::

    metrics_course_driver_spark_streaming_sensor_stats_inputRate_total_Value{type="gauges"} 12.5

(``metrics_<spark.metrics.namespace>_driver_<source>_<gauge>_Value``; without a namespace
Spark puts the application id there, which changes every run.)
"""

from __future__ import annotations

import re
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pyspark

from common import paths

PROMETHEUS_PATH = "/metrics/prometheus"
HISTORY_PORT = 18080  # the history server's default
# The gauges of a streaming query's metrics source, as Prometheus spells them ('-' becomes '_'),
# and what each is.
GAUGES = {
    "inputRate_total": "input rows per second",
    "processingRate_total": "processed rows per second",
    "latency": "last micro-batch, ms",
    "eventTime_watermark": "watermark, ms since the epoch",
    "states_rowsTotal": "rows in state",
    "states_usedBytes": "state memory, bytes",
}
LINE = re.compile(
    r"^metrics_(?P<namespace>\w+?)_driver_spark_streaming_(?P<query>\w+)_"
    r"(?P<gauge>" + "|".join(GAUGES) + r")_Value\{[^}]*\} (?P<value>\S+)$"
)


def prometheus_conf(namespace: str) -> dict[str, str]:
    """Session settings: streaming metrics on, served by the PrometheusServlet sink on the UI's
    port."""
    return {
        "spark.sql.streaming.metricsEnabled": "true",
        "spark.metrics.conf.*.sink.prometheusServlet.class": (
            "org.apache.spark.metrics.sink.PrometheusServlet"
        ),
        "spark.metrics.conf.*.sink.prometheusServlet.path": PROMETHEUS_PATH,
        "spark.metrics.namespace": namespace,  # a fixed name instead of the application id
    }


def event_log_conf(folder: Path) -> dict[str, str]:
    """Session settings: write the event log (what the UI shows, replayable) into ``folder``, which
    must exist when the session starts."""
    return {"spark.eventLog.enabled": "true", "spark.eventLog.dir": folder.resolve().as_uri()}


def history_server_command(folder: Path, port: int = HISTORY_PORT) -> str:
    """The shell command that starts Spark's history server from the pip package, reading
    ``folder``.

    It runs in the foreground (Ctrl-C stops it); pyspark's bin/spark-class finds its own jars.
    """
    spark_class = Path(pyspark.__file__).parent / "bin" / "spark-class"
    options = f"-Dspark.history.fs.logDirectory={folder.resolve().as_uri()}"
    if port != HISTORY_PORT:
        options += f" -Dspark.history.ui.port={port}"
    return (
        f'SPARK_HISTORY_OPTS="{options}" {spark_class} '
        "org.apache.spark.deploy.history.HistoryServer"
    )


def fetch_prometheus(ui_url: str, timeout: float = 10.0) -> str:
    """The text of the UI's Prometheus page."""
    with urllib.request.urlopen(ui_url.rstrip("/") + PROMETHEUS_PATH, timeout=timeout) as response:
        return response.read().decode("utf-8")


@dataclass(frozen=True)
class StreamingMetric:
    query: str
    gauge: str  # a key of GAUGES
    value: float
    line: str  # the line as the page has it


def streaming_metrics(page: str, namespace: str | None = None) -> list[StreamingMetric]:
    """The streaming queries' gauges on a Prometheus page (one per gauge: the ``_Value`` line;
    each also has a ``_Number`` twin), in page order; only ``namespace``'s when given."""
    found = []
    for line in page.splitlines():
        match = LINE.match(line.strip())
        if match and (namespace is None or match["namespace"] == namespace):
            found.append(
                StreamingMetric(match["query"], match["gauge"], float(match["value"]), line.strip())
            )
    return found


class Snapshot:
    """The last look at a running query from outside (``take`` as a ``run_queries`` ``every``
    callback; it looks once the query has read rows): its status, ``spark.streams.active`` and,
    when the session has a UI, the Prometheus page. A query's metrics go away when it stops."""

    def __init__(self, spark, query) -> None:
        self.spark = spark
        self.query = query
        # The UI's real address: 4040, or the next free port when another Spark has it; None
        # without a UI.
        self.ui_url = spark.sparkContext.uiWebUrl
        self.status: dict | None = None
        self.active: list[str] = []
        self.page = ""
        self.error = ""  # why the page could not be fetched

    def take(self) -> None:
        if not any(report["numInputRows"] for report in self.query.recentProgress):
            return  # nothing to see yet; each later call looks again, so the last look is kept
        self.status = dict(self.query.status)
        self.active = [query.name for query in self.spark.streams.active]
        if self.ui_url:
            try:
                self.page = fetch_prometheus(self.ui_url)
            except OSError as error:  # the UI disabled, or a proxy in the way
                self.error = f"{type(error).__name__}: {error}"


def print_streaming_metrics(snapshot: Snapshot, namespace: str, query: str) -> None:
    """The gauges of ``query`` on the Prometheus page ``snapshot`` fetched, each with what it is."""
    found = streaming_metrics(snapshot.page, namespace)
    where = f"{snapshot.ui_url}{PROMETHEUS_PATH}" if snapshot.ui_url else PROMETHEUS_PATH
    print(
        f"{where}, as last fetched while the query ran: {len(found)} streaming gauges"
        + (f" (could not fetch it: {snapshot.error})" if snapshot.error else ""),
        flush=True,
    )
    for metric in (metric for metric in found if metric.query == query):
        print(f"  {metric.line}   <- {GAUGES[metric.gauge]}", flush=True)


def print_history_server_hint(folder: Path) -> None:
    """Where the event logs are, and the command that shows them after the run."""
    print(
        f"Event logs in {paths.display(folder)}. "
        "To see this run's Structured Streaming tab later:\n"
        f"  {history_server_command(folder)}\n"
        f"  then open http://localhost:{HISTORY_PORT} (Ctrl-C stops it).",
        flush=True,
    )
