"""Every test here that takes ``workers`` runs at 1, 2 and 3 workers."""

import pytest


@pytest.fixture(params=[1, 2, 3], ids=lambda n: f"{n}w")
def workers(request):
    return request.param
