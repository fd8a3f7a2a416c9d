from typing import Any

from typing_extensions import disjoint_base

MAGIC: bytes
VERSION: int
PREFIX_BYTES: int
SMALL_FRAME: int

def encode(messages: list[tuple[Any, Any]]) -> list[Any]:
    """The frame for ``[(identifier, message), ...]`` as buffers to send back to back."""

def frame_length(prefix: Any) -> int:
    """The header length announced by the first ``PREFIX_BYTES`` of a frame."""

@disjoint_base
class Header:
    """A parsed frame header: the segments to expect and the envelope."""

    columns: list[tuple[Any, int, list[int]]]
    buffers: list[int]
    sizes: list[int]
    raw: int
    tagged: bool
    envelope: Any
    length: int
    def __init__(self, header: Any) -> None: ...
    def destinations(self) -> list[Any]: ...
    def messages(self, segments: Any) -> list[tuple[Any, Any]]: ...

def decode(frame: Any) -> list[tuple[Any, Any]]:
    """The messages of a frame held whole in ``frame``."""
