"""Reachability: which times may still arrive at each location of a scope.

A :class:`Builder` describes operators (with input-to-output path summaries) and
edges; ``build`` compiles it into a :class:`Tracker`, which keeps pointstamp
counts per location and propagates changes in their frontiers to every
location they can reach.
"""

from timely.progress._reachability import Builder, Source, Target, Tracker

__all__ = ["Builder", "Source", "Target", "Tracker"]
