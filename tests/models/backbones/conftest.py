"""Fixtures of the backbone tests."""
import logging
from typing import List

import pytest
import torch
from mmengine.logging import MMLogger


@pytest.fixture
def mm_logs():
    """Messages logged through mmengine's current logger while the test runs."""
    messages: List[str] = []

    class Collect(logging.Handler):

        def emit(self, record: logging.LogRecord) -> None:
            messages.append(record.getMessage())

    logger = MMLogger.get_current_instance()
    handler = Collect(level=logging.DEBUG)
    logger.addHandler(handler)
    yield messages
    logger.removeHandler(handler)


@pytest.fixture(autouse=True)
def one_thread():
    """Tiny inputs gain nothing from intra-op threads, and on shared cores spinning threads
    make them many times slower: run each backbone test on one thread, then restore."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
