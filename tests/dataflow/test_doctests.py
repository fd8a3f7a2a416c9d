"""The examples in the docstrings of the dataflow layer and the worker run."""

from __future__ import annotations

import doctest
import importlib

import pytest


@pytest.mark.parametrize("name", ["timely.worker", "timely.dataflow.builder",
                                  "timely.dataflow.operators.input"])
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
