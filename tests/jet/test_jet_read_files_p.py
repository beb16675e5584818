"""Jet's `ReadFilesPTest` (hazelcast-jet-core, `com.hazelcast.jet.impl.connector`), ported: the
bounded file sources, on the local runner with one member (Jet's one-member cluster).

Jet's `Sources.filesBuilder(dir).glob(glob).build(mapOutputFn)` is `processors.read_text(dir)`, or
`read_text(dir/glob)` for a glob; Jet's `Sources.json(dir)` (maps) is `processors.read_jsonl(dir)`.
Jet's sink list is a `collect()` vertex. Each test is named after the Jet case it ports.

Differences, all deliberate and documented (docs/files.md, "Reading files"; `read_text`):
- Jet's `mapOutputFn(fileName, line)` (`Util::entry` in the test) has no counterpart: a line
  source emits the line; the ports check the lines (the files' names only where Jet's case
  checks them, through the glob).
- `when_directory_then_ignore`: Jet's source ignores subdirectories; jetspark's reads the files
  of a directory's subdirectories too (such as `col=value` partitions), and a path that names no
  file at all is an error when the source is built (`FileNotFoundError`): a directory holding
  only an empty subdirectory is refused, a file in a subdirectory is read
  (`..._subdirectoryFilesAreRead`).
- `testJsonFilesMultilineItems_when_asMap_thenMaps`: Jet's JSON source reads a stream of JSON
  values, which may span lines; `read_jsonl` reads JSON Lines (one value per line), so a
  pretty-printed object is a bad record: the job fails naming the file (the default
  `errors="fail"`).

Skipped, with no counterpart: `testJsonFilesOneLineItems_when_asObject_thenObjects` and
`testJsonFilesMultilineItems_when_asObject_thenObjects` (Jet maps each value to a Java bean,
`TestPerson.class`; `read_jsonl` emits what `json` gives: dicts, lists and plain values).
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from jetspark import DAG, Edge, JobFailedError
from jetspark import processors as P
from jetspark.core.suppliers import ProcessorSupplier
from jetspark.runners.local import LocalRunner
from jetspark.testing import run_dag


def random_name() -> str:
    return uuid.uuid4().hex


def append_to_file(file: Path, *lines: str) -> None:
    """Jet's `appendToFile`: each line followed by a newline."""
    with file.open("a", encoding="utf-8") as out:
        out.write("".join(line + "\n" for line in lines))


def read(source: ProcessorSupplier) -> list[Any]:
    """Jet's `pipeline(glob)` and `pipelineJson`: the source into a list sink; run; the list."""
    dag = DAG()
    dag.edge(Edge.between(dag.new_vertex("source", source), dag.new_vertex("sink", P.collect())))
    return run_dag(dag).result("sink")


def test_ReadFilesPTest__test_smallFiles(tmp_path: Path) -> None:
    append_to_file(tmp_path / random_name(), "hello", "world")
    append_to_file(tmp_path / random_name(), "hello2", "world2")
    lines = read(P.read_text(str(tmp_path)))
    assert len(lines) == 4
    assert sorted(lines) == ["hello", "hello2", "world", "world2"]


def test_ReadFilesPTest__test_largeFile(tmp_path: Path) -> None:
    list_length = 10_000
    append_to_file(tmp_path / random_name(), *(str(i) for i in range(list_length)))
    lines = read(P.read_text(str(tmp_path)))
    assert len(lines) == list_length
    assert sorted(map(int, lines)) == list(range(list_length))


def test_ReadFilesPTest__when_glob_the_useGlob(tmp_path: Path) -> None:
    append_to_file(tmp_path / "file1.txt", "hello", "world")
    append_to_file(tmp_path / "file2.txt", "hello2", "world2")
    assert read(P.read_text(str(tmp_path / "file2.*"))) == ["hello2", "world2"]


def test_ReadFilesPTest__when_directory_then_ignore(tmp_path: Path) -> None:
    """A directory holding only an empty subdirectory names no file: refused when the source is
    built (see the module docstring); Jet's job reads nothing."""
    (tmp_path / random_name()).mkdir()
    with pytest.raises(FileNotFoundError, match="matches no files"):
        P.read_text(str(tmp_path))


def test_ReadFilesPTest__when_directory_then_ignore__subdirectoryFilesAreRead(tmp_path: Path) -> None:
    """jetspark reads a directory's subdirectories (Jet ignores them); those whose names start
    with `.` or `_` are left out."""
    append_to_file(tmp_path / "top.txt", "top")
    (tmp_path / "sub").mkdir()
    append_to_file(tmp_path / "sub" / "a.txt", "in a subdirectory")
    (tmp_path / "_hidden").mkdir()
    append_to_file(tmp_path / "_hidden" / "b.txt", "left out")
    assert sorted(read(P.read_text(str(tmp_path)))) == ["in a subdirectory", "top"]


ONE_LINE_ITEMS = (
    '{"name": "hello world", "age": 5, "status": true}',
    '{"name": "hello jupiter", "age": 8, "status": false}',
)
MULTILINE_ITEMS = (
    '{\n    "name": "hello world",\n    "age": 5,\n    "status": true\n}',
    '{\n    "name": "hello jupiter",\n    "age": 8,\n    "status": false\n}',
)


def create_json_files(directory: Path, pretty_printed: bool) -> list[Path]:
    """Jet's `createJsonFiles`: two items in one file, one item twice in another."""
    item1, item2 = MULTILINE_ITEMS if pretty_printed else ONE_LINE_ITEMS
    file1 = directory / f"{random_name()}.json"
    append_to_file(file1, item1, item1)
    file2 = directory / f"{random_name()}.json"
    append_to_file(file2, item2, item2)
    return [file1, file2]


def test_ReadFilesPTest__testJsonFilesOneLineItems_when_asMap_thenMaps(tmp_path: Path) -> None:
    create_json_files(tmp_path, pretty_printed=False)
    items = read(P.read_jsonl(str(tmp_path)))
    assert len(items) == 4
    test_person_map = items[0]
    assert isinstance(test_person_map, dict)
    assert str(test_person_map["name"]).startswith("hello")
    assert sorted(item["age"] for item in items) == [5, 5, 8, 8]


def test_ReadFilesPTest__testJsonFilesMultilineItems_when_asMap_thenMaps(tmp_path: Path) -> None:
    """A pretty-printed object is not JSON Lines: the job fails (see the module docstring)."""
    files = create_json_files(tmp_path, pretty_printed=True)
    with pytest.raises(JobFailedError) as failed:
        read(P.read_jsonl(str(tmp_path)))
    message = f"{failed.value} {failed.value.__cause__}"
    assert "bad record" in message
    assert any(str(file) in message for file in files), message


def test_ReadFilesPTest__testJsonFilesMultilineItems_when_asMap_thenMaps__skipped(tmp_path: Path) -> None:
    """With `errors="skip"` each line of a pretty-printed object is a bad record (none is JSON by
    itself), counted in the metric: no map is read."""
    create_json_files(tmp_path, pretty_printed=True)
    dag = DAG()
    source = dag.new_vertex("source", P.read_jsonl(str(tmp_path), errors="skip"))
    dag.edge(Edge.between(source, dag.new_vertex("sink", P.collect())))
    job = LocalRunner().run(dag, timeout=60)
    assert job.result("sink") == []
    assert job.metrics()["source"][P.BAD_RECORDS_METRIC] == 4 * 5  # 4 objects of 5 lines
