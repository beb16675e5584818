"""Fenced code blocks of the Markdown docs, for the tests that run them so that the docs stay true.

A doc's ```python blocks are one program: later blocks continue earlier ones (they use the names
an earlier block defined), so `run_python_blocks` runs them in order in one namespace. A block
that cannot run in a unit test (it needs Spark, a cluster, input files) is preceded by a marker
line, `<!-- not-tested: why -->` (invisible when the Markdown is rendered); of such a block only
the imports run, so later blocks still find the names it imports and a renamed API still fails.
Code is compiled with the doc's own line numbers, so a traceback points at the line in the doc.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FENCE = re.compile(r"^```\s*([\w+-]*)\s*$")
NOT_TESTED = re.compile(r"^<!--\s*not-tested:\s*(.*?)\s*-->$")


@dataclass(frozen=True)
class Block:
    """One fenced block: its language tag, its text and where it starts in the doc."""

    lang: str
    code: str
    line: int  # line number (1-based) of the block's first line of code
    not_tested: str | None  # the reason given by a `<!-- not-tested: ... -->` marker, if any


def code_blocks(text: str, lang: str | None = None) -> list[Block]:
    """The fenced blocks of Markdown `text` in order, only those tagged `lang` when it is given."""
    blocks: list[Block] = []
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        end = index + 1
        while end < len(lines) and lines[end].rstrip() != "```":
            end += 1
        if end == len(lines):
            raise ValueError(f"line {index + 1}: code block is not closed")
        before = [line.strip() for line in lines[:index] if line.strip()]
        marker = NOT_TESTED.match(before[-1]) if before else None
        if lang is None or opening.group(1) == lang:
            code = "\n".join(lines[index + 1 : end]) + "\n"
            blocks.append(Block(opening.group(1), code, index + 2, marker.group(1) if marker else None))
        index = end + 1
    return blocks


def python_blocks(doc: Path) -> list[Block]:
    """The ```python blocks of the doc at `doc`."""
    return code_blocks(doc.read_text(), "python")


def _compiled(block: Block, doc: Path, imports_only: bool) -> Any:
    tree = ast.parse(block.code, str(doc))
    if imports_only:
        tree.body = [node for node in tree.body if isinstance(node, ast.Import | ast.ImportFrom)]
    ast.increment_lineno(tree, block.line - 1)
    return compile(tree, str(doc), "exec")


def run_python_blocks(doc: Path, namespace: dict[str, Any]) -> list[Block]:
    """Run the doc's Python blocks in order in `namespace`; return the blocks that ran in full.

    A block marked not-tested must give its reason, and only its imports run.
    """
    ran = []
    for block in python_blocks(doc):
        if block.not_tested is not None and not block.not_tested:
            raise ValueError(f"{doc}:{block.line}: a not-tested marker must say why")
        exec(_compiled(block, doc, imports_only=block.not_tested is not None), namespace)
        if block.not_tested is None:
            ran.append(block)
    return ran
