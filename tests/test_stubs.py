"""The ``.pyi`` stubs of the compiled modules agree with the modules:
``mypy.stubtest`` over every module ``setup.py`` compiles. What Cython adds
to every module and the stubs' own type aliases are listed in
``stubtest-allowlist.txt``."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def compiled_modules() -> list[str]:
    return re.findall(r'^\s+"(timely\.[\w.]+)",$', (ROOT / "setup.py").read_text(), re.M)


pytestmark = pytest.mark.static


def test_every_compiled_module_has_a_stub():
    modules = compiled_modules()
    assert len(modules) >= 9
    for name in modules:
        assert (ROOT / (name.replace(".", "/") + ".pyi")).exists(), name


def test_stubtest_finds_no_mismatch():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    done = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "--allowlist",
         str(ROOT / "stubtest-allowlist.txt"), "--mypy-config-file",
         str(ROOT / "pyproject.toml"), *compiled_modules()],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False, env=env)
    assert done.returncode == 0, (done.stdout + done.stderr)[-6000:]
    assert "Success: no issues found" in done.stdout
