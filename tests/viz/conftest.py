"""Every picture test that takes ``workers`` runs at 1 and 2 worker processes."""

import pytest


@pytest.fixture(params=[1, 2], ids=lambda n: f"{n}w")
def workers(request):
    return request.param
