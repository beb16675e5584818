"""MkDocs hook (`hooks:` in mkdocs.yml): one reference page per built-in processor.

For every name `jetspark.processors` exports, a page `reference/processors/<name>.md` is generated
that mkdocstrings fills from the docstring where the name is defined, and the index page
`reference/processors.md` lists them all with the first line of each docstring. A processor added
to `jetspark.processors.__all__` gets its page without anyone editing the docs.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from typing import Any

from mkdocs.structure.files import File, Files

import jetspark.processors

INDEX = "reference/processors.md"


def _summary(obj: Any) -> str:
    if not (inspect.isfunction(obj) or inspect.isclass(obj)):  # a constant: its type's doc says nothing
        return f"a ready-made `{type(obj).__name__}`; see its page"
    doc = inspect.getdoc(obj) or ""
    return doc.split("\n\n")[0].replace("\n", " ").replace("|", "\\|")


def _home(name: str, obj: Any) -> str:
    """The module of `jetspark.processors` where `name` is defined (or first bound: a constant
    such as `entry_key` has no `__module__` of its own)."""
    module = getattr(obj, "__module__", "") or ""
    if module.startswith("jetspark.processors."):
        return module
    for info in pkgutil.iter_modules(jetspark.processors.__path__, "jetspark.processors."):
        if getattr(importlib.import_module(info.name), name, None) is obj:
            return info.name
    raise ValueError(f"jetspark.processors.{name}: no submodule defines it")


def on_files(files: Files, config: Any) -> Files:
    rows = []
    for name in sorted(jetspark.processors.__all__, key=str.lower):
        obj = getattr(jetspark.processors, name)
        home = _home(name, obj)
        path = f"{home}.{name}"
        files.append(
            File.generated(
                config,
                f"reference/processors/{name}.md",
                content=f"# {name}\n\nFrom `{home}`; exported as `jetspark.processors.{name}`.\n\n::: {path}\n",
            )
        )
        rows.append(f"| [`{name}`](processors/{name}.md) | `{home}` | {_summary(obj)} |")
    index = (
        "# Built-in processors\n\n"
        "Every factory and helper that `jetspark.processors` exports, one page each, generated from its "
        "docstring (the specification; the source is `jetspark/processors/`). A factory returns a supplier "
        "for `DAG.new_vertex(name, supplier)`; `aggregate_by_key` and `combine_by_key` add their vertices "
        "to the DAG themselves.\n\n"
        "| name | module | what it does |\n|---|---|---|\n" + "\n".join(rows) + "\n"
    )
    files.append(File.generated(config, INDEX, content=index))
    return files
