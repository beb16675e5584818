"""`--log-level`: the level of jetspark's Python logging, set by `jetspark run/submit`.

The command puts the level in `JETSPARK_LOG_LEVEL`; `apply_log_level` (called by the command for
`run`, and by `jetspark.api.run` in a driver that `spark-submit` started) sets the `jetspark`
loggers (`jetspark.*`, and processors' `jetspark.vertex.<name>`) to it and, when nothing has
configured Python's logging yet, sends the records to standard error.
"""

from __future__ import annotations

import logging
import os

from jetspark.environment import LOG_LEVEL_ENV as LOG_LEVEL_ENV

LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


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
