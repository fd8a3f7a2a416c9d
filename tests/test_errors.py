"""One exception hierarchy: every error class of timely is defined in
``timely.errors``, exported from ``timely``, and derives from ``TimelyError``
and from the builtin exception that fits."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import timely
import timely.errors as errors

ROOT = Path(__file__).resolve().parent.parent


def error_classes():
    return [obj for _, obj in inspect.getmembers(errors, inspect.isclass)
            if issubclass(obj, BaseException) and not issubclass(obj, Warning)
            and obj.__module__ == errors.__name__]


def test_the_warnings_are_exported_and_are_user_warnings():
    found = [obj for _, obj in inspect.getmembers(errors, inspect.isclass)
             if issubclass(obj, Warning) and obj.__module__ == errors.__name__]
    assert found == [errors.StallWarning]
    for cls in found:
        assert issubclass(cls, UserWarning)
        assert cls.__name__ in errors.__all__ and getattr(timely, cls.__name__) is cls


def test_every_error_is_exported_from_timely():
    for cls in error_classes():
        assert cls.__name__ in errors.__all__, cls
        assert cls.__name__ in timely.__all__, cls
        assert getattr(timely, cls.__name__) is cls


def test_every_error_is_a_timely_error_and_a_builtin():
    builtins = (ValueError, TypeError, RuntimeError, ConnectionError, OSError, KeyError)
    for cls in error_classes():
        assert issubclass(cls, timely.TimelyError), cls
        if cls is not timely.TimelyError:
            assert issubclass(cls, builtins), f"{cls.__name__} derives from no builtin that fits"


def test_no_exception_class_is_defined_elsewhere():
    found = []
    for path in sorted((ROOT / "timely").rglob("*")):
        if path.suffix == ".py" and path.name != "errors.py":
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ClassDef) and any(
                        isinstance(b, ast.Name) and (b.id.endswith("Error") or b.id in (
                            "Exception", "WorkerFailed")) for b in node.bases):
                    found.append(f"{path.relative_to(ROOT)}: {node.name}")
        elif path.suffix == ".pyx":
            for line in path.read_text().splitlines():
                if line.startswith("class ") and "Error" in line.split("(", 1)[-1]:
                    found.append(f"{path.relative_to(ROOT)}: {line}")
    assert not found, "exception classes outside timely/errors.py:\n" + "\n".join(found)
