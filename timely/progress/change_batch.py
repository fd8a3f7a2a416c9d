"""A lazily compacted collection of (time, diff) updates."""

from timely.progress._change_batch import ChangeBatch

__all__ = ["ChangeBatch"]
