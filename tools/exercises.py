"""The exercises' command line: ``python course.py exercises ...`` runs this (practice/cli.py)."""

import sys

import tools  # noqa: F401  (puts streaming_tutorial/ on sys.path)


def main() -> int:
    from practice.cli import main as exercises

    return exercises(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
