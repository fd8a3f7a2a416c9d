"""Streams of results: records that are :class:`~timely.Ok` or
:class:`~timely.Err`, as the crate's ``ResultStream`` and ``OkErr``.

Every operator here is stateless and pipelined: each message is transformed
at its own time, with one Python call per record of the user's function.

>>> import timely
>>> from timely import Err, Ok
>>> odd_even = timely.example(lambda scope: [s.capture() for s in
...     scope.to_stream(range(6)).ok_err(lambda x: Ok(x) if x % 2 == 0 else Err(x))])
>>> [c.extract() for c in odd_even]
[[(0, [0, 2, 4])], [(0, [1, 3, 5])]]
"""

from __future__ import annotations

from timely.dataflow.builder import operator_name
from timely.dataflow.operators.core import Err, Ok, _pipeline_unary, _two_way
from timely.errors import DataflowError


def _not_a_result(name: str, value):
    return DataflowError(f"{name}: expected Ok(...) or Err(...), got {value!r}")


def ok_err(stream, logic, name=None):
    """``(ok_stream, err_stream)``: ``logic(record)`` returns ``Ok(x)``, and
    ``x`` goes to the first stream, or ``Err(e)``, and ``e`` goes to the second."""
    name = operator_name(name, "OkErr")

    def split(time, data):
        oks, errs = [], []
        for record in data:
            result = logic(record)
            kind = type(result)
            if kind is Ok:
                oks.append(result.value)
            elif kind is Err:
                errs.append(result.error)
            else:
                raise _not_a_result("ok_err", result)
        return oks, errs

    return _two_way(stream, name, split)


def map_ok(stream, logic, name=None):
    """``Ok(logic(x))`` for every ``Ok(x)``; ``Err`` records pass unchanged."""
    return _pipeline_unary(stream, operator_name(name, "MapOk"), lambda t, data: [
        Ok(logic(r.value)) if type(r) is Ok else r for r in data])


def map_err(stream, logic, name=None):
    """``Err(logic(e))`` for every ``Err(e)``; ``Ok`` records pass unchanged."""
    return _pipeline_unary(stream, operator_name(name, "MapErr"), lambda t, data: [
        Err(logic(r.error)) if type(r) is Err else r for r in data])


def and_then(stream, logic, name=None):
    """``logic(x)`` (itself an ``Ok`` or an ``Err``) for every ``Ok(x)``;
    ``Err`` records pass unchanged."""
    name = operator_name(name, "AndThen")

    def each(t, data):
        out = []
        for r in data:
            if type(r) is Ok:
                r = logic(r.value)
                if type(r) is not Ok and type(r) is not Err:
                    raise _not_a_result("and_then", r)
            out.append(r)
        return out

    return _pipeline_unary(stream, name, each)


def unwrap_or_else(stream, logic, name=None):
    """``x`` for every ``Ok(x)`` and ``logic(e)`` for every ``Err(e)``."""
    return _pipeline_unary(stream, operator_name(name, "UnwrapOrElse"), lambda t, data: [
        r.value if type(r) is Ok else logic(r.error) for r in data])
