"""What a user downloads and waits for: the size of the wheel (and of the
compiled modules in it) built by ``python -m build --wheel`` from this tree,
and how long ``import timely`` takes in a fresh interpreter.

Targets: compiled modules stripped of debug information (a few hundred KB
each, not megabytes); ``import timely`` under 0.3 s. Building the wheel
compiles every module once (a few minutes on 2 cores).

Run: ``pytest benchmarks/test_package.py --benchmark-only -s``
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from test_import import import_seconds  # this folder is on sys.path, as for every suite here

ROOT = Path(__file__).resolve().parent.parent


def build_wheel(outdir: Path) -> Path:
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--outdir", str(outdir), str(ROOT)],
                   check=True, capture_output=True, text=True)
    (wheel,) = outdir.glob("*.whl")
    return wheel


def test_wheel_size_and_import_time(benchmark, tmp_path):
    wheel = benchmark.pedantic(build_wheel, args=(tmp_path,), rounds=1, iterations=1)
    with zipfile.ZipFile(wheel) as z:
        compiled = sum(i.file_size for i in z.infolist() if i.filename.endswith(".so"))
        unpacked = sum(i.file_size for i in z.infolist())
    seconds = min(import_seconds("timely")[0] for _ in range(5))
    benchmark.extra_info.update({"wheel_bytes": wheel.stat().st_size,
                                 "compiled_bytes": compiled, "unpacked_bytes": unpacked,
                                 "import_timely_s": round(seconds, 4)})
    print(f"\nwheel {wheel.name}: {wheel.stat().st_size / 1e6:.2f} MB "
          f"({unpacked / 1e6:.2f} MB unpacked, compiled modules {compiled / 1e6:.2f} MB); "
          f"import timely: {seconds * 1e3:.0f} ms")
    assert compiled < 5e6, "the compiled modules carry debug information"
