"""The examples in the docstrings of timely.logging and timely.viz run."""

import doctest
import importlib

import pytest

MODULES = ["timely.logging.events", "timely.logging.registry", "timely.logging.stream",
           "timely.viz", "timely.viz.model"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
