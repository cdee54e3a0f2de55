"""The bad-input corpus: every kind of input a JSON source of the course meets, as bytes, with
what must become of each line. Data only, no Spark: test_bad_input.py writes the cases to
files and to a Kafka topic, runs the sources over them and checks every line's fate.

A case is one file (on Kafka: its lines, one message each). Each line has an outcome: None
for a good record (its expected row is the line read by Python's own ``json``), or the exact
quarantine reason. The cases are built from a ``Dataset`` (a schema and one good record), so
the same kinds are checked for the transactions of lesson 03 and the shop events of lesson 08,
and the field rules (required fields, types, ranges) for every schema a lesson streams.
"""

from __future__ import annotations

import gzip
import json
import sys
from dataclasses import dataclass, field
from datetime import datetime

from pyspark.sql.types import (
    DoubleType,
    FloatType,
    IntegralType,
    StringType,
    StructType,
    TimestampType,
)

from common.schemas import (
    CLICK_SCHEMA,
    ECOMMERCE_EVENT_SCHEMA,
    IMPRESSION_SCHEMA,
    SENSOR_SCHEMA,
    TRANSACTION_SCHEMA,
)

# The kinds of bad input the issue lists; every one has a case below (test_bad_input checks).
ISSUE_KINDS = (
    "truncated JSON",
    "not JSON",
    "wrong types",
    "numbers that overflow",
    "null or unparseable timestamps",
    "missing required fields",
    "unknown extra fields",
    "a top-level JSON array",
    "deep nesting",
    "an empty file",
    "invalid UTF-8",
    "a UTF-8 BOM",
    "CRLF line ends",
    "a 5 MB line",
    "a gzip file",
    "value ranges",
)
BOM = b"\xef\xbb\xbf"  # the UTF-8 byte-order mark
BIG_LINE_BYTES = 5 * 1024 * 1024
NOT_JSON = "not a JSON object"
NOT_UTF8 = "not valid UTF-8"
# A whole number with one digit more than each integral type holds.
TOO_BIG = {"tinyint": 10**3, "smallint": 10**5, "int": 10**10, "bigint": 10**19}
TEXT_AFTER = "text after the JSON object"
MAX_JSON_DEPTH = 999  # how deeply nested a line the sources read (Spark's parser reads 1000 levels)
TOO_DEEP = "nested more than 999 levels deep"


class Raw(str):
    """A value written into the JSON text as it is (1e400, a cut-off number): json.dumps cannot."""


@dataclass(frozen=True)
class Dataset:
    name: str
    schema: StructType
    sample: dict  # one good record, as the simulator writes it

    def line(self, **changes) -> str:
        """The sample as one JSON line, with ``changes``: a value, a ``Raw`` text, or ``...`` to
        leave a field out."""
        record = {
            key: value for key, value in {**self.sample, **changes}.items() if value is not ...
        }
        raw_values = [value for value in record.values() if isinstance(value, Raw)]
        raws = {f"@raw{number}@": value for number, value in enumerate(raw_values)}
        markers = iter(raws)
        text = json.dumps(
            {
                key: next(markers) if isinstance(value, Raw) else value
                for key, value in record.items()
            },
            separators=(",", ":"),
            ensure_ascii=False,
        )
        for marker, value in raws.items():
            text = text.replace(f'"{marker}"', value)
        return text


@dataclass(frozen=True)
class Case:
    kind: str  # in the issue's words
    name: str  # the file it is written to: its extension matters (.gz is decompressed)
    data: bytes  # the file's bytes
    outcomes: tuple[
        str | None, ...
    ]  # per line as Spark's text source splits the file: None (good) or the reason
    behaviour: str  # what happens to it, in one line
    messages: tuple[bytes, ...] | None = field(
        default=None
    )  # the Kafka values, when not simply lines()

    def lines(self) -> list[bytes]:
        """The file's lines as Spark's text source reads them: .gz decompressed, a leading BOM
        skipped, split at \\n, \\r\\n or \\r (a last line without one counts; a final line end adds
        no line)."""
        data = gzip.decompress(self.data) if self.name.endswith(".gz") else self.data
        return data.removeprefix(BOM).splitlines()

    def kafka_values(self) -> list[bytes]:
        return list(self.messages) if self.messages is not None else self.lines()

    def good(self, lines: list[bytes], schema: StructType) -> list[dict]:
        """The rows the good ones of ``lines`` must give: each read by Python's json, the schema's
        fields."""
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(
            max(limit, 3 * MAX_JSON_DEPTH)
        )  # Python's json recurses once per level
        try:
            records = [
                json.loads(line.decode("utf-8-sig"))
                for line, outcome in zip(lines, self.outcomes, strict=True)
                if outcome is None
            ]
        finally:
            sys.setrecursionlimit(limit)
        return [
            {
                name: spark_value(record.get(name), schema[name].dataType)
                for name in schema.fieldNames()
            }
            for record in records
        ]

    def bad(self, lines: list[bytes]) -> list[tuple[str, bytes]]:
        """(reason, raw line) of each bad one of ``lines``, in order."""
        return [
            (outcome, line)
            for line, outcome in zip(lines, self.outcomes, strict=True)
            if outcome is not None
        ]


def spark_value(value, kind):
    """A JSON value as PySpark returns the field: a timestamp as a naive datetime in the (pinned
    UTC) zone."""
    if value is None:
        return None
    if isinstance(kind, TimestampType):
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        return datetime.fromtimestamp(moment.timestamp())
    if isinstance(kind, (DoubleType, FloatType)):
        return float(value)
    return value


def text_case(
    kind: str,
    name: str,
    lines: list[tuple[str | bytes, str | None]],
    behaviour: str,
    *,
    end: bytes = b"\n",
    messages: tuple[bytes, ...] | None = None,
) -> Case:
    """A file of ``lines``, each (text or bytes, outcome), every line ended by ``end``."""
    data = b"".join((line if isinstance(line, bytes) else line.encode()) + end for line, _ in lines)
    return Case(kind, name, data, tuple(outcome for _, outcome in lines), behaviour, messages)


def binary_gzip(seed: bytes) -> bytes:
    """Gzip bytes holding no line end, so a source that does not decompress them sees exactly one
    line. (zlib's output varies between builds; the first padding that fits is taken.)"""
    for padding in range(1000):
        data = gzip.compress(seed + b" " * padding + b"\n", mtime=0)
        if b"\n" not in data and b"\r" not in data:
            return data
    raise AssertionError("no gzip output without line ends")


# --- The field rules of one schema: required fields, types, overflow, timestamps, ranges
# -----------


def what_it_is_not(kind) -> str:
    """How a reason names a field's type (the texts are part of the contract with learners)."""
    if isinstance(kind, TimestampType):
        return "a date and time"
    if isinstance(kind, StringType):
        return "a string"
    return "a whole number" if isinstance(kind, IntegralType) else "a number"


def not_its_type(spec) -> str:
    """The reason for a value of another JSON type than the field's: 'amount is not a number'."""
    return f"{spec.name} is not {what_it_is_not(spec.dataType)}"


def wrong_type_lines(data: Dataset) -> list[tuple[str, str | None]]:
    lines = []
    for spec in data.schema.fields:
        if isinstance(spec.dataType, (DoubleType, FloatType)):
            lines.append((data.line(**{spec.name: "ten"}), f"{spec.name} is not a number"))
        elif isinstance(spec.dataType, IntegralType):
            lines.append((data.line(**{spec.name: 2.5}), f"{spec.name} is not a whole number"))
            # A VARIANT writes 1.0 as 1; from_json does not take it for a whole number.
            lines.append((data.line(**{spec.name: 1.0}), f"{spec.name} is not a whole number"))
            lines.append((data.line(**{spec.name: "two"}), f"{spec.name} is not a whole number"))
        elif isinstance(spec.dataType, StringType):
            # Spark alone would read 7 into a text field as "7": the JSON type is checked first.
            lines.append((data.line(**{spec.name: 7}), f"{spec.name} is not a string"))
    # Key order does not matter: the fields in reverse, the last typed one wrong, still named.
    last = next(
        spec for spec in reversed(data.schema.fields) if not isinstance(spec.dataType, StringType)
    )
    reverse = dict(reversed({**data.sample, last.name: "oops"}.items()))
    lines.append((json.dumps(reverse), f"{last.name} is not {what_it_is_not(last.dataType)}"))
    return lines


def overflow_lines(data: Dataset) -> list[tuple[str, str | None]]:
    lines = []
    for spec in data.schema.fields:
        if isinstance(spec.dataType, (DoubleType, FloatType)):
            lines += [
                (data.line(**{spec.name: Raw(number)}), f"{spec.name} is not a finite number")
                for number in ("1e400", "-1e400")
            ]
            lines.append((data.line(**{spec.name: "NaN"}), f"{spec.name} is not a finite number"))
        elif isinstance(spec.dataType, IntegralType):
            kind = spec.dataType.simpleString()
            lines.append(
                (data.line(**{spec.name: TOO_BIG[kind]}), f"{spec.name} does not fit in {kind}")
            )
            lines.append(
                (data.line(**{spec.name: Raw("1e400")}), f"{spec.name} is not a whole number")
            )
    return lines


def timestamp_lines(data: Dataset) -> list[tuple[str, str | None]]:
    lines = []
    for spec in data.schema.fields:
        if isinstance(spec.dataType, TimestampType):
            missing = None if spec.nullable else f"missing {spec.name}"
            unreadable = f"{spec.name} is not a date and time"
            lines += [
                (data.line(**{spec.name: None}), missing),
                (data.line(**{spec.name: ""}), missing),
                (data.line(**{spec.name: "yesterday"}), unreadable),
                (data.line(**{spec.name: "2025-13-45T99:00:00Z"}), unreadable),
                (data.line(**{spec.name: "2025-01-15 10:30:00"}), None),
            ]  # Spark also reads a space for T
    return lines


def missing_lines(data: Dataset) -> list[tuple[str, str | None]]:
    required = [spec for spec in data.schema.fields if not spec.nullable]
    lines = [(data.line(**{spec.name: ...}), f"missing {spec.name}") for spec in required]
    lines += [(data.line(**{spec.name: None}), f"missing {spec.name}") for spec in required]
    lines += [
        (data.line(**{spec.name: "  "}), f"missing {spec.name}")
        for spec in required
        if isinstance(spec.dataType, StringType)
    ]
    # The issue's record: only the first field. The first required field missing after it is named.
    first = data.schema.fields[0].name
    lines.append((json.dumps({first: data.sample[first]}), f"missing {required[1].name}"))
    # The optional fields may all be left out: a good record with nulls there.
    lines.append(
        (data.line(**{spec.name: ... for spec in data.schema.fields if spec.nullable}), None)
    )
    return lines


def range_lines(data: Dataset) -> list[tuple[str, str | None]]:
    lines = []
    for spec in data.schema.fields:
        if "min" in spec.metadata:
            low = spec.metadata["min"]
            lines += [
                (data.line(**{spec.name: low}), None),
                (data.line(**{spec.name: low - 1}), f"{spec.name} below {low}"),
            ]
        if "max" in spec.metadata:
            high = spec.metadata["max"]
            lines += [
                (data.line(**{spec.name: high}), None),
                (data.line(**{spec.name: high + 1}), f"{spec.name} above {high}"),
            ]
    return lines


def values_of_another_type(data: Dataset, value) -> list[tuple[str, str | None]]:
    """Every field given ``value`` (an object, a list, true...): none of the schemas' fields is of
    its JSON type, so each line is quarantined with that field's reason."""
    return [(data.line(**{spec.name: value}), not_its_type(spec)) for spec in data.schema.fields]


def number_in_text_lines(data: Dataset) -> list[tuple[str, str | None]]:
    lines = []
    for spec in data.schema.fields:
        if isinstance(spec.dataType, StringType):
            lines += [(data.line(**{spec.name: number}), not_its_type(spec)) for number in (7, 7.5)]
    return lines


def number_for_a_time_lines(data: Dataset) -> list[tuple[str, str | None]]:
    """Spark alone reads a number into a timestamp as seconds since 1970: a time must be text."""
    lines = []
    for spec in data.schema.fields:
        if isinstance(spec.dataType, TimestampType):
            lines += [
                (data.line(**{spec.name: seconds}), not_its_type(spec))
                for seconds in (1736937000, 1736937000.5, 0)
            ]
    return lines


def text_in_number_lines(data: Dataset) -> list[tuple[str, str | None]]:
    """A number written as text: Spark alone reads "7" into a decimal, "NaN" into a double."""
    lines = []
    for spec in data.schema.fields:
        if isinstance(spec.dataType, (DoubleType, FloatType)):
            lines.append((data.line(**{spec.name: "7"}), not_its_type(spec)))
            lines += [
                (data.line(**{spec.name: word}), f"{spec.name} is not a finite number")
                for word in ("Infinity", "-Infinity")
            ]
        elif isinstance(spec.dataType, IntegralType):
            lines.append((data.line(**{spec.name: "7"}), not_its_type(spec)))
    return lines


def non_finite_token_lines(data: Dataset) -> list[tuple[str, str | None]]:
    """NaN and Infinity written bare: Spark's reader takes them, but they are not JSON."""
    lines = []
    for spec in data.schema.fields:
        if isinstance(spec.dataType, (DoubleType, FloatType, IntegralType)):
            lines += [
                (data.line(**{spec.name: Raw(token)}), NOT_JSON)
                for token in ("NaN", "Infinity", "-Infinity")
            ]
    return lines


def twice_lines(data: Dataset) -> list[tuple[str, str | None]]:
    """A key given twice: from_json would keep one of the values silently. A field of the schema
    given twice (even with the same value) is quarantined; an unknown key twice is ignored."""
    good = data.line()
    lines = []
    for spec in data.schema.fields:
        again = json.dumps(data.sample[spec.name])
        lines.append((f'{good[:-1]},"{spec.name}":{again}}}', f"{spec.name} appears twice"))
    lines.append((f'{good[:-1]},"note":1,"note":2}}', None))
    return lines


def other_case_lines(data: Dataset) -> list[tuple[str, str | None]]:
    """Keys are case-sensitive: "Amount" is not "amount", so a required field is missing."""
    lines = []
    for spec in data.schema.fields:
        if not spec.nullable:
            record = {
                (key.upper() if key == spec.name else key): value
                for key, value in data.sample.items()
            }
            lines.append((json.dumps(record), f"missing {spec.name}"))
    return lines


def escape_lines(data: Dataset) -> list[tuple[str, str | None]]:
    """JSON escapes in keys and values (\\u0069, \\t, \\", \\/, a surrogate pair), and spaces and
    tabs between tokens: all good, read as Python's json reads them."""
    text_field = next(
        spec.name for spec in data.schema.fields if isinstance(spec.dataType, StringType)
    )
    odd_text = {**data.sample, text_field: 'tab\t, quote ", slash / \u00e9 \u2603 \U0001f600'}
    return [
        # ensure_ascii writes every character beyond ASCII as \\uXXXX (😀 as a surrogate pair).
        (json.dumps(odd_text, ensure_ascii=True).replace("/", "\\/"), None),
        # "transaction_\\u0069d" is the key transaction_id.
        (json.dumps(data.sample).replace('_id"', '_\\u0069d"'), None),
        (json.dumps(data.sample, separators=(" ,\t", " :  ")), None),
    ]


def field_cases(data: Dataset) -> list[Case]:
    """The schema's own rules, one file per kind."""
    return [
        text_case(
            "wrong types",
            "wrong-types.json",
            wrong_type_lines(data),
            "quarantined: '<field> is not a number' (a whole number, a string...), whatever "
            "the order of the keys",
        ),
        text_case(
            "numbers that overflow",
            "overflow.json",
            overflow_lines(data),
            "quarantined: 1e400, -1e400 and NaN are 'not a finite number'; too many digits 'does "
            "not fit'",
        ),
        text_case(
            "null or unparseable timestamps",
            "timestamps.json",
            timestamp_lines(data),
            "quarantined: null or blank is 'missing <field>', unreadable '<field> is not a date "
            "and time'",
        ),
        text_case(
            "missing required fields",
            "missing.json",
            missing_lines(data),
            "quarantined 'missing <field>' (absent, null or blank); optional fields may be absent",
        ),
        text_case(
            "value ranges",
            "ranges.json",
            range_lines(data),
            "quarantined '<field> below <min>' / 'above <max>' (the schema's metadata); the bounds "
            "are good",
        ),
        text_case(
            "an object where a value belongs",
            "object-values.json",
            values_of_another_type(data, {"value": 1}),
            "quarantined '<field> is not a string' (a number, a date and time...): Spark alone "
            "reads it into a text field as its JSON text",
        ),
        text_case(
            "a list where a value belongs",
            "list-values.json",
            values_of_another_type(data, [1, 2]),
            "quarantined '<field> is not ...': Spark alone reads it into a text field as its text",
        ),
        text_case(
            "true or false where a value belongs",
            "boolean-values.json",
            values_of_another_type(data, True),
            "quarantined '<field> is not ...': Spark alone reads it into a text field as 'true'",
        ),
        text_case(
            "a number in a text field",
            "number-in-text.json",
            number_in_text_lines(data),
            "quarantined '<field> is not a string': Spark alone reads 7 as '7'",
        ),
        text_case(
            "a number for a date and time",
            "number-for-time.json",
            number_for_a_time_lines(data),
            "quarantined '<field> is not a date and time': Spark alone reads it as epoch seconds",
        ),
        text_case(
            "a number written as text",
            "text-in-number.json",
            text_in_number_lines(data),
            "quarantined '<field> is not a number'; 'Infinity' as text 'is not a finite number'",
        ),
        text_case(
            "NaN and Infinity tokens",
            "non-finite-tokens.json",
            non_finite_token_lines(data),
            f"quarantined '{NOT_JSON}': Spark's reader takes them, but JSON has no such token",
        ),
        text_case(
            "a key given twice",
            "duplicate-keys.json",
            twice_lines(data),
            "quarantined '<field> appears twice' for a field of the schema (from_json would keep "
            "one value silently); an unknown key twice is ignored",
        ),
        text_case(
            "a key in another case",
            "other-case.json",
            other_case_lines(data),
            "quarantined 'missing <field>': keys are case-sensitive",
        ),
        text_case(
            "JSON escapes and spacing",
            "escapes.json",
            escape_lines(data),
            "good: escaped characters (in keys too) and spaces between tokens read as Python reads "
            "them",
        ),
    ]


# --- Every other kind: framing, encoding, size, compression ---------------------------------------


def deep(levels: int) -> Raw:
    return Raw("[" * levels + "]" * levels)


def corpus(data: Dataset) -> list[Case]:
    """Every case for one dataset: what the file lessons (and, as messages, the Kafka lesson) may
    meet."""
    good = data.line()
    crlf_lines = [(good, None), (data.line(category="Home"), None), ("not json", NOT_JSON)]
    bom_lines = [(BOM + good.encode(), None), (good, None)]
    gz_lines = [(good, None), ("not json", NOT_JSON)]
    return [
        text_case(
            "good lines",
            "good.json",
            [(good, None), (data.line(category='Café ☕ "quoted"'), None)],
            "good: every field read (a control)",
        ),
        text_case(
            "blank lines",
            "blank.json",
            [("", "empty line"), ("   ", "empty line"), (good, None)],
            "quarantined 'empty line'",
        ),
        text_case(
            "truncated JSON",
            "truncated.json",
            [(good[: len(good) // 2], NOT_JSON), (good[:-1], NOT_JSON)],
            f"quarantined '{NOT_JSON}'",
        ),
        text_case(
            "not JSON",
            "not-json.json",
            [
                ("hello world", NOT_JSON),
                ("<record/>", NOT_JSON),
                ("{transaction_id: 1}", NOT_JSON),
                (good + good, TEXT_AFTER),
                (good + " and more", TEXT_AFTER),
            ],
            f"quarantined '{NOT_JSON}'; two records on one line '{TEXT_AFTER}' (from_json kept the "
            f"first)",
        ),
        text_case(
            "a top-level JSON array",
            "array.json",
            [
                (f"[{good}]", NOT_JSON),
                ("[]", NOT_JSON),
                ('"a string"', NOT_JSON),
                ("42", NOT_JSON),
                ("null", NOT_JSON),
            ],
            f"quarantined '{NOT_JSON}' (so are a bare string, number or null)",
        ),
        text_case(
            "unknown extra fields",
            "extra-fields.json",
            [(data.line(note="hi", tags=[1, 2], nested={"a": {"b": None}}), None)],
            "good: fields the schema does not name are ignored",
        ),
        text_case(
            "deep nesting",
            "deep.json",
            [
                (data.line(extra=deep(MAX_JSON_DEPTH - 1)), None),
                (data.line(extra=deep(MAX_JSON_DEPTH)), TOO_DEEP),
                (deep(5000), TOO_DEEP),
            ],
            f"good up to {MAX_JSON_DEPTH} levels (an unknown field, ignored); deeper: quarantined "
            f"'{TOO_DEEP}'",
        ),
        Case(
            "an empty file",
            "empty.json",
            b"",
            (),
            "nothing: no row, no quarantine (lesson 03 prints 'a file with no lines')",
        ),
        text_case(
            "invalid UTF-8",
            "bad-utf8.json",
            [
                (
                    data.line(category="Caf@").encode().replace(b"@", b"\xe9"),
                    NOT_UTF8,
                ),  # Latin-1, not UTF-8
                (good.encode().replace(b'":', b'":\xff', 1), NOT_UTF8),
                (
                    data.line(category="@").encode().replace(b"@", b"\xc0\xaf"),
                    NOT_UTF8,
                ),  # an overlong '/'
                (data.line(category="@").encode().replace(b"@", "€".encode()[:2]), NOT_UTF8),
            ],  # € cut in half
            f"quarantined '{NOT_UTF8}' (Spark would put U+FFFD in the row)",
        ),
        text_case(
            "a UTF-8 BOM",
            "bom.json",
            bom_lines,
            "good: the BOM is skipped (by Spark's file source; in a Kafka value, by parse_json)",
            messages=tuple(
                line if isinstance(line, bytes) else line.encode() for line, _ in bom_lines
            ),
        ),
        text_case(
            "CRLF line ends",
            "crlf.json",
            crlf_lines,
            "good: Spark's text source splits at \\r\\n, no \\r reaches a field or a quarantined "
            "line",
            end=b"\r\n",
            messages=tuple(line.encode() + b"\r\n" for line, _ in crlf_lines),
        ),
        text_case(
            "a 5 MB line",
            "big.json",
            [(data.line(note="x" * BIG_LINE_BYTES), None)],
            "good: read whole (the unknown 5 MB field is ignored); a 5 MB Kafka message needs a "
            "topic whose max.message.bytes allows it",
        ),
        Case(
            "a gzip file",
            "gzipped.json.gz",
            gzip.compress(text_case("", "", gz_lines, "").data, mtime=0),
            tuple(outcome for _, outcome in gz_lines),
            "decompressed by its .gz name: ordinary lines",
        ),
        Case(
            "a gzip file",
            "gzipped-no-suffix.json",
            binary_gzip(good.encode()),
            (NOT_UTF8,),
            f"without .gz it is binary: quarantined '{NOT_UTF8}'",
        ),
        *field_cases(data),
    ]


TRANSACTIONS = Dataset(
    "transactions",
    TRANSACTION_SCHEMA,
    {
        "transaction_id": "TXN-000001",
        "user_id": "USER-1016",
        "amount": 551.04,
        "category": "Electronics",
        "timestamp": "2025-01-15T10:30:01.000Z",
    },
)
SHOP_EVENTS = Dataset(
    "shop events",
    ECOMMERCE_EVENT_SCHEMA,
    {
        "event_id": "EVT-000001",
        "user_id": "USER-2001",
        "event_type": "purchase",
        "product_id": "P001",
        "product_name": "Coffee Maker",
        "category": "Home",
        "price": 89.99,
        "quantity": 2,
        "timestamp": "2025-01-15T10:30:00.000Z",
    },
)
SENSOR_READINGS = Dataset(
    "sensor readings",
    SENSOR_SCHEMA,
    {
        "reading_id": 1,
        "sensor_id": "sensor-1",
        "temperature": 21.5,
        "humidity": 40.0,
        "event_time": "2025-01-15T10:30:00.000Z",
    },
)
IMPRESSIONS = Dataset(
    "ad impressions",
    IMPRESSION_SCHEMA,
    {
        "impression_id": "IMP-1",
        "ad_id": "AD-1",
        "user_id": "USER-1",
        "impression_time": "2025-01-15T10:30:00.000Z",
    },
)
CLICKS = Dataset(
    "ad clicks",
    CLICK_SCHEMA,
    {
        "click_id": "CLK-1",
        "impression_id": "IMP-1",
        "ad_id": "AD-1",
        "user_id": "USER-1",
        "click_time": "2025-01-15T10:30:05.000Z",
    },
)
EVERY_DATASET = (TRANSACTIONS, SHOP_EVENTS, SENSOR_READINGS, IMPRESSIONS, CLICKS)
