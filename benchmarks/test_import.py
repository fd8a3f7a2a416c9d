"""How long ``import timely`` and ``import timely.progress`` take in a fresh
interpreter, and what they load.

``import timely`` loads the errors and nothing else until a name is used
(the dataflow layer, the runtime and the features load on first use);
``import timely.progress`` loads the compiled progress core alone. Each
figure is the least of several fresh interpreters, each timing its own
import (the interpreter's start-up is not included). Target: ``import
timely`` under 0.3 s.

Run: ``pytest benchmarks/test_import.py --benchmark-only``
"""

from __future__ import annotations

import subprocess
import sys

import pytest

CODE = ("import sys, time; t = time.perf_counter(); import {module}; "
        "print(time.perf_counter() - t, len([m for m in sys.modules if m.startswith('timely')]))")


def import_seconds(module: str) -> tuple[float, int]:
    run = subprocess.run([sys.executable, "-c", CODE.format(module=module)],
                         capture_output=True, text=True, check=True)
    seconds, modules = run.stdout.split()
    return float(seconds), int(modules)


@pytest.mark.parametrize("module", ["timely", "timely.progress", "timely.dataflow"])
def test_import(benchmark, module):
    seconds = []

    def run():
        s, n = import_seconds(module)
        seconds.append(s)
        return n

    modules = benchmark.pedantic(run, rounds=5, iterations=1)
    benchmark.extra_info.update({
        "import_s": round(min(seconds), 4),
        "timely_modules_loaded": modules,
        "target_s": 0.3 if module == "timely" else None,
    })
