"""Lessons 09-11: stream joins, foreachBatch into Delta + a real JDBC database, Delta Lake.

Every test runs real queries on finite, hand-written input (one file per micro-batch,
availableNow) and checks the exact rows that land in real Delta tables, a real SQLite
database (through the JVM's JDBC driver) and a real Kafka broker.
"""

from __future__ import annotations

import json
import os
import re
import time
from datetime import datetime, timedelta

import pytest
from pyspark.sql import Row

from common.files import json_lines, write_atomically
from common.microbatch import collect_batches, stream_batches, write_batches
from common.schemas import CLICK_SCHEMA, ECOMMERCE_EVENT_SCHEMA, IMPRESSION_SCHEMA
from conftest import load_lesson, run_script


def shop_event(number: int, user: str, kind: str, product: str, category: str, price: float, quantity: int,
               time_of_day: str) -> dict:
    return {
        "event_id": f"EVT-{number:06d}",
        "user_id": user,
        "event_type": kind,
        "product_id": product,
        "product_name": f"name of {product}",
        "category": category,
        "price": price,
        "quantity": quantity,
        "timestamp": f"2025-01-15T{time_of_day}.000Z",
    }


def at(time_of_day: str) -> datetime:
    return datetime.fromisoformat(f"2025-01-15T{time_of_day}")


def write_one_more_file(folder, name: str, records: list[dict]) -> None:
    """A file the file source sees after the ones write_batches wrote (newer mtime)."""
    path = write_atomically(folder, name, json_lines(records))
    now = time.time()
    os.utime(path, (now, now))
