"""The interface between an operator and the scope that tracks its progress.

As in the Rust crate's ``progress::operate``, a scope asks three things of
each child, and nothing else:

- its shape: ``inputs``, ``outputs`` and the ``summary()`` from each input to
  each output (the path summaries by which a record at an input can result
  in a record at an output; an empty list means "not connected");
- its progress, in a :class:`SharedProgress` the child writes while it runs
  and the scope drains after each scheduling: records consumed at each
  input, capabilities created and dropped at each output, records produced
  at each output;
- that it accepts changes to its input frontiers (``push_frontier``), runs
  when asked (``schedule``), and lets go of its state (``shut_down``).

How children are scheduled and activated, how progress reaches other
workers, and what is logged are the business of the dataflow layer, not of
this one.
"""

from __future__ import annotations

from typing import Sequence

from timely.progress._operate import PerOperatorState, SharedProgress

__all__ = ["Operate", "PerOperatorState", "SharedProgress"]


class Operate:
    """What a scope needs of each child (the Rust crate's ``Operate``).

    Subclasses set ``name``, ``inputs``, ``outputs`` and ``progress`` (their
    :class:`SharedProgress`), and implement :meth:`summary`,
    :meth:`push_frontier` and :meth:`schedule`.

    ``local`` says whether the operator's progress is this worker's own, to be
    broadcast to every worker (an ordinary operator), or already accounts for
    every worker (a child scope, whose tracker receives every worker's
    batches). ``notify[i]`` asks to be scheduled when input ``i``'s frontier
    changes; ``watches[i]`` asks for those changes through
    :meth:`push_frontier` (None: every input, both). An operator that keeps
    each input's frontier in a :class:`~timely.progress.MutableAntichain` may
    show them in ``input_frontiers`` (per input, the antichain or None): the
    scope then updates them in compiled code instead of calling
    :meth:`push_frontier`.
    """

    name = "operator"
    inputs = 0
    outputs = 0
    local = True
    notify: Sequence[bool] = ()
    watches: Sequence[bool] | None = None
    input_frontiers: Sequence[object] | None = None
    progress: SharedProgress

    def summary(self) -> list:
        """``[input][output]`` -> list of path summaries (empty: not connected)."""
        raise NotImplementedError

    def push_frontier(self, port: int, changes) -> None:
        """Changes ``[(time, diff)]`` to input ``port``'s frontier."""
        raise NotImplementedError

    def schedule(self) -> bool:
        """Runs the operator; True while it is incomplete for reasons the
        progress tracker cannot see (work it holds without a capability)."""
        raise NotImplementedError

    def shut_down(self) -> None:
        """Releases the operator's logic and state; called once it is complete."""
