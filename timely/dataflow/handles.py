"""What operator logic holds: input handles, output handles, sessions.

Ownership: a batch handed to an output is the dataflow's from then on. Lists
given to :meth:`Session.give_container` or :meth:`OutputHandle.give_at` are
copied (a shallow copy: one pointer per record), so the caller may clear or
reuse its list at once, the Rust crate's ``&mut Vec`` idiom; a columnar
:class:`~timely.Batch` is immutable and is passed on as it is. Records given
one by one go into the output's own buffer, which is handed on whole and
replaced by a fresh list, never copied.

The handles are compiled, with the capabilities they count, in
:mod:`timely.dataflow._handles`.
"""

from timely.dataflow._handles import BUFFER, InputHandleCore, OutputHandle, Session, settle

__all__ = ["BUFFER", "InputHandleCore", "OutputHandle", "Session", "settle"]
