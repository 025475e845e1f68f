"""The deployment tests run their models on one thread (the small models and videos they
share with the analysis tests are made in ``tests/conftest.py``)."""
import pytest
import torch


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Run the models of these tests on one intra-op thread. On a CPU shared with other jobs,
    torch's OpenMP threads wait for each other at every small op: the 32-px fast/slow model
    took 3.3 s per call at 2 threads and 0.08 s at 1 on the 2-core CI machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
