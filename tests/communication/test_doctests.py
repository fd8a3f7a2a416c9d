"""The examples in the transport modules' docstrings run."""

import doctest
import importlib

import pytest

MODULES = [
    "timely.communication.allocator",
    "timely.communication.threads",
    "timely.communication.ring",
    "timely.communication.shm",
    "timely.communication.doorbell",
    "timely.communication.tcp",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert result.attempted > 0, f"{name} has no docstring examples"
