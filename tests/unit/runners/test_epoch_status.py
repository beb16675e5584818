"""The figures a job in epochs shows (`epochs._latest_status`): the latest committed epoch's, but a
vertex's watermark that epoch did not report (one of its processors met none in a short epoch,
so its lowest is unknown) stays as shown before: a watermark never goes back, and a job that
completed still shows where its sink's watermark got (tests/spark/test_seed_audit_004_spark_epochs.py
failed once under load when the last epochs reported none)."""

from __future__ import annotations

from jetspark.runners.spark.epochs import _latest_status


def test_a_watermark_the_latest_epoch_lacks_stays_and_the_rest_is_the_latest() -> None:
    before = {"sink": {"input_watermark": 150, "queued": 4}, "source": {"output_watermark": 199}}
    now = {"sink": {"queued": 0}, "forward": {"input_watermark": 300}}
    assert _latest_status(before, now) == {
        "sink": {"queued": 0, "input_watermark": 150},
        "forward": {"input_watermark": 300},
        "source": {"output_watermark": 199},
    }


def test_a_watermark_the_latest_epoch_reports_is_shown_as_it_is() -> None:
    assert _latest_status({"sink": {"input_watermark": 150}}, {"sink": {"input_watermark": 320}}) == {
        "sink": {"input_watermark": 320}
    }
