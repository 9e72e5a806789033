"""What the two peer runners of bench/env-rollouts.ts share: the arguments, the task list (the
JSON file the bench writes, so all three frameworks play the same rows), the per-rollout
workspace (a fresh temporary folder holding the task's words.txt, removed after the reward) and
the measurement (wall time, CPU of this process and its reaped children, peak RSS).

A runner starts once (imports, tokenizer) and then serves the bench: it prints {"ready": true},
reads one JSON line per run from stdin ({"url", "concurrency", "rollouts", "warmup"}: warm-up
rollouts run first on a URL's first use, unmeasured) and prints one JSON line per run:
{"rollouts", "failed", "wall_s", "cpu_s", "peak_rss_mb", "first_failure"?}; the bench adds the
load and the ratios. An empty line or end of input ends it."""

import argparse
import asyncio
import json
import sys
import os
import resource
import shutil
import tempfile
import time

READ_FILE_DESCRIPTION = "Read a text file of the workspace"


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", required=True, help="JSON list of {id, prompt, text, words}")
    parser.add_argument("--group-size", type=int, required=True)
    parser.add_argument("--tokenizer", help="a local tokenizer folder (Atropos needs one)")
    return parser.parse_args()


def load_tasks(path):
    with open(path, encoding="utf8") as handle:
        return json.load(handle)


def make_workspace(text):
    """A rollout's own workspace: a fresh folder holding words.txt."""
    workspace = tempfile.mkdtemp(prefix="peer-count-words-")
    with open(os.path.join(workspace, "words.txt"), "w", encoding="utf8") as handle:
        handle.write(text)
    return workspace


def remove_workspace(workspace):
    shutil.rmtree(workspace, ignore_errors=True)


def read_workspace_file(workspace, path):
    """The read_text tool: a file of the rollout's workspace (no path out of it)."""
    full = os.path.realpath(os.path.join(workspace, path))
    if not full.startswith(os.path.realpath(workspace) + os.sep):
        raise ValueError(f"{path}: outside the workspace")
    with open(full, encoding="utf8") as handle:
        return handle.read()


def count_words(text):
    return len(text.split())


def cpu_seconds():
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


async def serve(make_runner):
    """The runner's loop (see the module's doc). make_runner(url) builds the env for one server
    and returns `async run(rollouts, concurrency) -> (scored_ok, failed, first_failure)`."""
    loop = asyncio.get_running_loop()
    runners = {}
    print(json.dumps({"ready": True}), flush=True)
    while True:
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if not line.strip():
            return
        request = json.loads(line)
        url = request["url"]
        if url not in runners:
            runners[url] = await make_runner(url)
            if request.get("warmup"):
                await runners[url](request["warmup"], request["concurrency"])
        run = runners[url]
        cpu_before = cpu_seconds()
        started = time.perf_counter()
        ok, failed, first_failure = await run(request["rollouts"], request["concurrency"])
        wall = time.perf_counter() - started
        cpu = cpu_seconds() - cpu_before
        record = {
            "rollouts": ok + failed,
            "failed": failed,
            "wall_s": round(wall, 3),
            "cpu_s": round(cpu, 3),
            # ru_maxrss is in KiB on Linux: this process's peak over its life (imports included).
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        }
        if first_failure:
            record["first_failure"] = str(first_failure)[:300]
        print(json.dumps(record), flush=True)
