"""What the job page makes of a job's raw figures: watermarks as times and lag, processors' own
counters, back-pressure levels, the failures with their tracebacks, and a job's epochs.

Everything here reads the typed job handle (`runners.job.JobHandle`): what a runner lacks (epochs,
say) the handle reports as absent.
"""

from __future__ import annotations

import time
import traceback
from typing import Any

from jetspark.runners.job import JobHandle
from jetspark.runners.member import PENDING_FIGURES, WATERMARK_FIGURES

#: Figures of a vertex that are the engine's own; every other one is a processor's counter
#: (`Processor.custom_metrics`, such as `late_items_dropped`).
ENGINE_FIGURES = frozenset(("received", "emitted", "backpressured_ms", *PENDING_FIGURES, *WATERMARK_FIGURES))

#: Timestamps between these (milliseconds since 1970: years 2000 to 2100) are shown as times.
EPOCH_MILLIS_RANGE = (946_684_800_000, 4_102_444_800_000)

#: Back-pressure levels by the share of time back-pressured, as Flink's web UI colours them.
BACKPRESSURE_LEVELS = ((0.5, "high"), (0.1, "low"), (0.0, "ok"))

#: Failures and aborted epochs listed on a job page, the newest.
MAX_EXCEPTIONS = 20
#: Epochs listed on a job page, the newest.
MAX_EPOCHS = 20
#: Spark jobs (one per epoch) linked on a job page, the newest.
MAX_SPARK_LINKS = 10


def watermark(value: int | None, now: float) -> dict[str, Any]:
    """A watermark as the page shows it: the raw value, and when it reads as milliseconds since
    1970 (the usual event-time unit), that time (UTC) and its lag behind `now` in seconds;
    `watermark_text` is the time, or else the value."""
    out: dict[str, Any] = {
        "watermark": value,
        "watermark_time": None,
        "watermark_lag": None,
        "watermark_text": value,  # the time where there is one, else the number
    }
    if value is None:
        return out
    low, high = EPOCH_MILLIS_RANGE
    if low <= value <= high:
        seconds = value / 1000
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(seconds))
        out["watermark_time"] = f"{stamp}.{int(value % 1000):03d}"
        out["watermark_lag"] = round(now - seconds, 1)
        out["watermark_text"] = out["watermark_time"]
    return out


def custom_metrics(figures: dict[str, int] | None) -> dict[str, int]:
    """The processors' own counters among a vertex's figures, by name."""
    if not figures:
        return {}
    return {name: value for name, value in sorted(figures.items()) if name not in ENGINE_FIGURES}


def backpressure_level(share: float | None) -> str:
    """`ok`, `low` or `high` for a share of time back-pressured (as `BACKPRESSURE_LEVELS`);
    `none` when unknown."""
    if share is None:
        return "none"
    return next(level for threshold, level in BACKPRESSURE_LEVELS if share >= threshold)


def exceptions(job: JobHandle) -> list[dict[str, Any]]:
    """The job's failures, newest first: restarts it went on after (with tracebacks), epochs
    that aborted (with their causes), and the failure it ended with."""
    out: list[dict[str, Any]] = []
    for failure in job.failures:
        out.append(_entry(failure.at, failure.outcome, failure.error))
    epochs = job.epoch_stats()
    causes = list(epochs.abort_causes) if epochs is not None else []
    for cause in causes:
        if isinstance(cause, dict):
            epoch = cause.get("epoch")
            what = f"epoch {epoch} aborted" if epoch is not None else "epoch aborted"
            out.append(_text_entry(cause.get("time"), what, str(cause.get("cause", ""))))
    if epochs is not None and not causes and epochs.last_abort:
        out.append(_text_entry(None, f"epoch aborted (the last of {epochs.aborted})", str(epochs.last_abort)))
    if job.error is not None:
        out.append(_entry(job.ended_at, f"job {job.status.value}", job.error))
    out.sort(key=lambda entry: entry["time"] if entry["time"] is not None else float("inf"), reverse=True)
    return out[:MAX_EXCEPTIONS]


def _entry(at: float | None, what: str, error: BaseException) -> dict[str, Any]:
    trace = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    return _text_entry(at, what, f"{type(error).__name__}: {error}", trace)


def _text_entry(at: Any, what: str, message: str, trace: str = "") -> dict[str, Any]:
    when = float(at) if isinstance(at, (int, float)) else None
    return {
        "time": when,
        "time_text": time.strftime("%H:%M:%S", time.localtime(when)) if when is not None else "",
        "what": what,
        "message": message,
        "traceback": trace,
    }


def epochs(job: JobHandle, snapshots: list[dict[str, Any]]) -> dict[str, Any] | None:
    """A job in epochs: epochs committed and aborted, the last abort's cause, the running epoch,
    and the last epochs, newest first. From the job's per-epoch figures (`EpochStats.epochs`:
    items in and out, snapshot size, sink bytes, commit time, aborts with causes, the running
    epoch's live counts) where it keeps them; else from the committed snapshots (each epoch ends
    in one), each with the seconds since the commit before it. None for other jobs."""
    stats = job.epoch_stats()
    if stats is None:
        return None
    if stats.epochs:
        listed = [_epoch_row(e) for e in stats.epochs[:MAX_EPOCHS]]
    else:
        listed = []
        for newer, older in zip(snapshots, [*snapshots[1:], None]):
            duration = None if older is None else round(newer["created"] - older["created"], 2)
            listed.append(
                {
                    **newer,
                    "epoch": newer["id"],
                    "duration_s": duration,
                    "time_text": newer.get("created_text"),
                }
            )
    last = next(
        (e["duration_s"] for e in listed if e["duration_s"] is not None and e.get("outcome") in ENDED_WELL),
        None,
    )
    running = next((e for e in listed if e.get("outcome") == "running"), None)
    return {
        "committed": stats.committed,
        "aborted": stats.aborted,
        "last_abort": stats.last_abort,
        "last_duration_s": last,
        "running": None if running is None else f"epoch {running['epoch']}, {running['duration_s']:.1f} s",
        "list": listed,
    }


#: Outcomes of epochs whose work counts (`epoch_stats`); rows read from snapshots have none.
ENDED_WELL = ("committed", "completed", None)


def _epoch_row(figures: dict[str, Any]) -> dict[str, Any]:
    """One epoch of `EpochStats.epochs()` as the epochs table shows it."""
    at = figures["ended"] if figures["ended"] is not None else figures["started"]
    return {
        **{name: value for name, value in figures.items() if name != "vertices"},
        "time_text": time.strftime("%H:%M:%S", time.localtime(at)),
        "cause": figures["cause"] or "",
    }


def bounded_links(links: list[tuple[str, str]]) -> tuple[list[dict[str, str]], int]:
    """The newest `MAX_SPARK_LINKS` of a job's Spark UI links, and how many older ones are left out."""
    kept = links[-MAX_SPARK_LINKS:]
    return [{"label": label, "url": url} for label, url in kept], len(links) - len(kept)
