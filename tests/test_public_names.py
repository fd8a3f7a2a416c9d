"""The public names of ``timely`` are listed once, in ``timely/__init__.pyi``:
every statement of the stub is one import the package reads, so none is
dropped, and each name loads from the module the stub gives."""

from __future__ import annotations

import ast
import importlib
import pathlib

import pytest

import timely

STUB = pathlib.Path(timely.__file__).with_name("__init__.pyi")


def stub_names() -> dict[str, str]:
    names: dict[str, str] = {}
    tree = ast.parse(STUB.read_text())
    for node in tree.body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue                                    # the docstring
        if isinstance(node, ast.AnnAssign):
            assert ast.unparse(node.target) in ("__version__", "__all__")
            continue
        assert isinstance(node, ast.ImportFrom) and len(node.names) == 1, ast.unparse(node)
        alias = node.names[0]
        assert alias.asname == alias.name, f"{ast.unparse(node)}: write it `X as X`"
        names[alias.name] = node.module or ""
    return names


def test_every_stub_line_is_a_public_name():
    names = stub_names()
    assert timely._public() == names
    assert timely.__all__ == sorted(names) + ["__version__"]


def test_each_name_is_the_one_its_module_defines():
    for name, module in stub_names().items():
        assert getattr(timely, name) is getattr(importlib.import_module(module), name), name
    assert isinstance(timely.__version__, str)


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="NotAName"):
        timely.NotAName  # noqa: B018
