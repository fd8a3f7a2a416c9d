"""Timely dataflow for Python.

Timestamped streams, capabilities and progress tracking with frontiers, over a
compiled progress core. The progress structures live in :mod:`timely.progress`
and load alone; everything else here loads on first use, so ``import
timely.progress`` (or ``timely.errors``) brings in nothing above it.
"""

from __future__ import annotations

import importlib as _importlib
import logging as _logging
import os as _os
from typing import Any

# The engine reports start-up, connections and failures on the "timely"
# logger; silent unless the program configures logging.
_logging.getLogger("timely").addHandler(_logging.NullHandler())

__version__ = "0.1.0"

# The public names and their modules, each listed once, in this package's
# stub (``__init__.pyi``), which type checkers read too: read on first use.
_PUBLIC: dict[str, str] = {}


def _public() -> dict[str, str]:
    """``{name: module}`` of the public names, from the stub's lines
    ``from <module> import <name> as <name>``."""
    if not _PUBLIC:
        stub = _os.path.join(_os.path.dirname(__file__), "__init__.pyi")
        with open(stub, encoding="utf-8") as f:
            for line in f:
                words = line.split()
                if len(words) == 6 and words[0] == "from" and words[2] == "import" \
                        and words[4] == "as" and words[3] == words[5]:
                    _PUBLIC[words[3]] = words[1]
    return _PUBLIC


def __getattr__(name: str) -> Any:
    if name == "__all__":
        value: Any = sorted(_public()) + ["__version__"]
    else:
        module = _public().get(name)
        if module is None:
            raise AttributeError(f"module 'timely' has no attribute {name!r}")
        value = getattr(_importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_public()))
