"""Shared test configuration: Hypothesis profiles.

``dev`` (the default) runs 100 examples per property, ``ci`` 300 and
``debug`` 25 (the pass over a debug build, whose every check makes an
example several times slower; properties that set their own count run at
most the profile's, see ``tests.progress.strategies.capped``). The ``ci``
profile is chosen when the environment variable ``CI`` is ``"true"``;
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
settings.register_profile("ci", max_examples=300, print_blob=True, **_COMMON)
settings.register_profile("debug", max_examples=25, print_blob=True, **_COMMON)

_profile = os.environ.get("HYPOTHESIS_PROFILE") or (
    "ci" if os.environ.get("CI", "").lower() == "true" else "dev"
)
settings.load_profile(_profile)


def pytest_report_header(config):
    return f"hypothesis profile: {_profile} (max_examples={settings.default.max_examples})"
