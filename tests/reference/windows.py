"""Oracle for event-time windows: the windows holding a time, by a plain
loop over window numbers (Spark's definition)."""

from __future__ import annotations


def windows_of(times: list, length: int, slide: int, start: int) -> list:
    """Sorted ``(row, (window_start, window_end))`` for every row whose time
    (microseconds, or None) lies in ``[window_start, window_end)``, windows
    starting at ``start + k * slide`` and ``length`` long."""
    out = []
    for row, t in enumerate(times):
        if t is None:
            continue
        k = (t - start) // slide
        while start + k * slide + length > t:
            if start + k * slide <= t:
                out.append((row, (start + k * slide, start + k * slide + length)))
            k -= 1
    return sorted(out)
