"""The package exports every public transport name, and loads sockets and
shared memory only when they are used."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import timely.communication as communication

ROOT = Path(__file__).resolve().parent.parent.parent


def test_every_exported_name_is_the_defining_modules_object():
    for name in communication.__all__:
        value = getattr(communication, name)
        module = importlib.import_module(f"timely.communication.{communication._LAZY[name]}") \
            if name in communication._LAZY else communication.allocator
        assert getattr(module, name) is value, name
    assert set(communication.__all__) <= set(dir(communication))


def test_an_unknown_name_is_an_attribute_error():
    try:
        communication.Nothing  # noqa: B018
    except AttributeError as error:
        assert "Nothing" in str(error)
    else:
        raise AssertionError("communication.Nothing resolved")


def test_import_timely_loads_no_transport_module():
    heavy = [f"timely.communication.{m}" for m in ("ring", "shm", "doorbell", "tcp", "process",
                                                    "threads")]
    heavy += ["timely.launch", "multiprocessing.shared_memory"]
    script = f"import sys, timely; print(sorted(set(sys.modules) & set({heavy!r})))"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                         text=True, check=True, timeout=60)
    assert run.stdout.strip() == "[]"
