"""tools/mkdocs_hooks.py: links to repository files outside docs/ become code paths in the site;
links to pages, anchors, URLs and missing files stay links (so the strict build checks them)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
_spec = importlib.util.spec_from_file_location("mkdocs_hooks", ROOT / "tools" / "mkdocs_hooks.py")
assert _spec is not None and _spec.loader is not None
hooks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(hooks)
DOCS = str(ROOT / "docs")


def test_a_link_to_a_test_file_becomes_its_path_as_code() -> None:
    text = "see [tests/contract/test_inbox.py](../tests/contract/test_inbox.py) and [the kinds](../tests/README.md#x)"
    assert hooks.out_of_site(text, "processor-contract.md", DOCS) == (
        "see `tests/contract/test_inbox.py` and the kinds (`tests/README.md`)"
    )


def test_from_a_page_in_a_subfolder_the_path_is_resolved_from_there() -> None:
    assert hooks.out_of_site("[x](../../examples/)", "reference/processors.md", DOCS) == "x (`examples/`)"


@pytest.mark.parametrize(
    "link",
    [
        "[page](spark.md)",
        "[anchor](#numbers)",
        "[page anchor](spark.md#numbers)",
        "[url](https://example.org/a.md)",
        "[missing](../tests/no_such_file.py)",
        "![picture](images/web-ui-job.png)",
    ],
)
def test_pages_anchors_urls_and_missing_files_stay_links(link: str) -> None:
    assert hooks.out_of_site(link, "index.md", DOCS) == link


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_strict_build_fails_on_a_broken_link(tmp_path: Path) -> None:
    """The site as CI builds it, with one broken link added to a copy of the docs."""
    docs = tmp_path / "docs"
    subprocess.run(["cp", "-r", str(ROOT / "docs"), str(docs)], check=True)
    (docs / "index.md").write_text((docs / "index.md").read_text() + "\n[gone](../tests/no_such_file.py)\n")
    config = (ROOT / "mkdocs.yml").read_text().replace("docs_dir: docs", f"docs_dir: {docs}")
    config = config.replace("tools/mkdocs_hooks.py", str(ROOT / "tools" / "mkdocs_hooks.py"))
    (tmp_path / "mkdocs.yml").write_text(config.replace("paths: [.]", f"paths: [{ROOT}]"))
    mkdocs = Path(sys.executable).with_name("mkdocs")
    build = [
        str(mkdocs),
        "build",
        "--strict",
        "-f",
        str(tmp_path / "mkdocs.yml"),
        "-d",
        str(tmp_path / "site"),
    ]
    broken = subprocess.run(build, capture_output=True, text=True, cwd=ROOT, timeout=240)
    assert broken.returncode != 0
    assert "Traceback" not in broken.stderr, (
        f"the build crashed instead of reporting the link:\n{broken.stderr}"
    )
    assert "no_such_file.py" in broken.stderr, broken.stderr
