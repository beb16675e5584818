"""`ProcessorContext.attributes` keys: each is declared once, in `jetspark.core.context`, so a
runner and the processors that read what it puts there cannot drift apart."""

from __future__ import annotations

import re
from pathlib import Path

import jetspark
from jetspark.core import context

PACKAGE = Path(jetspark.__file__).parent
DECLARATION = re.compile(r"^([A-Z_]+_ATTRIBUTE)\s*(?::[^=]*)?=\s*[\"']", re.MULTILINE)


def test_every_attribute_key_is_declared_in_core_context_and_nowhere_else() -> None:
    declared = {
        path.relative_to(PACKAGE).as_posix(): DECLARATION.findall(path.read_text())
        for path in PACKAGE.rglob("*.py")
    }
    elsewhere = {path: names for path, names in declared.items() if names and path != "core/context.py"}
    assert elsewhere == {}
    assert set(declared["core/context.py"]) == {
        "RESULTS_ATTRIBUTE",
        "EPOCHS_ATTRIBUTE",
        "STARTPOINTS_ATTRIBUTE",
        "STAGING_ATTRIBUTE",
        "SPARK_INPUT_ATTRIBUTE",
        "RUN_ATTRIBUTE",
        "SNAPSHOT_REQUEST_ATTRIBUTE",
    }


def test_the_attribute_keys_are_distinct() -> None:
    keys = [value for name, value in vars(context).items() if name.endswith("_ATTRIBUTE")]
    assert len(keys) == len(set(keys)) == 7
