"""The string column: text in Arrow's layout (offsets and UTF-8 bytes).

See :class:`StringColumn`; :class:`~timely.container.Batch` stores text
columns this way.
"""

from timely.container._columns import StringColumn

__all__ = ["StringColumn"]
