"""Shared test configuration: Hypothesis profiles.

``dev`` (the default) runs about 100 examples per property; ``ci`` runs 1000.
The ``ci`` profile is chosen when the environment variable ``CI`` is ``"true"``;
``HYPOTHESIS_PROFILE`` names a profile explicitly and wins over ``CI``.
Deadlines are off in both: the first call into a compiled module, or a slow
shared CI machine, must not turn into a flaky failure.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from hypothesis import HealthCheck, settings

# `import timely` must find the in-place build, and `from tests.reference import ...`
# the oracles, whichever directory pytest was started from.
_ROOT = str(Path(__file__).resolve().parent.parent)
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

_COMMON = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}
settings.register_profile("dev", max_examples=100, **_COMMON)
settings.register_profile("ci", max_examples=1000, print_blob=True, **_COMMON)

_profile = os.environ.get("HYPOTHESIS_PROFILE") or (
    "ci" if os.environ.get("CI", "").lower() == "true" else "dev"
)
settings.load_profile(_profile)


def pytest_report_header(config):
    return f"hypothesis profile: {_profile} (max_examples={settings.default.max_examples})"
