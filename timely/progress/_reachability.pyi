from typing_extensions import disjoint_base
from collections.abc import Iterable, Sequence
from typing import NamedTuple, Union

from timely.progress._change_batch import ChangeBatch
from timely.progress._frontier import Antichain, MutableAntichain
from timely.progress._operate import SharedProgress
from timely.progress._timestamp import PathSummary, Time

SummaryLike = Union[PathSummary, int, tuple[int, ...]]

class Source(NamedTuple):
    """An operator output port: (operator index, output port)."""
    node: int
    port: int

class Target(NamedTuple):
    """An operator input port: (operator index, input port)."""
    node: int
    port: int

class Builder:
    """Describes a scope's graph for progress tracking.

    Node 0 stands for the scope itself, seen from inside: its outputs (sources)
    are the scope's inputs and its inputs (targets) are the scope's outputs.

    ``summary[i][o]`` lists the path summaries from input ``i`` to output ``o``
    of a node (an Antichain-like iterable of summaries; empty: not connected).
    """

    def __init__(self, arity: int = 1) -> None: ...
    @property
    def arity(self) -> int: ...
    def add_node(self, index: int, inputs: int, outputs: int,
                 summary: Sequence[Sequence[Iterable[SummaryLike]]]) -> None: ...
    def add_edge(self, source: Source | tuple[int, int], target: Target | tuple[int, int]) -> None: ...
    def add_mirror(self, node: int, index: int, split: Iterable[int] = ()) -> None:
        """Node ``index`` mirrors ``node``: the other workers' copies of it (``split``: inputs read per copy)."""
    def is_acyclic(self) -> bool:
        """No cycle made of zero summaries and edges (every cycle strictly advances)."""

    def build(self) -> tuple[Tracker, list[list[Antichain]]]:
        """The tracker, and the summaries from each scope input to each scope output.

        Raises ``CycleError`` when a cycle does not strictly advance timestamps and
        ``GraphError`` for edges or summaries naming unknown nodes or ports.
        """

@disjoint_base
class Tracker:
    """Pointstamp counts per location, and the frontier each location implies.

    ``update_source``/``update_target`` record changes in capability counts;
    ``propagate_all`` pushes the resulting changes in each location's
    pointstamp frontier forward along edges and operator summaries, processing
    changes in time order so that loops terminate.
    """

    @property
    def arity(self) -> int: ...
    @property
    def nodes(self) -> int: ...
    def update_source(self, source: Source | tuple[int, int], time: Time, diff: int) -> None: ...
    def update_target(self, target: Target | tuple[int, int], time: Time, diff: int) -> None: ...
    def propagate_all(self) -> None: ...
    def pushed_changes(self) -> list[tuple[Source | Target, Time, int]]:
        """Drains the changes to each location's implication frontier since the last call,
        ordered by location (targets before sources, then node, port) and time."""

    def output_changes(self) -> list[list[tuple[Time, int]]]:
        """Drains, per scope output, the changes to the times that may still reach it."""

    def tracking_anything(self) -> bool:
        """Unapplied changes remain (they do not all cancel), or some location's
        pointstamp frontier is non-empty (some count is positive)."""

    def source_frontier(self, source: Source | tuple[int, int]) -> Antichain: ...
    def target_frontier(self, target: Target | tuple[int, int]) -> Antichain: ...
    def absorb(self, updates: dict[tuple[bool, int, int, Time], int]) -> list[
        tuple[tuple[bool, int, int, Time], int]]:
        """Records every ``(is_source, node, port, time) -> diff`` of ``updates``
        except those at node 0, which are returned as a list of ``(key, diff)``."""

    @property
    def targets(self) -> int:
        """How many input ports: location ids below this are inputs."""
    @property
    def locations_count(self) -> int:
        """How many locations (input and output ports) the graph has."""
    def target_location(self, node: int, port: int) -> int:
        """The location id of input ``port`` of ``node``."""
    def source_location(self, node: int, port: int) -> int:
        """The location id of output ``port`` of ``node``."""
    def drain_shared(self, shared: SharedProgress, node: int, into: ChangeBatch,
                     produced: bool = True) -> None:
        """Moves operator ``node``'s shared progress into ``into`` as located
        changes ``(location, time...)``; leaves ``shared`` empty."""
    def harvest(self, batches: list[ChangeBatch], into: ChangeBatch) -> None:
        """Records that entered through the scope's inputs, as located changes."""
    def absorb_located(self, batch: ChangeBatch, boundary: ChangeBatch | None) -> None:
        """Records located changes, those at node 0 into ``boundary``; empties ``batch``."""
    def must_send(self, batch: ChangeBatch) -> bool:
        """Whether located changes hold one other workers must see now."""
    def localize(self, batch: ChangeBatch, start: int, sender: int) -> int:
        """Reads rows ``start..`` of ``batch``, located by worker ``sender``, from this worker's side."""
    def set_worker(self, index: int, peers: int) -> None:
        """This worker's index among ``peers``, for :meth:`localize`."""
    def route_counts(self, source: Source | tuple[int, int], target: Target | tuple[int, int],
                     routed: ChangeBatch) -> None:
        """Counts the edge's records by destination worker, from ``routed``."""
    def split_inputs(self) -> list[Target]:
        """The inputs whose frontier is this worker's copy's alone."""
    def mirror(self, loc: int) -> int:
        """The location mirroring location ``loc``, or -1."""
    def report_outputs(self, capabilities: list[MutableAntichain], internals: list[ChangeBatch],
                       nested: bool) -> int:
        """Reports the changes at the scope's outputs to the parent, as capability changes."""
    def report_boundary(self, boundary: ChangeBatch, progress: SharedProgress,
                        nested: bool) -> None:
        """Reports changes at node 0 to the parent's shared progress."""
    def located_items(self, batch: ChangeBatch) -> list[
            tuple[tuple[bool, int, int, Time], int]]:
        """``((is_source, node, port, time), diff)`` of located changes, for logs."""

    def pending(self) -> bool:
        """Changes are recorded and not yet applied (they may cancel out)."""

    def set_interest(self, node: int, port: int, interesting: bool) -> None:
        """Whether ``drain_pushed(True)`` reports this input's frontier changes."""

    def drain_pushed(self, interesting_only: bool = False) -> tuple[
            list[tuple[int, int, list[tuple[Time, int]]]], list[int]]:
        """Drains the frontier changes: ``(targets, quiet)``, the changed input
        frontiers of nodes other than 0 (with ``interesting_only``, of the
        inputs :meth:`set_interest` left in) and the nodes now quiet."""

    def set_sink(self, node: int, port: int, sink: MutableAntichain | None,
                 notify: bool) -> None:
        """Input ``port`` of ``node``: ``drain_frontiers`` keeps ``sink`` up to
        date and names ``node`` to activate when ``notify``."""
    def drain_frontiers(self, everything: bool) -> tuple[
            list[int], list[tuple[int, int, list[tuple[Time, int]]]],
            list[tuple[int, int, list[tuple[Time, int]]]], list[int]]:
        """Drains the frontier changes into the sinks: ``(activate, pushed,
        logged, quiet)``."""
    def is_global(self, is_source: bool, node: int, port: int, time: Time) -> bool:
        """A decrement of ``time`` here may move a frontier other workers see."""

    def node_quiet(self, node: int) -> bool:
        """No input of ``node`` can still receive data and no output holds a positive count."""

    def source_pointstamps(self, source: Source | tuple[int, int]) -> list[tuple[Time, int]]: ...
    def target_pointstamps(self, target: Target | tuple[int, int]) -> list[tuple[Time, int]]: ...
    def shape(self, node: int) -> tuple[int, int]:
        """(inputs, outputs) of a node."""
