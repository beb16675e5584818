"""`--spark-conf KEY=VALUE ...`: Spark settings over those of the embedded session a benchmark
starts, so that one command compares a setting against jetspark's defaults."""

from __future__ import annotations

import argparse


def add_spark_conf_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--spark-conf",
        nargs="*",
        default=[],
        metavar="KEY=VALUE",
        help="Spark settings over the embedded session's (e.g. spark.python.unix.domain.socket.enabled=true)",
    )


def spark_conf(args: argparse.Namespace) -> dict[str, str]:
    """The `--spark-conf` pairs as a dict; a pair without `=` is an argparse-style error."""
    pairs = {}
    for pair in args.spark_conf:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise SystemExit(f"--spark-conf {pair!r}: expected KEY=VALUE")
        pairs[key] = value
    return pairs
