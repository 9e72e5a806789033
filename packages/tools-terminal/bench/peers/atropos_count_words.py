"""The "count the words" env in Atropos's idiom (BaseEnv from the pinned snapshot): get_next_item
hands out the task rows, collect_trajectory plays one rollout through the env's ServerManager
(an OpenAI server config pointing at the bench's scripted server) with one tool, read_text,
offered in the chat request, and scores it; BaseEnv.collect_trajectories gathers group_size of
them into a ScoredDataGroup (tokens and masks from Atropos's tokenize_for_trainer, which every
Atropos group carries). Each rollout has its own workspace (a temporary folder holding the task's
words.txt), removed after the reward has read it.

The groups run as Atropos's env loop runs them (one worker per group, max_num_workers at a time);
workers = concurrency / group_size. Nothing is sent to a trainer API (no trainer is measured).
Run by bench/env-rollouts.ts with BENCH_ATROPOS_PYTHON (a venv with the snapshot importable; see
the bench's README section for what that venv stubs)."""

import asyncio
import json
import logging
import os
import sys

# Stand-ins for packages an offline index may lack, all off the measured path (see stubs/ and the
# README): appended after site-packages, so an installed package wins over its stand-in.
sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "stubs", "atropos"))

from common import (  # noqa: E402
    READ_FILE_DESCRIPTION,
    count_words,
    load_tasks,
    make_workspace,
    parse_args,
    read_workspace_file,
    remove_workspace,
    serve,
)

from atroposlib.envs.base import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataItem
from atroposlib.utils.tokenize_for_trainer import tokenize_for_trainer

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_text",
            "description": READ_FILE_DESCRIPTION,
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
            },
        },
    }
]
MAX_TURNS = 4


class CountWordsEnv(BaseEnv):
    name = "count_words"

    def __init__(self, config, server_configs, tasks):
        super().__init__(config, server_configs, slurm=False, testing=False)
        self.tasks = tasks
        self.cursor = 0

    async def setup(self):
        pass

    async def evaluate(self, *args, **kwargs):
        pass  # no eval split in this bench

    async def get_next_item(self):
        task = self.tasks[self.cursor % len(self.tasks)]
        self.cursor += 1
        return task

    async def collect_trajectory(self, item):
        workspace = make_workspace(item["text"])
        try:
            messages = [{"role": "user", "content": item["prompt"]}]
            final = None
            for _ in range(MAX_TURNS):
                completion = await self.server.chat_completion(
                    messages=messages, tools=TOOLS, n=1, max_tokens=256
                )
                message = completion.choices[0].message
                if not message.tool_calls:
                    final = message.content or ""
                    messages.append({"role": "assistant", "content": final})
                    break
                calls = [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {
                            "name": call.function.name,
                            "arguments": call.function.arguments,
                        },
                    }
                    for call in message.tool_calls
                ]
                messages.append(
                    {"role": "assistant", "content": message.content or "", "tool_calls": calls}
                )
                for call in message.tool_calls:
                    try:
                        if call.function.name != "read_text":
                            raise ValueError(f"no tool {call.function.name}")
                        args = json.loads(call.function.arguments)
                        result = read_workspace_file(workspace, args["path"])
                    except Exception as error:  # the model sees the tool's error
                        result = f"error: {error}"
                    messages.append(
                        {"role": "tool", "tool_call_id": call.id, "content": result}
                    )
            # The reward reads the rollout's workspace.
            words = count_words(read_workspace_file(workspace, "words.txt"))
            correct = words == item["words"] and (final or "").strip() == str(words)
            tokenized = tokenize_for_trainer(self.tokenizer, messages)
            scored = ScoredDataItem(
                tokens=tokenized["tokens"],
                masks=tokenized["masks"],
                scores=1.0 if correct else 0.0,
            )
            return scored, []
        finally:
            remove_workspace(workspace)


def build_env(args, tasks, url):
    config = BaseEnvConfig(
        tokenizer_name=args.tokenizer,
        group_size=args.group_size,
        use_wandb=False,
        max_num_workers=-1,  # set per run: concurrency / group_size
        ensure_scores_are_not_same=False,
        include_messages=False,
    )
    servers = [
        APIServerConfig(
            model_name="bench",
            base_url=url,
            api_key="bench",
            num_max_requests_at_once=1024,  # the bench's concurrency is the limit
            health_check=False,
        )
    ]
    return CountWordsEnv(config, servers, tasks)


async def run_rollouts(env, rollouts, workers):
    """Groups through collect_trajectories, `workers` at a time, as Atropos's env loop runs them."""
    groups = -(-rollouts // env.config.group_size)
    semaphore = asyncio.Semaphore(workers)
    ok = failed = 0
    first_failure = None

    async def one_group():
        nonlocal ok, failed, first_failure
        async with semaphore:
            item = await env.get_next_item()
            try:
                group, _ = await env.collect_trajectories(item)
                group = await env.postprocess_histories(group)
                for score in group["scores"]:
                    if score == 1.0:
                        ok += 1
                    else:
                        failed += 1
                        first_failure = first_failure or f"score {score}"
            except Exception as error:
                failed += env.config.group_size
                first_failure = first_failure or repr(error)

    await asyncio.gather(*(one_group() for _ in range(groups)))
    return ok, failed, first_failure


async def main():
    logging.disable(logging.WARNING)
    args = parse_args()
    tasks = load_tasks(args.tasks)

    async def make_runner(url):
        env = build_env(args, tasks, url)
        await env.setup()

        async def run(rollouts, concurrency):
            env.max_num_workers = max(1, concurrency // args.group_size)
            return await run_rollouts(env, rollouts, env.max_num_workers)

        return run

    await serve(make_runner)


if __name__ == "__main__":
    asyncio.run(main())
