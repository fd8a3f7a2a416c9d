"""Runs the examples in the docstrings of the compiled modules and the package."""

import doctest
import importlib

import pytest

MODULES = [
    "timely.progress._timestamp",
    "timely.progress._change_batch",
    "timely.progress._frontier",
    "timely.progress._reachability",
    "timely.progress._notificator",
    "timely.progress.reachability",
    "timely.config",
    "timely.launch",
    "timely.worker",
    "timely.dataflow.scope",
    "timely.dataflow.stream",
    "timely.dataflow.builder",
    "timely.dataflow._handles",
    "timely.dataflow.notificator",
    "timely.dataflow.time",
    "timely.dataflow.operators.input",
    "timely.dataflow.operators.result",
    "timely.dataflow.operators.aggregation",
    "timely.dataflow.operators.flow_controlled",
    "timely.dataflow.operators.relational",
    "timely.dataflow.operators._relational",
    "timely.algorithms.components",
    "timely.algorithms.communities",
    "timely.algorithms.edges",
    "timely.algorithms.pagerank",
    "timely.algorithms.paths",
    "timely.algorithms.triangles",
    "timely.algorithms.vertex_program",
    "timely.algorithms.generators",
    "timely.algorithms._graph",
    "timely.algorithms.ids",
    "timely.algorithms.propagation",
]


def docstrings(module):
    """(name, docstring) of the module, its public classes and functions, and their methods."""
    yield module.__name__, module.__doc__ or ""
    for name in dir(module):
        if name.startswith("_"):
            continue
        obj = getattr(module, name)
        if getattr(obj, "__module__", None) != module.__name__:
            continue
        yield f"{module.__name__}.{name}", obj.__doc__ or ""
        if isinstance(obj, type):
            for attr, member in vars(obj).items():
                doc = getattr(member, "__doc__", None)
                if doc and not attr.startswith("__"):
                    yield f"{module.__name__}.{name}.{attr}", doc


@pytest.mark.parametrize("modname", MODULES)
def test_docstring_examples(modname):
    module = importlib.import_module(modname)
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    globs = {**vars(importlib.import_module("timely.progress")), **vars(module)}
    examples = 0
    for name, doc in docstrings(module):
        test = parser.get_doctest(doc, dict(globs), name, modname, 0)
        examples += len(test.examples)
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0
    assert examples > 0, f"{modname} has no docstring examples"
