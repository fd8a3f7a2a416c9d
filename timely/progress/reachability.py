"""Reachability: which times may still arrive at each location of a scope.

A :class:`Builder` describes operators (with input-to-output path summaries) and
edges; ``build`` compiles it into a :class:`Tracker`, which keeps pointstamp
counts per location and propagates changes in their frontiers to every
location they can reach. A :class:`Location` names either kind of port.
"""

from __future__ import annotations

from typing import NamedTuple

from timely.errors import GraphError
from timely.progress._reachability import Builder, Source, Target, Tracker


class Location(NamedTuple):
    """A port of a scope's graph, as the crate's ``Location``: an operator
    index and a port that is an output (a :class:`Source`) or an input (a
    :class:`Target`).

    >>> loc = Location.new_source(2, 0)
    >>> loc.is_source, loc.is_target, loc.as_source()
    (True, False, Source(node=2, port=0))
    >>> Location.of(Target(3, 1))
    Location(node=3, port=1, is_source=False)
    """

    node: int
    port: int
    is_source: bool

    @classmethod
    def new_source(cls, node: int, port: int) -> "Location":
        """The location of output ``port`` of operator ``node``."""
        return cls(node, port, True)

    @classmethod
    def new_target(cls, node: int, port: int) -> "Location":
        """The location of input ``port`` of operator ``node``."""
        return cls(node, port, False)

    @classmethod
    def of(cls, port: "Source | Target") -> "Location":
        """The location of a :class:`Source` or :class:`Target`."""
        if isinstance(port, Source):
            return cls(port.node, port.port, True)
        if isinstance(port, Target):
            return cls(port.node, port.port, False)
        raise GraphError(f"{port!r} is neither a Source nor a Target")

    @property
    def is_target(self) -> bool:
        """True for an operator's input port."""
        return not self.is_source

    def as_source(self) -> Source:
        """This location as a :class:`Source`.

        Raises :class:`timely.GraphError` if it is an input port.
        """
        if not self.is_source:
            raise GraphError(f"{self!r} is an input port, not a source")
        return Source(self.node, self.port)

    def as_target(self) -> Target:
        """This location as a :class:`Target`.

        Raises :class:`timely.GraphError` if it is an output port.
        """
        if self.is_source:
            raise GraphError(f"{self!r} is an output port, not a target")
        return Target(self.node, self.port)


__all__ = ["Builder", "Location", "Source", "Target", "Tracker"]
