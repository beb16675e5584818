"""`jetspark.testing.__all__` is exactly its public namespace, each object under one name, and the
package imports without Hypothesis (only `strategies` and `stateful` need it)."""

import subprocess
import sys
import types

import jetspark.testing as testing


def test_all_is_exactly_the_public_namespace() -> None:
    public = {
        name
        for name, value in vars(testing).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert public == set(testing.__all__)
    assert len(testing.__all__) == len(set(testing.__all__))
    assert len({id(getattr(testing, name)) for name in testing.__all__}) == len(testing.__all__)


def test_the_kit_does_not_import_hypothesis() -> None:
    code = "import sys, jetspark.testing, jetspark.testing.pytest_plugin; print('hypothesis' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
