"""A trainer that waits says so (issue 33 §5): within 10 s of a wait's start, then again every
interval with the time so far and what the API reports, and once more when the wait ends. The
clock and the sleep are injected, so a wait of minutes takes no time; the API is the real one."""

import json
import urllib.request

import pytest

from shears_trainer.api import ApiError, TrajectoryApi
from shears_trainer.waiting import WaitNotes, format_wait, wait_note_default


class FakeClock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_a_wait_is_said_within_10_s_then_every_interval_with_the_time_so_far():
    clock = FakeClock()
    lines: list[str] = []
    notes = WaitNotes("a batch", lines.append, every_s=30, clock=clock)
    for _ in range(200):  # 100 s of half-second polls
        notes.tick(lambda: "2 groups queued")
        clock.sleep(0.5)
    assert lines[0] == "waiting for a batch (5.0 s so far); 2 groups queued"
    assert lines[1:] == [
        "still waiting for a batch: 35 s so far; 2 groups queued",
        "still waiting for a batch: 1 min 5 s so far; 2 groups queued",
        "still waiting for a batch: 1 min 35 s so far; 2 groups queued",
    ]
    assert notes.done() == pytest.approx(100.0)
    assert lines[-1] == "done waiting for a batch after 1 min 40 s"


def test_a_short_wait_is_not_announced():
    clock = FakeClock()
    lines: list[str] = []
    notes = WaitNotes("a batch", lines.append, clock=clock)
    notes.tick()
    clock.sleep(1.0)
    notes.tick()
    notes.done()
    assert lines == []


def test_an_interval_under_the_first_note_says_it_sooner():
    clock = FakeClock()
    lines: list[str] = []
    notes = WaitNotes("a batch", lines.append, every_s=0.25, clock=clock)
    for _ in range(4):
        notes.tick()
        clock.sleep(0.25)
    assert lines == [
        "waiting for a batch (0.2 s so far)",
        "still waiting for a batch: 0.5 s so far",
        "still waiting for a batch: 0.8 s so far",
    ]


def test_the_interval_comes_from_shears_train():
    assert wait_note_default({}) == 30.0
    assert wait_note_default({"SHEARS_WAIT_NOTE_MS": "1500"}) == 1.5
    with pytest.raises(ValueError, match="SHEARS_WAIT_NOTE_MS='soon'"):
        wait_note_default({"SHEARS_WAIT_NOTE_MS": "soon"})
    with pytest.raises(ValueError, match="above 0"):
        WaitNotes("x", print, every_s=0)


def test_format_wait():
    assert [format_wait(s) for s in (4.24, 45.9, 200, 3900)] == ["4.2 s", "45 s", "3 min 20 s", "1 h 5 min"]


def test_waiting_for_a_batch_from_the_real_api_says_what_it_waits_for(fresh_shears_api):
    """No env sends anything: the trainer's wait reports the API's empty queue until the timeout."""
    api = TrajectoryApi(fresh_shears_api)
    api.register(batch_size=4, max_token_len=64, num_steps=3)
    clock = FakeClock()
    lines: list[str] = []
    with pytest.raises(ApiError, match=f"no batch from {fresh_shears_api} within 70 s"):
        api.wait_for_batch(
            poll_s=2.0, timeout_s=70, say=lines.append, note_every_s=30, clock=clock, sleep=clock.sleep
        )
    assert lines == [
        f"waiting for a batch from {fresh_shears_api} (6.0 s so far); 0 groups queued (not yet a batch), trainer step 0",
        f"still waiting for a batch from {fresh_shears_api}: 36 s so far; 0 groups queued (not yet a batch), trainer step 0",
        f"still waiting for a batch from {fresh_shears_api}: 1 min 6 s so far; 0 groups queued (not yet a batch), trainer step 0",
    ]


def test_a_wait_that_ends_says_so_and_returns_the_batch(fresh_shears_api):
    api = TrajectoryApi(fresh_shears_api)
    api.register(batch_size=2, max_token_len=64, num_steps=3)
    env = {"max_token_length": 64, "desired_name": "wait", "weight": 1.0, "group_size": 2}
    post(fresh_shears_api, "/register-env", env)
    clock = FakeClock()
    lines: list[str] = []

    def sleep(seconds: float) -> None:
        clock.sleep(seconds)
        if clock.now - 1000 >= 12:  # the env's group arrives 12 s into the wait
            post(fresh_shears_api, "/scored_data", GROUP)

    groups = api.wait_for_batch(poll_s=3.0, say=lines.append, note_every_s=30, clock=clock, sleep=sleep)
    assert len(groups) == 1
    assert lines[0].startswith(f"waiting for a batch from {fresh_shears_api} (6.0 s so far)")
    assert lines[-1] == f"done waiting for a batch from {fresh_shears_api} after 12 s"


GROUP = {
    "tokens": [[1, 2, 3], [1, 2, 4]],
    "masks": [[-100, 2, 3], [-100, 2, 4]],
    "scores": [1.0, 0.0],
    "env_id": 0,
}


def post(url: str, path: str, body: dict) -> None:
    request = urllib.request.Request(
        url + path,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    urllib.request.urlopen(request).read()
