"""The "count the words" env in verifiers's idiom (the pinned snapshot's vf.StatefulToolEnv, the
ToolEnv whose tools get per-rollout state): the task rows are the env's eval dataset, read_file
is a plain Python function (its schema derived from the signature) whose `workspace` argument is
hidden from the model and filled in by update_tool_args from the rollout's state; setup_state
makes the rollout's own workspace (a temporary folder holding the task's words.txt); a Rubric
reward function reads it after the rollout, and a rubric @vf.cleanup removes it after scoring.

Run with env.evaluate(client=ClientConfig(...), rollouts_per_example=group_size,
max_concurrent=concurrency / group_size) — verifiers limits groups in flight, not rollouts —
against the bench's scripted server, with results kept in memory (no progress bar, no files).
Run by bench/env-rollouts.ts with BENCH_VERIFIERS_PYTHON (a venv with the snapshot importable;
see the bench's README section for what that venv stubs)."""

import asyncio
import logging
import os
import sys

# Stand-ins for packages an offline index may lack, all off the measured path (see stubs/ and the
# README): appended after site-packages, so an installed package wins over its stand-in.
sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "stubs", "verifiers"))

from common import (  # noqa: E402
    count_words,
    load_tasks,
    make_workspace,
    parse_args,
    read_workspace_file,
    remove_workspace,
    serve,
)

import verifiers as vf
from datasets import Dataset


def read_text(path: str, workspace: str) -> str:
    """Read a text file of the workspace"""
    return read_workspace_file(workspace, path)


class CountWordsRubric(vf.Rubric):
    def __init__(self):
        super().__init__(funcs=[self.counted_right])

    async def counted_right(self, completion, state, info) -> float:
        # The reward reads the rollout's workspace.
        words = count_words(read_workspace_file(state["workspace"], "words.txt"))
        final = completion[-1]["content"] if completion else ""
        return 1.0 if words == info["words"] and (final or "").strip() == str(words) else 0.0

    @vf.cleanup
    async def remove_workspace(self, state):
        remove_workspace(state["workspace"])


class CountWordsEnv(vf.StatefulToolEnv):
    def __init__(self, tasks, **kwargs):
        rows = [
            {"question": task["prompt"], "answer": str(task["words"]), "info": task}
            for task in tasks
        ]
        super().__init__(
            eval_dataset=Dataset.from_list(rows),
            rubric=CountWordsRubric(),
            max_turns=4,
            **kwargs,
        )
        self.add_tool(read_text, args_to_skip=["workspace"])

    async def setup_state(self, state):
        state["workspace"] = make_workspace(state["info"]["text"])
        return await super().setup_state(state)

    def update_tool_args(self, tool_name, tool_args, messages, state, **kwargs):
        return {**tool_args, "workspace": state["workspace"]}


async def run_rollouts(env, client, rollouts, group_size, concurrency):
    outputs = await env.evaluate(
        client=client,
        model="bench",
        num_examples=-(-rollouts // group_size),
        rollouts_per_example=group_size,
        max_concurrent=max(1, concurrency // group_size),
        on_start=lambda *args, **kwargs: None,
        on_progress=lambda *args, **kwargs: None,
        on_log=lambda message: None,
    )
    rewards = [output["reward"] for output in outputs["outputs"]]
    ok = sum(1 for reward in rewards if reward == 1.0)
    failed = len(rewards) - ok
    first = next((output for output in outputs["outputs"] if output["reward"] != 1.0), None)
    return ok, failed, (repr(first)[:300] if first else None)


async def main():
    logging.disable(logging.WARNING)
    args = parse_args()
    tasks = load_tasks(args.tasks)
    # One dataset row per group, the rows cycling through the tasks (enough for 8,192 rollouts).
    env = CountWordsEnv([tasks[index % len(tasks)] for index in range(8192 // args.group_size)])
    os.environ.setdefault("BENCH_API_KEY", "bench")

    async def make_runner(url):
        client = vf.ClientConfig(api_base_url=url, api_key_var="BENCH_API_KEY")

        async def run(rollouts, concurrency):
            return await run_rollouts(env, client, rollouts, args.group_size, concurrency)

        return run

    await serve(make_runner)


if __name__ == "__main__":
    asyncio.run(main())
