"""Records for the exercises' scenarios, written compactly, shaped like the simulators' output.

Every time is a time of day (HH:MM:SS) on the scenarios' day, in UTC.
"""

from __future__ import annotations

from teaching.demos import SCENARIO_DAY


def at(time_of_day: str) -> str:
    """'10:30:05' -> '2025-01-15T10:30:05.000Z', as the simulators write event times
    ('10:30:05.800' keeps its milliseconds)."""
    fraction = "" if "." in time_of_day else ".000"
    return f"{SCENARIO_DAY}T{time_of_day}{fraction}Z"


def seconds(time_of_day: str) -> int | float:
    """'10:30:24' -> its second of the day, 37824; '10:30:24.954' keeps the milliseconds,
    37824.954 (a watermark or a time a wrong answer gives can have some)."""
    hours, minutes, secs = time_of_day.split(":")
    value = round(3600 * int(hours) + 60 * int(minutes) + float(secs), 3)
    return int(value) if value == int(value) else value


def reading(
    reading_id: int,
    sensor: str,
    time_of_day: str,
    temperature: float = 21.0,
    humidity: float = 40.0,
) -> dict:
    """A sensor reading (schemas.SENSOR_SCHEMA)."""
    return {
        "reading_id": reading_id,
        "sensor_id": sensor,
        "temperature": temperature,
        "humidity": humidity,
        "event_time": at(time_of_day),
    }


def transaction(
    transaction_id: str, user: str, amount: float, time_of_day: str, category: str = "books"
) -> dict:
    """A payment (schemas.TRANSACTION_SCHEMA)."""
    return {
        "transaction_id": transaction_id,
        "user_id": user,
        "amount": amount,
        "category": category,
        "timestamp": at(time_of_day),
    }


def shop_event(
    event_id: str,
    user: str,
    kind: str,
    time_of_day: str,
    *,
    product: str = "P001",
    category: str = "Home",
    price: float = 10.0,
    quantity: int = 1,
) -> dict:
    """A shop event (schemas.ECOMMERCE_EVENT_SCHEMA): kind is view, cart or purchase."""
    return {
        "event_id": event_id,
        "user_id": user,
        "event_type": kind,
        "product_id": product,
        "product_name": f"Product {product}",
        "category": category,
        "price": price,
        "quantity": quantity,
        "timestamp": at(time_of_day),
    }


def impression(impression_id: str, ad: str, user: str, time_of_day: str) -> dict:
    """An ad impression (schemas.IMPRESSION_SCHEMA)."""
    return {
        "impression_id": impression_id,
        "ad_id": ad,
        "user_id": user,
        "impression_time": at(time_of_day),
    }


def click(click_id: str, impression_id: str, ad: str, user: str, time_of_day: str) -> dict:
    """A click on an impression (schemas.CLICK_SCHEMA)."""
    return {
        "click_id": click_id,
        "impression_id": impression_id,
        "ad_id": ad,
        "user_id": user,
        "click_time": at(time_of_day),
    }
