"""Ctrl-C during `ls`: Python runs a SIGINT's handler at the next bytecode, and when that is inside a
weakref callback or a `__del__`, the KeyboardInterrupt it raises is printed as 'Exception ignored'
and lost: ls then ran to its end and exited 0 (seen in CI). ls's output loops hold the SIGINT in a
LatchedInterrupt and raise it again between pages."""

from __future__ import annotations

import gc
import os
import signal

import pytest

from s3bulk.cli.signals import LatchedInterrupt

pytestmark = pytest.mark.unit  # no server: runs in `pytest -m unit` (tests/conftest.py)


class _Dies:
    def __init__(self, act) -> None:
        self.act = act

    def __del__(self) -> None:
        self.act()


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the swallowing itself
def test_a_sigint_swallowed_in_a_finaliser_is_raised_again_by_check():
    with LatchedInterrupt() as interrupt:
        handler = signal.getsignal(signal.SIGINT)
        assert callable(handler)
        _Dies(lambda: handler(signal.SIGINT, None))  # raised inside __del__: ignored, as in CI
        gc.collect()
        assert interrupt.came
        with pytest.raises(KeyboardInterrupt):
            interrupt.check()


def test_a_real_sigint_still_raises_at_once_and_the_old_handler_comes_back():
    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):
        with LatchedInterrupt():
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(1_000_000):  # the handler runs at the next bytecode check
                pass
    assert signal.getsignal(signal.SIGINT) is before


def test_no_sigint_nothing_raised():
    with LatchedInterrupt() as interrupt:
        interrupt.check()
    assert not interrupt.came
