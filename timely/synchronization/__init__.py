"""Synchronization built on dataflow: :class:`Barrier` and :class:`Sequencer`.

Both are dataflows of their own, so they use only what every dataflow uses
(progress tracking and the workers' channels) and keep the worker's other
dataflows running while they wait. Every worker must create them at the same
point of its sequence of dataflows, as it does every dataflow.
"""

from timely.synchronization.barrier import Barrier, BarrierError
from timely.synchronization.sequencer import Sequencer, SequencerError

__all__ = ["Barrier", "BarrierError", "Sequencer", "SequencerError"]
