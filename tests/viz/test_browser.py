"""The page in a real browser: headless Chromium (Debian's ``chromium``
package) renders it to a screenshot, runs its script without errors, and
the DOM after loading says the script finished.

Chromium is a prerequisite of the README's test command: without it on
PATH these tests fail (they do not skip); install it, e.g. ``apt-get install
chromium`` (``.ci/run`` does).
"""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import zlib

import pytest

from timely.viz import Model, write_html

from tests.viz.helpers import captured_nested

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
WIDTH, HEIGHT = 1400, 1000


def chromium() -> str:
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    pytest.fail("Chromium is not on PATH, so the page cannot be checked in a browser: "
                "install it (Debian: apt-get install chromium)")


def _run(tmp_path, *args) -> subprocess.CompletedProcess:
    command = [chromium(), "--headless", "--no-sandbox", "--disable-gpu",
               "--disable-dev-shm-usage", "--no-first-run", "--hide-scrollbars",
               f"--user-data-dir={tmp_path / 'profile'}", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=180)


def _png(path) -> tuple:
    """``(width, height, distinct byte values of the pixel data)`` of a PNG."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, size = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            size = struct.unpack(">II", body[:8])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    pixels = zlib.decompress(idat)
    return (*size, len(set(pixels)))


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("browser")
    model = Model.from_logs(*captured_nested(tmp, 2))
    return write_html(tmp / "page.html", model, title="nested iterative dataflow"), model


def test_screenshot(page, tmp_path):
    path, _model = page
    shot = tmp_path / "page.png"
    run = _run(tmp_path, f"--screenshot={shot}", f"--window-size={WIDTH},{HEIGHT}",
               "--enable-logging=stderr", "--v=0", f"file://{path}")
    assert shot.exists(), f"no screenshot; chromium said:\n{run.stderr[-3000:]}"
    width, height, distinct = _png(shot)
    assert (width, height) == (WIDTH, HEIGHT)
    assert shot.stat().st_size > 20_000 and distinct > 32, "the screenshot looks blank"
    errors = [line for line in run.stderr.splitlines()
              if "Uncaught" in line or ("CONSOLE" in line and "rror" in line)]
    assert not errors, "\n".join(errors)


def test_script_runs_without_errors(page, tmp_path):
    path, model = page
    run = _run(tmp_path, "--dump-dom", "--enable-logging=stderr", "--v=0", f"file://{path}")
    assert run.returncode == 0, run.stderr[-3000:]
    dom = run.stdout
    assert 'id="viz-status" data-state="ready"' in dom, dom[-2000:]
    assert not re.search(r"<html[^>]*data-viz-error", dom)
    operators = len([a for a in model.operators if not model.is_scope(a)])
    assert f"drawn: {operators} operators, {len(model.channels)} channels" in dom
    assert "Uncaught" not in run.stderr


def test_a_script_error_would_be_seen(page, tmp_path):
    """The check above can fail: a page whose script throws is caught."""
    path, _model = page
    broken = tmp_path / "broken.html"
    text = open(path, encoding="utf-8").read()
    broken.write_text(text.replace("</body>", "<script>undefinedFunction();</script></body>"),
                      encoding="utf-8")
    run = _run(tmp_path, "--dump-dom", f"file://{broken}")
    assert re.search(r'<html[^>]*data-viz-error="[^"]*undefinedFunction', run.stdout)
