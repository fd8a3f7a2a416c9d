"""The README's test command passes on a machine that meets the
prerequisites the README states for it: every program some test fails
without (rather than skipping) is named there."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# What tests fail without, and where each is required.
REQUIRED = {
    "C compiler": "tests/test_csrc.py",
    "Python headers": "setup.py",
    "Chromium": "tests/viz/test_browser.py",
    "Java 17": "tests/spark/conftest.py",
}


def test_prerequisites_of_the_test_command_name_every_program_the_suite_needs():
    readme = (ROOT / "README.md").read_text()
    command = '```sh\npip install -e ".[test]" && pytest\n```'
    assert command in readme
    before = readme[:readme.index(command)]
    paragraph = re.split(r"\n\s*\n", before.rstrip())[-1]
    text = " ".join(paragraph.split())
    for program, where in REQUIRED.items():
        assert (ROOT / where).exists(), where
        assert program in text, f"{program} (needed by {where}) is not in: {text}"
    assert "chromium" in (ROOT / ".ci/run").read_text()
