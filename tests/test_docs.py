"""The guide and the API reference build with warnings as errors, and every
example of the operator catalogue runs and prints what the page says."""

from __future__ import annotations

import doctest
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


@pytest.mark.static
def test_sphinx_builds_the_docs_without_warnings(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    done = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
         "-d", str(tmp_path / "doctrees"), str(DOCS), str(tmp_path / "html")],
        capture_output=True, text=True, timeout=600, check=False, env=env)
    assert done.returncode == 0, done.stderr[-5000:]
    html = tmp_path / "html"
    for page in ("index", "concepts", "operators", "spark", "hosts", "configuration", "logging",
                 "benchmarks", "api"):
        assert (html / f"{page}.html").exists(), page
    api = (html / "api.html").read_text()
    for name in ("timely.execute", "timely.Stream.unary_notify", "timely.progress.ChangeBatch",
                 "timely.capture.replay_into", "timely.spark.run"):
        assert f'id="{name}"' in api, name


def test_operator_catalogue_examples_run():
    result = doctest.testfile(str(DOCS / "operators.rst"), module_relative=False,
                              optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
    assert result.attempted >= 70


def test_every_stream_operator_is_in_the_catalogue():
    """Each public method of Stream appears in the catalogue as ``name``."""
    import timely

    text = (DOCS / "operators.rst").read_text()
    public = [n for n in vars(timely.Stream) if not n.startswith("_")
              and callable(getattr(timely.Stream, n))]
    missing = [n for n in public if f"{n}(" not in text and f"``{n}``" not in text]
    assert not missing, f"operators without an example in docs/operators.rst: {missing}"


def test_docs_name_no_file_outside_the_repository():
    for path in [ROOT / "README.md", *DOCS.glob("*.md"), *DOCS.glob("*.rst")]:
        text = path.read_text()
        for word in ("WORKLOADS.md", "seed 000", "/work/"):
            assert word not in text, (path.name, word)
