"""Another right answer: the progress read through the event's attributes
(StreamingQueryProgress, StateOperatorProgress) instead of its JSON, the flags built as a
tuple."""

from dataclasses import dataclass

from pyspark.sql.streaming import StreamingQueryListener

INPUT_GREW = "INPUT GREW"  # the batch read more rows than the query's batch before it
LATE_ROWS_DROPPED = "LATE ROWS DROPPED"  # the state operators dropped rows as too late
EPOCH = "1970-01-01T00:00:00.000Z"  # the watermark Spark reports before there is one


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
        self.rows_before: int | None = None  # the previous batch's numInputRows

    def onQueryStarted(self, event) -> None:
        pass

    def onQueryProgress(self, event) -> None:
        progress = event.progress
        if progress.name != self.query_name:
            return
        watermark = progress.eventTime.get("watermark")
        rows = progress.numInputRows
        dropped = sum(op.numRowsDroppedByWatermark for op in progress.stateOperators)
        grew = self.rows_before is not None and rows > self.rows_before
        self.rows_before = rows
        self.records.append(
            BatchFacts(
                progress.batchId,
                rows,
                None if watermark == EPOCH else watermark,
                sum(op.numRowsTotal for op in progress.stateOperators),
                dropped,
                (INPUT_GREW,) * grew + (LATE_ROWS_DROPPED,) * (dropped > 0),
            )
        )

    def onQueryIdle(self, event) -> None:
        pass

    def onQueryTerminated(self, event) -> None:
        pass
