"""Activation: what asks an operator or a dataflow to run (the Rust crate's
``scheduling::activate``), in one compiled module,
:mod:`timely.dataflow._activate`.

- :class:`Activator`: an operator's ``info.activator`` (``activate()``,
  ``activate_after(delay)``), for the worker's own thread;
- :class:`SyncActivator`: the same from any thread
  (``worker.sync_activator_for``); a parked worker wakes;
- :class:`Activations` and :class:`ChildActivator`: the children of one
  scope asked to run, and what a channel calls for each message it
  delivers;
- :class:`WorkerActivations`: a worker's dataflows to schedule at its next
  step, and the activations from other threads and after delays that it
  applies then.
"""

from timely.dataflow._activate import (
    Activations,
    Activator,
    ChildActivator,
    SyncActivator,
    WorkerActivations,
)

__all__ = ["Activations", "Activator", "ChildActivator", "SyncActivator", "WorkerActivations"]
