"""Pure-Python oracles for the compiled core.

Written for clarity, not speed, and never imported by the package: each module
models one compiled module of ``timely.progress`` or ``timely.container``
directly from its definition (or, for reachability, as a plain port of the
Rust crate's algorithm), so the property tests in ``tests/progress`` and
``tests/container`` can compare every observable.
"""
