"""Antichains of timestamps, and counted antichains that track a frontier."""

from timely.progress._frontier import Antichain, MutableAntichain

__all__ = ["Antichain", "MutableAntichain"]
