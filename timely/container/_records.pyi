from collections.abc import Iterable
from typing import Any

MAX_DEPTH: int

def encode_records(values: Iterable[Any], out: bytearray, allow_pickle: bool) -> None: ...
def decode_records(
    buffer: Any, pos: int, end: int, n: int, allow_pickle: bool
) -> tuple[list[Any], int]: ...
