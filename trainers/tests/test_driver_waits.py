"""The cluster driver's waits (the trajectory API, the trainer's policy server, Ray restarting a
worker) say what they wait for within 5 s and then every 10 s, with the time so far and the
limit, and say when the wait ended; a wait that ends at once prints nothing."""

from shears_cluster.driver import WaitNotes, wait_listening_noted


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_long_wait_is_announced_within_5_s_then_every_10_s_and_its_end_said():
    clock, lines = Clock(), []
    answers = iter([None] * 6 + ["http://10.0.0.2:8000"])

    def ask(seconds: float) -> str | None:
        clock.now += seconds  # each slice waits its full length, as a server not yet listening does
        return next(answers)

    notes = WaitNotes("the trajectory API on the head node", 120, clock=clock, printer=lines.append)
    url = wait_listening_noted(ask, "unused", 120, notes)
    assert url == "http://10.0.0.2:8000"
    waiting = [line for line in lines if line.startswith("[driver] waiting for")]
    # 35 s of waiting: at 5, 15 and 25 s (and 35 s), each naming what, the time so far and the limit.
    assert (
        waiting[0]
        == "[driver] waiting for the trajectory API on the head node: 5 s so far (gives up after 120 s)"
    )
    assert [line.split(": ")[1].split(" ")[0] for line in waiting] == ["5", "15", "25", "35"]
    assert lines[-1] == "[driver] the trajectory API on the head node: done after 35 s"


def test_a_wait_that_ends_at_once_prints_nothing():
    clock, lines = Clock(), []
    notes = WaitNotes("the trainer's policy server", 600, clock=clock, printer=lines.append)
    assert wait_listening_noted(lambda seconds: "http://x:1", "unused", 600, notes) == "http://x:1"
    assert lines == []


def test_a_wait_that_runs_out_returns_none_after_the_limit():
    clock, lines = Clock(), []

    def ask(seconds: float) -> None:
        clock.now += seconds

    notes = WaitNotes("the trainer's policy server", 12, clock=clock, printer=lines.append)
    assert wait_listening_noted(ask, "unused", 12, notes) is None
    assert clock.now == 112.0  # 5 + 5 + 2: never past the limit
    assert lines[0].startswith("[driver] waiting for the trainer's policy server: 5 s so far")
