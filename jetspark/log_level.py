"""`--log-level`: the level of jetspark's Python logging, set by `jetspark run/submit`.

The command puts the level in `JETSPARK_LOG_LEVEL`; `apply_log_level` (called by the command for
`run`, and by `jetspark.api.run` in a driver that `spark-submit` started) sets the `jetspark`
loggers (`jetspark.*`, and processors' `jetspark.vertex.<name>`) to it and, when nothing has
configured Python's logging yet, sends the records to standard error.

On Spark the processors run in executors' Python workers, so the level goes there too: the
variable reaches them through `spark.executorEnv.JETSPARK_LOG_LEVEL` (`executor_env_conf`, set by
the embedded session and by `jetspark submit`; a local master's workers inherit the driver's
environment anyway), and every Spark task calls `apply_log_level` before it builds its
processors. Workers' standard error is the executor's log (the terminal, on a local master).
"""

from __future__ import annotations

import logging
import os

from jetspark.environment import LOG_LEVEL_ENV as LOG_LEVEL_ENV

LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def executor_env_conf() -> dict[str, str]:
    """The Spark setting that puts the level in executors' environment; {} when none is set."""
    level = os.environ.get(LOG_LEVEL_ENV, "").strip().upper()
    return {f"spark.executorEnv.{LOG_LEVEL_ENV}": level} if level else {}


def apply_log_level() -> str | None:
    """Apply the level in the environment, if any; returns it. An unknown level is a ValueError."""
    level = os.environ.get(LOG_LEVEL_ENV, "").strip().upper()
    if not level:
        return None
    if level not in LEVELS:
        raise ValueError(f"{LOG_LEVEL_ENV}={level!r}: expected one of {', '.join(LEVELS)}")
    logger = logging.getLogger("jetspark")
    logger.setLevel(level)
    if not logging.getLogger().handlers and not logger.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter(LOG_FORMAT))
        logger.addHandler(handler)
    return level
