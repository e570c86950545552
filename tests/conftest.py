import pytest

import vksycl as sycl


@pytest.fixture(scope="session")
def q() -> sycl.queue:
    """An out-of-order queue on the default device (lavapipe where there is no GPU)."""
    return sycl.queue()


@pytest.fixture(scope="session")
def ordered_q() -> sycl.queue:
    return sycl.queue(property_list=[sycl.property.queue.in_order()])
