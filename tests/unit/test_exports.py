"""The public names: `jetspark.core.__all__` is complete and exact, and `jetspark` re-exports it."""

import types

import jetspark
import jetspark.core as core


def test_every_name_in_all_is_importable() -> None:
    missing = [name for name in core.__all__ if not hasattr(core, name)]
    assert missing == []
    for name in core.__all__:
        namespace: dict[str, object] = {}
        exec(f"from jetspark.core import {name}", namespace)
        assert namespace[name] is getattr(core, name)


def test_all_lists_each_name_once() -> None:
    duplicates = sorted({name for name in core.__all__ if core.__all__.count(name) > 1})
    assert duplicates == []


def test_each_object_is_exported_under_one_name() -> None:
    names_by_object: dict[int, list[str]] = {}
    for name in core.__all__:
        names_by_object.setdefault(id(getattr(core, name)), []).append(name)
    aliases = [names for names in names_by_object.values() if len(names) > 1]
    assert aliases == []


def test_all_is_exactly_the_public_namespace() -> None:
    public = {
        name
        for name, value in vars(core).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert public == set(core.__all__)


def test_public_names_come_from_core_submodules() -> None:
    for name in core.__all__:
        value = getattr(core, name)
        module = getattr(value, "__module__", None)
        if module is not None and not isinstance(value, (int, str)):
            assert module.startswith("jetspark.core."), (name, module)


def test_package_root_reexports_core() -> None:
    assert sorted(jetspark.__all__) == sorted(core.__all__)
    for name in core.__all__:
        assert getattr(jetspark, name) is getattr(core, name), name


def test_star_import_of_the_root_gives_exactly_all() -> None:
    namespace: dict[str, object] = {}
    exec("from jetspark import *", namespace)
    assert set(namespace) - {"__builtins__"} == set(core.__all__)
