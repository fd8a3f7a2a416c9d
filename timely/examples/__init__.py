"""Runnable examples: ``python -m timely.examples.NAME``."""
