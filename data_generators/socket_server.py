"""A tiny text server for lesson 05: whatever you type (or a script) goes to Spark line by line.

Spark's socket source is a TCP *client*: it connects to a server and reads lines. This
is that server. It waits for Spark to connect, then sends each line you type, or the
lines of a file, of piped input, or of a built-in demo.

Run (start it first, then lesson 05 in a second terminal):
  python data_generators/socket_server.py                       # type lines yourself
  python data_generators/socket_server.py --demo                # built-in sentences, one a second
  python data_generators/socket_server.py --file notes.txt --interval 2
  printf 'a b\\nb c\\n' | python data_generators/socket_server.py
  python data_generators/socket_server.py --port 9998           # pass --port 9998 to the lesson too

After the last scripted line it keeps the connection open until Spark disconnects
(or --linger seconds pass), so Spark never sees a reset connection. When Spark
disconnects the server stops, or waits for the next run with --keep-serving.
"""

from __future__ import annotations

import argparse
import errno
import itertools
import select
import socket
import sys
import time
from pathlib import Path
from typing import Iterable, Iterator

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "streaming_tutorial"))

from common import config  # noqa: E402
from infra import cli  # noqa: E402
from infra.simulators import run_simulator  # noqa: E402

# The demo's sentences: repeated words, so the running word count visibly grows.
DEMO_SENTENCES = (
    "spark streaming is awesome",
    "spark makes real time data easy",
    "streaming streaming streaming",
    "every micro batch updates the counts",
    "spark counts words in real time",
    "the stream never ends but this demo does",
)
SCRIPTED_INTERVAL = 1.0  # seconds between scripted lines, so each lands in its own micro-batch
# A client that closes within this time without reading is a port check (e.g. a lesson
# asking "is the server up?"), not Spark: keep waiting for the real client.
PROBE_GRACE_SECONDS = 0.2
EXIT_PORT_BUSY = 2


class ClientGone(Exception):
    """The client (Spark) closed the connection."""


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    script = load_script(args)  # before listening: a missing --file fails at once
    try:
        server = listen(args.host, args.port)
    except OSError as error:
        print(port_advice(args.host, args.port, error), file=sys.stderr)
        return EXIT_PORT_BUSY
    with server:
        return run_simulator(
            "socket", lambda: serve(server, args, script), stopped="the port is free again."
        )


def serve(server: socket.socket, args, script: tuple[str, ...]) -> None:
    """Serve the first client that connects (and the next ones, with --keep-serving)."""
    interactive = not (args.demo or args.file) and sys.stdin.isatty()
    piped = None if (args.demo or args.file or interactive) else read_stdin_lines()
    while True:
        with wait_for_client(server, args.host, args.port) as client:
            try:
                if interactive:
                    serve_typed_lines(client)
                else:
                    lines = piped if piped is not None else script_lines(script, args.count)
                    serve_script(client, limit(lines, args.count), args.interval)
                # Closing right after the last line could reach Spark as a reset: wait for it to go.
                if not wait_or_gone(client, args.linger):  # False only when --linger ran out
                    print(f"--linger {args.linger:g}: closing the connection.", flush=True)
            except ClientGone:
                print("Spark disconnected.", flush=True)
        if not args.keep_serving:
            return
        print("--keep-serving: waiting for the next client.", flush=True)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--demo", action="store_true", help="send the built-in demo sentences")
    source.add_argument(
        "--file", type=Path, metavar="PATH", help="send the lines of this text file"
    )
    parser.add_argument(
        "--host", default=config.SOCKET_HOST, help="address to listen on (default: %(default)s)"
    )
    parser.add_argument(
        "--port",
        type=int,
        default=config.SOCKET_PORT,
        help="port to listen on (default: %(default)s)",
    )
    parser.add_argument(
        "--interval",
        type=cli.non_negative_seconds,
        default=SCRIPTED_INTERVAL,
        metavar="SECONDS",
        help="pause between scripted lines (default: %(default)s)",
    )
    parser.add_argument(
        "--count",
        type=cli.positive_int,
        default=None,
        metavar="N",
        help="send N scripted lines, repeating the script when it is shorter "
        "(default: every line once)",
    )
    parser.add_argument(
        "--linger",
        type=cli.non_negative_seconds,
        default=None,
        metavar="SECONDS",
        help="after the last line, close after this long even if Spark stays "
        "(default: stay until Spark disconnects)",
    )
    parser.add_argument(
        "--keep-serving",
        action="store_true",
        help="when Spark disconnects, wait for the next connection instead of stopping",
    )
    return parser


def listen(host: str, port: int) -> socket.socket:
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    # Lets a restarted server reuse the port at once; a port another program still
    # listens on stays busy (bind fails), which is what we want to report.
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        server.bind((host, port))
        server.listen(1)
    except OSError:
        server.close()
        raise
    return server


def port_advice(host: str, port: int, error: OSError) -> str:
    if error.errno == errno.EADDRINUSE:
        return (
            f"Port {port} on {host} is in use — another socket_server or lesson 05 is running. "
            f"Stop it (Ctrl-C in its terminal), or use --port N here and give the lesson the same "
            f"port."
        )
    return (
        f"Cannot listen on {host}:{port}: {error.strerror or error}. "
        "Try another --port (1024-65535)."
    )


def wait_for_client(server: socket.socket, host: str, port: int) -> socket.socket:
    """Accept the next client that is not just a port check."""
    print(f"Waiting for Spark to connect on {host}:{port} ...", flush=True)
    while True:
        client, address = server.accept()
        if closed_at_once(client):
            print(
                "(a connection opened and closed at once: a port check, still waiting)",
                file=sys.stderr,
                flush=True,
            )
            client.close()
            continue
        print(f"Spark connected from {address[0]}:{address[1]}.", flush=True)
        return client


def closed_at_once(client: socket.socket) -> bool:
    readable, _, _ = select.select([client], [], [], PROBE_GRACE_SECONDS)
    if not readable:
        return False
    try:
        return client.recv(1024, socket.MSG_PEEK) == b""
    except OSError:
        return True


def send_line(client: socket.socket, line: str) -> None:
    try:
        client.sendall((line + "\n").encode("utf-8"))
    except OSError as error:  # BrokenPipe, ConnectionReset: Spark went away
        raise ClientGone from error


def serve_script(client: socket.socket, lines: Iterable[str], interval: float) -> None:
    for number, line in enumerate(lines):
        if number and interval:
            wait_or_gone(client, interval)
        send_line(client, line)
        print(f"sent: {line}", flush=True)
    print("All lines sent; keeping the connection open until Spark disconnects.", flush=True)


def serve_typed_lines(client: socket.socket) -> None:
    print("Type a line and press Enter to send it (Ctrl-D: done, Ctrl-C: stop).", flush=True)
    while True:
        try:
            line = input("> ")
        except EOFError:
            print()
            return
        if line.strip():
            send_line(client, line)
            print(f"sent: {line}", flush=True)


def wait_or_gone(client: socket.socket, seconds: float | None) -> bool:
    """Wait up to ``seconds`` (None: forever); raise ClientGone if the client closes. False on
    timeout."""
    deadline = None if seconds is None else time.monotonic() + seconds
    while True:
        remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
        readable, _, _ = select.select([client], [], [], remaining)
        if not readable:
            return False
        try:
            data = client.recv(4096)  # Spark sends nothing; only a close makes us readable
        except OSError as error:
            raise ClientGone from error
        if not data:
            raise ClientGone


def load_script(args) -> tuple[str, ...]:
    """The lines of --demo or --file (empty for typed or piped input)."""
    if args.demo:
        return DEMO_SENTENCES
    if args.file:
        try:
            return tuple(args.file.read_text(encoding="utf-8").splitlines())
        except OSError as error:
            raise SystemExit(
                f"Cannot read --file {args.file}: {error.strerror or error}"
            ) from error
    return ()


def script_lines(script: tuple[str, ...], count: int | None) -> Iterator[str]:
    """The script from its first line; with --count, repeated until count lines are sent."""
    return itertools.cycle(script) if count and script else iter(script)


def read_stdin_lines() -> Iterator[str]:
    """Piped input, line by line as it arrives (so `tail -f log | socket_server.py` works)."""
    for line in sys.stdin:
        yield line.rstrip("\r\n")


def limit(lines: Iterator[str], count: int | None) -> Iterator[str]:
    return itertools.islice(lines, count) if count else lines


if __name__ == "__main__":
    sys.exit(main())
