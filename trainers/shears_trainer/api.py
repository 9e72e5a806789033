"""The trainer's side of the Atropos trajectory API (`shears api`, Atropos' run-api): register,
then poll `GET /batch`. Standard library only; gzip answers are accepted."""

from __future__ import annotations

import gzip
import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable

from .waiting import EVERY_S, WaitNotes


class ApiError(RuntimeError):
    pass


class TrajectoryApi:
    def __init__(self, url: str, token: str | None = None, timeout: float = 60.0):
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout

    def _request(self, method: str, path: str, body: dict | None = None) -> object:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("Accept-Encoding", "gzip")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                raw = response.read()
                if response.headers.get("Content-Encoding") == "gzip":
                    raw = gzip.decompress(raw)
        except urllib.error.HTTPError as error:
            detail = error.read()[:500].decode(errors="replace")
            raise ApiError(f"{method} {self.url}{path}: HTTP {error.code}: {detail}") from error
        except urllib.error.URLError as error:
            raise ApiError(f"{method} {self.url}{path}: {error.reason}") from error
        try:
            return json.loads(raw)
        except ValueError as error:
            raise ApiError(f"{method} {self.url}{path}: answer is not JSON: {raw[:200]!r}") from error

    def register(
        self,
        batch_size: int,
        max_token_len: int,
        num_steps: int,
        checkpoint_dir: str = "",
        save_checkpoint_interval: int = 0,
        starting_step: int = 0,
        wandb_group: str = "",
        wandb_project: str = "",
    ) -> object:
        answer = self._request(
            "POST",
            "/register",
            {
                "wandb_group": wandb_group,
                "wandb_project": wandb_project,
                "batch_size": batch_size,
                "max_token_len": max_token_len,
                "checkpoint_dir": checkpoint_dir,
                "save_checkpoint_interval": save_checkpoint_interval,
                "starting_step": starting_step,
                "num_steps": num_steps,
            },
        )
        if not isinstance(answer, dict) or "uuid" not in answer:
            raise ApiError(f"POST /register: unexpected answer {answer!r:.200}")
        return answer["uuid"]

    def batch(self) -> list[dict] | None:
        """One batch (a list of groups), or None when none is ready yet."""
        answer = self._request("GET", "/batch")
        if not isinstance(answer, dict):
            raise ApiError(f"GET /batch: unexpected answer {answer!r:.200}")
        if answer.get("status") == "error":
            raise ApiError(f"GET /batch: {answer.get('message')}")
        return answer.get("batch")

    def status(self) -> dict:
        """`GET /status`: the trainer step the API counts and how many groups it has queued."""
        answer = self._request("GET", "/status")
        if not isinstance(answer, dict):
            raise ApiError(f"GET /status: unexpected answer {answer!r:.200}")
        return answer

    def wait_for_batch(
        self,
        poll_s: float = 0.05,
        timeout_s: float | None = None,
        stop=None,
        say: Callable[[str], None] | None = None,
        note_every_s: float = EVERY_S,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> list[dict]:
        """Polls `GET /batch` until the API hands out one. A wait that lasts says so (to `say`,
        default stdout) within 5 s, then every `note_every_s`, with how long it has waited and the
        groups the API has queued."""
        notes = WaitNotes(f"a batch from {self.url}", say or _print_flush, every_s=note_every_s, clock=clock)
        while True:
            batch = self.batch()
            if batch:
                notes.done()
                return batch
            if stop is not None and stop():
                raise ApiError(f"stopped while waiting for a batch (after {notes.elapsed():.1f} s)")
            if timeout_s is not None and notes.elapsed() > timeout_s:
                raise ApiError(f"no batch from {self.url} within {timeout_s:.0f} s")
            notes.tick(self._queue_note)
            sleep(poll_s)

    def _queue_note(self) -> str | None:
        try:
            status = self.status()
        except ApiError as error:
            return f"GET /status failed: {error}"
        queued = status.get("queue_size")
        step = status.get("current_step")
        return f"{queued} groups queued (not yet a batch), trainer step {step}"


def _print_flush(line: str) -> None:
    print(line, flush=True)
