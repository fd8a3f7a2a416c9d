"""Capabilities: the right to send data at a time on an operator output.

A :class:`Capability` counts +1 at its time in its output's internal change
batch when created or cloned, and -1 when dropped or downgraded away (or when
the last reference to it goes). Capabilities only move forward.

An :class:`InputCapability` is the capability that comes with a message. As
in the Rust crate, where it borrows from the input handle, it is valid only
while its message is the current one: from the moment ``for cap, data in
input:`` (or ``input.next()``) hands it out until the next message is taken,
the loop ends, or the operator's logic returns. While valid it can be used
directly for outputs the input reaches unchanged (``output.session(cap)``),
and retained or delayed into a :class:`Capability` for any connected output
at a time at least the input's summary applied to the message time. Used
later, it raises :class:`~timely.CapabilityError`: keep ``cap.retain()``
instead, taken while the message is current.

What these checks cost: a session checks, per record, that its capability is
still live and its time is the one being buffered (two slot reads); creating
or dropping a capability updates a per-output count of held times (one dict
update) and records the line that created it (one frame look-up), which is
what :meth:`timely.Worker.holds` reports.

The classes are compiled, with the output and input handles they count in,
in :mod:`timely.dataflow._handles`.
"""

from timely.dataflow._handles import Capability, CapabilitySet, InputCapability

__all__ = ["Capability", "CapabilitySet", "InputCapability"]
