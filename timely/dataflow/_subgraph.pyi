from typing import Any

from typing_extensions import disjoint_base


@disjoint_base
class ScopeRound:
    """What a scope does each time it is scheduled, compiled."""

    progcaster: Any
    def __init__(self, scope: Any, passes: int = 2) -> None: ...
    def run(self) -> bool: ...
    def propagate(self) -> int: ...
    def extract_all(self) -> bool: ...
