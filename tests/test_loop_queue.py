"""engine/run/loop_queue.py: the in-process worker's units queue, awaited by its loop with no
thread: a put from another thread wakes it, a full queue's put goes on once the loop takes an
item, a cancelled wait leaves nothing behind, and the coordinator's own calls are queue.Queue's."""

from __future__ import annotations

import asyncio
import threading

import pytest

from s3bulk.engine.run.loop_queue import LoopQueue

pytestmark = pytest.mark.unit  # no server: runs in `pytest -m unit` (tests/conftest.py)


def test_items_put_before_and_while_waiting_arrive_in_order():
    q = LoopQueue(maxsize=2)
    q.put("first")

    async def consume():
        got = [await q.get_async()]
        feeder = threading.Thread(target=lambda: (q.put("second"), q.put("third"), q.put(None)))
        feeder.start()  # puts while the loop waits: the third blocks on the full queue until a get
        while (item := await q.get_async()) is not None:
            got.append(item)
        feeder.join()
        return got

    assert asyncio.run(consume()) == ["first", "second", "third"]
    assert q.empty()


def test_a_cancelled_wait_leaves_no_waiter_and_a_later_put_is_kept():
    q = LoopQueue()

    async def wait_then_cancel():
        task = asyncio.create_task(q.get_async())
        await asyncio.sleep(0)  # the task now waits on its future (no clock: one pass of the loop)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(wait_then_cancel())
    assert q._waiter is None
    q.put_nowait("unit")  # the coordinator's calls: no loop to wake, the item stays
    assert q.get_nowait() == "unit"


def test_a_put_after_the_loop_closed_does_not_raise():
    q = LoopQueue()
    loop = asyncio.new_event_loop()
    q._waiter = loop.create_future()  # a waiter its loop never finished (a worker that died)
    loop.close()
    q.put(None)
    assert q.get_nowait() is None
