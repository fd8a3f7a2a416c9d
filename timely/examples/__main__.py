"""``python -m timely.examples``: lists the examples, one line each."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
NOT_EXAMPLES = {"__init__", "__main__", "cli"}


def examples() -> list[tuple[str, str]]:
    """``(name, first line of its docstring)`` of every example, by name.

    Reads the sources without importing them (some import Spark).
    """
    found = []
    for path in sorted(HERE.glob("*.py")):
        if path.stem in NOT_EXAMPLES:
            continue
        doc = ast.get_docstring(ast.parse(path.read_text())) or ""
        first = " ".join(doc.strip().split("\n\n")[0].split())
        found.append((path.stem, re.sub(r":\w+:`~?([^`]+)`", r"\1", first)))
    return found


def main(argv=None) -> None:
    """Prints the list and how to run one."""
    rows = examples()
    width = max(len(name) for name, _ in rows)
    print("Examples; run one with: python -m timely.examples.NAME [--help]\n")
    for name, line in rows:
        print(f"  {name:<{width}}  {line}")


if __name__ == "__main__":
    main(sys.argv[1:])
