"""lesson14_metrics: the Prometheus page filtered to the streaming gauges, the session settings,
the history server command and the look from outside (no JVM: a recorded page and hand-made query
objects)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pyspark
from lesson14_metrics import (
    GAUGES,
    PROMETHEUS_PATH,
    Snapshot,
    event_log_conf,
    history_server_command,
    print_streaming_metrics,
    prometheus_conf,
    streaming_metrics,
)

from conftest import free_port

# Lines of a real page (pyspark 4.2.0, namespace streaming_course, a query named sensor_stats).
PAGE = (
    'metrics_streaming_course_driver_BlockManager_memory_maxMem_MB_Number{type="gauges"} 434\n'
    "metrics_streaming_course_driver_spark_streaming_sensor_stats_eventTime_watermark_Number"
    '{type="gauges"} 1795423593000\n'
    "metrics_streaming_course_driver_spark_streaming_sensor_stats_eventTime_watermark_Value"
    '{type="gauges"} 1795423593000\n'
    "metrics_streaming_course_driver_spark_streaming_sensor_stats_inputRate_total_Value"
    '{type="gauges"} 8.004002001000499\n'
    "metrics_streaming_course_driver_spark_streaming_sensor_stats_latency_Value"
    '{type="gauges"} 468\n'
    "metrics_streaming_course_driver_spark_streaming_sensor_stats_processingRate_total_Value"
    '{type="gauges"} 34.18803418803419\n'
    "metrics_streaming_course_driver_spark_streaming_sensor_stats_states_rowsTotal_Value"
    '{type="gauges"} 7\n'
    "metrics_streaming_course_driver_spark_streaming_sensor_stats_states_usedBytes_Value"
    '{type="gauges"} 4976\n'
    "metrics_streaming_course_driver_spark_streaming_sensor_quarantine_latency_Value"
    '{type="gauges"} 120\n'
    'metrics_other_driver_spark_streaming_sensor_stats_latency_Value{type="gauges"} 1\n'
    "metrics_streaming_course_driver_LiveListenerBus_listenerProcessingTime_org_apache_spark_sql_Count"
    '{type="timers"} 271\n'
)


def test_the_streaming_gauges_are_found_once_each_with_their_query():
    found = streaming_metrics(PAGE, "streaming_course")
    assert [(m.query, m.gauge, m.value) for m in found] == [
        ("sensor_stats", "eventTime_watermark", 1795423593000.0),
        ("sensor_stats", "inputRate_total", 8.004002001000499),
        ("sensor_stats", "latency", 468.0),
        ("sensor_stats", "processingRate_total", 34.18803418803419),
        ("sensor_stats", "states_rowsTotal", 7.0),
        ("sensor_stats", "states_usedBytes", 4976.0),
        ("sensor_quarantine", "latency", 120.0),
    ]
    assert {m.gauge for m in found} == set(GAUGES)
    assert len(streaming_metrics(PAGE)) == 8  # any namespace
    assert streaming_metrics("") == []


def test_the_settings_a_session_needs_at_creation(tmp_path):
    conf = prometheus_conf("streaming_course")
    assert conf["spark.sql.streaming.metricsEnabled"] == "true"
    assert (
        conf["spark.metrics.conf.*.sink.prometheusServlet.class"]
        == "org.apache.spark.metrics.sink.PrometheusServlet"
    )
    assert (
        conf["spark.metrics.conf.*.sink.prometheusServlet.path"]
        == PROMETHEUS_PATH
        == "/metrics/prometheus"
    )
    assert conf["spark.metrics.namespace"] == "streaming_course"
    assert event_log_conf(tmp_path / "events") == {
        "spark.eventLog.enabled": "true",
        "spark.eventLog.dir": (tmp_path / "events").as_uri(),
    }
    assert not (tmp_path / "events").exists()  # settings only: the lesson creates the folder


def test_the_history_server_starts_from_the_pip_package(tmp_path):
    command = history_server_command(tmp_path)
    spark_class = Path(pyspark.__file__).parent / "bin" / "spark-class"
    assert spark_class.is_file()
    assert command == (
        f'SPARK_HISTORY_OPTS="-Dspark.history.fs.logDirectory={tmp_path.as_uri()}" '
        f"{spark_class} org.apache.spark.deploy.history.HistoryServer"
    )
    assert "-Dspark.history.ui.port=18081" in history_server_command(tmp_path, port=18081)


def fake(ui_url, progress, status=None, active=("q",)):
    query = SimpleNamespace(
        recentProgress=progress, status=status or {"message": "Waiting for next trigger"}
    )
    spark = SimpleNamespace(
        sparkContext=SimpleNamespace(uiWebUrl=ui_url),
        streams=SimpleNamespace(active=[SimpleNamespace(name=name) for name in active]),
    )
    return spark, query


def test_a_snapshot_waits_for_rows_and_says_why_a_page_could_not_be_fetched(capsys):
    spark, query = fake(f"http://127.0.0.1:{free_port()}", [{"numInputRows": 0}])
    snapshot = Snapshot(spark, query)
    snapshot.take()
    assert snapshot.status is None  # nothing read yet: nothing to look at
    query.recentProgress.append({"numInputRows": 5})
    snapshot.take()
    assert snapshot.status == {"message": "Waiting for next trigger"} and snapshot.active == ["q"]
    assert snapshot.page == ""
    assert snapshot.error.startswith("URLError")  # nothing listens on that port
    print_streaming_metrics(snapshot, "streaming_course", "q")
    assert "0 streaming gauges (could not fetch it: URLError" in capsys.readouterr().out


def test_the_query_s_gauges_are_printed_with_what_they_are(capsys):
    spark, query = fake(None, [])
    snapshot = Snapshot(spark, query)
    snapshot.page = PAGE
    print_streaming_metrics(snapshot, "streaming_course", "sensor_stats")
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "/metrics/prometheus, as last fetched while the query ran: 7 streaming gauges"
    assert out[3] == (
        "  metrics_streaming_course_driver_spark_streaming_sensor_stats_latency_Value"
        '{type="gauges"} 468   <- last micro-batch, ms'
    )
    assert len(out) == 7
