"""Exercise 14.1 · A listener's log of every batch — a reference solution."""

import json
from dataclasses import dataclass

from pyspark.sql.streaming import StreamingQueryListener

INPUT_GREW = "INPUT GREW"  # the batch read more rows than the query's batch before it
LATE_ROWS_DROPPED = "LATE ROWS DROPPED"  # the state operators dropped rows as too late


@dataclass
class BatchFacts:
    """What one micro-batch's progress report says (see the exercise's text)."""

    batch_id: int
    input_rows: int
    watermark: str | None
    state_rows: int
    dropped: int
    flags: tuple[str, ...] = ()


class BatchRecorder(StreamingQueryListener):
    """One BatchFacts per micro-batch of the query named ``query_name``, in ``self.records``."""

    def __init__(self, query_name: str) -> None:
        self.query_name = query_name
        self.records: list[BatchFacts] = []

    def onQueryStarted(self, event) -> None:
        pass

    def onQueryProgress(self, event) -> None:
        # The report as Spark writes it: plain JSON, the same as query.lastProgress.
        report = json.loads(event.progress.json)
        # A listener gets the events of every query of the session: keep this query's only.
        if report.get("name") != self.query_name:
            return
        # Before the first watermark Spark reports the epoch; a query without one has no
        # eventTime at all.
        watermark = report.get("eventTime", {}).get("watermark")
        if watermark is not None and watermark.startswith("1970-01-01"):
            watermark = None
        # One entry per stateful operator (here the aggregation and the deduplication).
        operators = report.get("stateOperators", [])
        dropped = sum(operator["numRowsDroppedByWatermark"] for operator in operators)
        flags = []
        # numInputRows is a count; inputRowsPerSecond and processedRowsPerSecond are rates.
        if self.records and report["numInputRows"] > self.records[-1].input_rows:
            flags.append(INPUT_GREW)
        if dropped > 0:
            flags.append(LATE_ROWS_DROPPED)
        self.records.append(
            BatchFacts(
                batch_id=report["batchId"],
                input_rows=report["numInputRows"],
                watermark=watermark,
                state_rows=sum(operator["numRowsTotal"] for operator in operators),
                dropped=dropped,
                flags=tuple(flags),
            )
        )

    def onQueryIdle(self, event) -> None:
        pass

    def onQueryTerminated(self, event) -> None:
        pass
