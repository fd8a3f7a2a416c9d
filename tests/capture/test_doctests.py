"""The docstring examples of timely.capture run."""

import doctest
import importlib

import pytest


@pytest.mark.parametrize("name", ["timely.capture.format", "timely.capture.replay"])
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
