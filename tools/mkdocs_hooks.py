"""MkDocs hooks (`hooks:` in mkdocs.yml): a page per built-in processor; links out of the site.

Links from a page to a file of the repository outside docs/ (`[tests/x.py](../tests/x.py)`) work
on GitHub, where the Markdown is read in place, but name no page of the site: `on_page_markdown`
shows them as code paths instead (`tests/x.py`), so that the strict build's link check passes for
them, and only for them: a link to a file that does not exist is left as it is, and fails the build.

For every name `jetspark.processors` exports, a page `reference/processors/<name>.md` is generated
that mkdocstrings fills from the docstring where the name is defined, and the index page
`reference/processors.md` lists them all with the first line of each docstring. A processor added
to `jetspark.processors.__all__` gets its page without anyone editing the docs.
"""

from __future__ import annotations

import importlib
import inspect
import os
import pkgutil
import re
from typing import Any

from mkdocs.structure.files import File, Files

import jetspark.processors

INDEX = "reference/processors.md"
#: A Markdown link with a relative target (no scheme, not an anchor alone).
_LINK = re.compile(r"(?<!!)\[([^\]]+)\]\((?![a-z][a-z0-9+.-]*:|#)([^)\s#]+)(#[^)\s]*)?\)")


def out_of_site(markdown: str, page_path: str, docs_dir: str) -> str:
    """`markdown` of the page at `page_path` (relative to `docs_dir`) with each link to an
    existing file outside `docs_dir` shown as a code path, relative to the repository."""
    docs = os.path.abspath(docs_dir)
    root = os.path.dirname(docs)

    def code_path(match: re.Match[str]) -> str:
        text, target = match.group(1), match.group(2)
        path = os.path.normpath(os.path.join(docs, os.path.dirname(page_path), target))
        if path == docs or path.startswith(docs + os.sep) or not path.startswith(root + os.sep):
            return match.group(0)  # a page of the site (checked by mkdocs), or outside the repository
        if not os.path.exists(path):
            return match.group(0)  # broken: mkdocs reports it
        shown = os.path.relpath(path, root) + ("/" if target.endswith("/") else "")
        plain = text.strip("`")
        return f"`{shown}`" if plain == shown else f"{text} (`{shown}`)"

    return _LINK.sub(code_path, markdown)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    return out_of_site(markdown, page.file.src_uri, config["docs_dir"])


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
