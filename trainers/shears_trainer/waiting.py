"""Says what a wait is for, and for how long: every wait of the trainer (a batch from the API, the
API itself) reports within `first_s` (5 s) that it waits, then again every `every_s` (30 s, like
`shears serve`'s api.wait_note_ms) with the time so far, so a stalled run is never silent. The
clock, the sleep and where the lines go are injectable (tests run a wait of minutes in no time)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable

# The first note comes at most this long after a wait starts (a batch that is ready at once is not
# announced; one that is late is, well within 10 s).
FIRST_NOTE_S = 5.0
EVERY_S = 30.0


def wait_note_default(environ: dict[str, str] | None = None) -> float:
    """Seconds between notes: `SHEARS_WAIT_NOTE_MS` (what `shears train` sets from api.wait_note_ms), else 30."""
    raw = (os.environ if environ is None else environ).get("SHEARS_WAIT_NOTE_MS")
    if raw is None or raw == "":
        return EVERY_S
    try:
        value = float(raw) / 1000
    except ValueError:
        raise ValueError(f"SHEARS_WAIT_NOTE_MS={raw!r}: not a number of milliseconds") from None
    if value <= 0:
        raise ValueError(f"SHEARS_WAIT_NOTE_MS={raw!r}: must be above 0")
    return value


def format_wait(seconds: float) -> str:
    """`4.2 s`, `45 s`, `3 min 20 s`, `1 h 5 min`: under 10 s with a decimal, as the CLI writes waits."""
    if seconds < 10:
        return f"{seconds:.1f} s"
    whole = int(seconds)
    if whole < 60:
        return f"{whole} s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes} min {secs} s" if secs else f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if minutes else f"{hours} h"


class WaitNotes:
    """One wait's notes: call `tick(detail)` as the wait goes on; it says `waiting for WHAT` once
    `first_s` have passed, then `still waiting for WHAT: T so far` every `every_s`; `detail` (a
    callable, asked only when a line is due) adds what the other side reports (a queue size)."""

    def __init__(
        self,
        what: str,
        say: Callable[[str], None],
        every_s: float = EVERY_S,
        first_s: float = FIRST_NOTE_S,
        clock: Callable[[], float] = time.monotonic,
    ):
        if every_s <= 0:
            raise ValueError(f"wait notes every {every_s} s: must be above 0")
        self.what = what
        self.say = say
        self.every_s = every_s
        self.first_s = min(first_s, every_s)
        self.clock = clock
        self.started = clock()
        self.last: float | None = None
        self.notes = 0

    def elapsed(self) -> float:
        return self.clock() - self.started

    def tick(self, detail: Callable[[], str | None] | None = None) -> None:
        now = self.clock()
        waited = now - self.started
        if self.last is None:
            if waited < self.first_s:
                return
            line = f"waiting for {self.what} ({format_wait(waited)} so far)"
        elif now - self.last >= self.every_s:
            line = f"still waiting for {self.what}: {format_wait(waited)} so far"
        else:
            return
        extra = detail() if detail is not None else None
        self.say(f"{line}; {extra}" if extra else line)
        self.last = now
        self.notes += 1

    def done(self) -> float:
        """The wait is over: how long it lasted; a wait that was announced says that it ended."""
        waited = self.elapsed()
        if self.notes:
            self.say(f"done waiting for {self.what} after {format_wait(waited)}")
        return waited
