"""JobConfig refuses every value out of range when it is made (and when a field is set), naming
the field and what it takes: `snapshot_interval_millis=-5` used to be accepted, and on Spark it
ran 1,178 tiny epochs."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import attrs
import pytest

from jetspark.core import JobConfig, ProcessingGuarantee
from jetspark.core.config import AdaptiveParallelism

BAD_VALUES: list[tuple[str, Any, str]] = [
    ("snapshot_interval_millis", -5, "an int of milliseconds in [0, 31536000000]"),
    ("snapshot_interval_millis", -1, "an int of milliseconds in [0, 31536000000]"),
    ("snapshot_interval_millis", 2.5, "an int of milliseconds"),
    ("snapshot_interval_millis", True, "an int of milliseconds"),
    ("snapshot_interval_millis", 10**12, "an int of milliseconds in [0, 31536000000] (up to a year)"),
    ("member_count", 0, "an int >= 1"),
    ("default_local_parallelism", -1, "an int >= 1"),
    ("snapshots_retained", 0, "an int >= 1"),
    ("quiescence_timeout_seconds", -1, "a number of seconds > 0 or None"),
    ("name", "", "a non-empty str or None"),
    ("name", 7, "a non-empty str or None"),
    ("initial_snapshot_name", " ", "a non-empty str or None"),
    ("checkpoint_root", "", "a non-empty str or None"),
    ("startpoints_directory", 3, "a non-empty str or None"),
    ("processing_guarantee", "exactly_once", "one of ProcessingGuarantee.NONE, "),
    ("fuse_vertices", "no", "True or False"),
    ("pruning", 1, "True or False"),
    ("start_over", "yes", "True or False"),
    ("epochs_within_interval", None, "True or False"),
    ("arguments", [("a", 1)], "a dict"),
    ("adaptive_parallelism", {"min_parallelism": 2}, "an AdaptiveParallelism or None"),
]


@pytest.mark.parametrize(("field", "value", "allowed"), BAD_VALUES)
def test_a_value_out_of_range_is_refused_at_construction_naming_field_and_range(
    field: str, value: Any, allowed: str
) -> None:
    with pytest.raises((ValueError, TypeError), match=rf"JobConfig\.{field} must be {re.escape(allowed)}"):
        JobConfig(**{field: value})


@pytest.mark.parametrize(("field", "value", "allowed"), BAD_VALUES)
def test_setting_a_field_out_of_range_is_refused_too(field: str, value: Any, allowed: str) -> None:
    config = JobConfig()
    with pytest.raises((ValueError, TypeError), match=rf"JobConfig\.{field} must be"):
        setattr(config, field, value)


def test_every_field_is_checked() -> None:
    """A new field without a check fails here: each field has a bad value in BAD_VALUES."""
    checked = {field for field, _, _ in BAD_VALUES}
    assert {f.name for f in attrs.fields(JobConfig)} == checked


def test_good_values_are_kept_and_paths_become_strings(tmp_path: Path) -> None:
    config = JobConfig(
        name="job-1",
        processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE,
        snapshot_interval_millis=1,
        checkpoint_root=tmp_path / "ck",  # type: ignore[arg-type]
        startpoints_directory=tmp_path / "sp",  # type: ignore[arg-type]
        quiescence_timeout_seconds=None,
        adaptive_parallelism=AdaptiveParallelism(),
        pruning=False,
    )
    assert config.checkpoint_root == str(tmp_path / "ck")
    assert config.startpoints_directory == str(tmp_path / "sp")
    assert config.snapshot_interval_millis == 1
