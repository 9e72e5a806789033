"""`python -m shears_trainer` (or `shears-trainer`): grpo | sft | toy-model | toy-accuracy | toy-loop |
learning-check | bench.

No default is written here: `grpo`'s flags are built from GrpoConfig (transformers'
HfArgumentParser), the other commands' take their defaults from the function they call."""

from __future__ import annotations

import dataclasses
import inspect
import json
import sys
import tempfile
from argparse import ArgumentParser
from pathlib import Path

from transformers import HfArgumentParser

from .api import ApiError
from .bench import COMPARE_ROWS, COMPARE_SHAPES, SHAPES, check_shape, compare_with_bare, run_bench
from .toy import make_toy_model
from .toy_loop import learning_check, run_toy_loop, toy_accuracy
from .train import GrpoConfig, run_grpo, run_sft

DEVICE_HELP = "torch device: auto (CUDA when this torch has it, else CPU), cpu, cuda or cuda:N"


def defaults_of(function) -> dict:
    """`function`'s keyword defaults, for the flags of the command that calls it."""
    return {
        name: parameter.default
        for name, parameter in inspect.signature(function).parameters.items()
        if parameter.default is not inspect.Parameter.empty
    }


def build_parser() -> ArgumentParser:
    parser = ArgumentParser(prog="shears-trainer", description=__doc__)
    # Every command's parser shows its defaults in --help (ArgumentDefaultsHelpFormatter).
    commands = parser.add_subparsers(dest="command", required=True, parser_class=HfArgumentParser)

    commands.add_parser(
        "grpo", dataclass_types=[GrpoConfig], help="train with GRPO on batches pulled from the trajectory API"
    )

    sft = commands.add_parser("sft", help="supervised warm-up on shears' SFT export (chat JSONL)")
    sft.add_argument("--model", required=True, help="Hugging Face model folder to start from")
    sft.add_argument(
        "--data", required=True, help="JSONL with {messages: [...]} per line (shears' SFT export)"
    )
    sft.add_argument("--output", required=True, help="folder for the trained model")
    sft.add_argument("--tools", help="JSON file with the tool schemas the prompts were rendered with")
    sft.add_argument("--steps", type=int, help="optimiser steps (default: --epochs over the data)")
    sft.add_argument("--epochs", type=float, help="passes over the data, when --steps is not given")
    sft.add_argument("--batch-size", type=int, help="sequences per step")
    sft.add_argument("--lr", type=float, help="AdamW's learning rate")
    sft.add_argument("--seed", type=int, help="torch's seed and the data order's")
    sft.add_argument("--threads", type=int, help="torch CPU threads")
    sft.add_argument("--device", help=DEVICE_HELP)
    sft.set_defaults(**defaults_of(run_sft))

    toy = commands.add_parser(
        "toy-model", help="make the toy model folder (BPE vocabulary, chat template, random weights)"
    )
    toy.add_argument("--output", required=True, help="the model folder")
    toy.add_argument("--vocab-size", type=int, help="BPE vocabulary size asked of the tokenizer trainer")
    toy.add_argument("--seed", type=int, help="the weights' and the tokenizer corpus' seed")
    toy.set_defaults(**defaults_of(make_toy_model))

    accuracy = commands.add_parser("toy-accuracy", help="greedy accuracy of a toy model on fresh words")
    accuracy.add_argument("--model", required=True, help="the toy model folder")
    accuracy.add_argument("--words", type=int, help="fresh words asked")
    accuracy.add_argument("--seed", type=int, help="the words' seed")
    accuracy.add_argument(
        "--samples",
        type=int,
        help="also the mean reward of this many sampled answers per word (at --temperature)",
    )
    accuracy.add_argument("--temperature", type=float, help="the samples' temperature")
    accuracy.set_defaults(**defaults_of(toy_accuracy))

    loop = commands.add_parser(
        "toy-loop",
        help="GRPO on the toy task in one process (sample, score with the toy rule, step): the algorithm alone",
    )
    loop.add_argument("--model", required=True, help="the toy model folder to start from")
    loop.add_argument("--steps", type=int, help="optimiser steps")
    loop.add_argument("--prompts", type=int, help="groups per step")
    loop.add_argument("--group-size", type=int, help="samples per prompt")
    loop.add_argument("--lr", type=float, help="AdamW's learning rate")
    loop.add_argument("--temperature", type=float, help="the sampler's temperature")
    loop.add_argument("--control", choices=("shuffle-signs",), help="the shuffled-sign control")
    loop.add_argument("--seed", type=int, help="the sampling seed")
    loop.add_argument("--threads", type=int, help="torch CPU threads")
    loop.set_defaults(**defaults_of(run_toy_loop))

    check = commands.add_parser(
        "learning-check",
        help="the learning test in one process: toy model, warm-up, GRPO and the shuffled-sign control (JSON)",
    )
    check.add_argument("--folder", help="where the models go (default: a temporary folder)")
    check.add_argument("--model-seed", type=int, help="the toy model's seed")
    check.add_argument("--seed", type=int, help="the GRPO runs' sampling seed")
    check.add_argument("--threads", type=int, help="torch CPU threads")
    check.set_defaults(**defaults_of(learning_check))

    bench = commands.add_parser(
        "bench",
        help="the GRPO step beside a bare torch step, then the step and the colocated sampler (JSON lines)",
    )
    bench.add_argument("--threads", type=int, help="torch CPU threads")
    bench.add_argument("--repeats", type=int, help="timed repeats of the step and the sampler")
    bench.add_argument("--device", help=DEVICE_HELP)
    bench.add_argument(
        "--learning", action="store_true", help="also run and time the CI learning test (~90 s of CPU)"
    )
    bench.add_argument(
        "--shape",
        help=f"the model of the step and the sampler: {', '.join(SHAPES)} (qwen3-0.6b: Qwen3-0.6B's architecture,"
        " random weights, float32 as the trainer keeps them; its step peaked at 25 GiB on a GPU)",
    )
    bench.set_defaults(**defaults_of(run_bench))
    bench.add_argument(
        "--rounds",
        type=int,
        default=defaults_of(compare_with_bare)["rounds"],
        help="interleaved rounds of the GRPO step against a bare torch step (0: skip the comparison)",
    )
    bench.add_argument(
        "--compare-shapes",
        default=",".join(COMPARE_SHAPES),
        help="models of the comparison (comma-separated): toy (its 435 tokens), qwen3-vocab (Qwen3's 151 669)",
    )
    bench.add_argument(
        "--compare-rows",
        default=",".join(str(rows) for rows in COMPARE_ROWS),
        help="batch rows of the comparison (comma-separated)",
    )
    return parser


def grpo_config(args) -> GrpoConfig:
    return GrpoConfig(**{field.name: getattr(args, field.name) for field in dataclasses.fields(GrpoConfig)})


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "grpo":
        try:
            run_grpo(grpo_config(args))
        except ApiError as error:
            # The API's own words (no batch in time, refused, unreachable): one line, exit 1.
            print(f"shears-trainer grpo: {error}", file=sys.stderr, flush=True)
            return 1
    elif args.command == "sft":
        tools = json.loads(Path(args.tools).read_text()) if args.tools else None
        result = run_sft(
            args.model,
            args.data,
            args.output,
            tools=tools,
            epochs=args.epochs,
            steps=args.steps,
            batch_size=args.batch_size,
            lr=args.lr,
            seed=args.seed,
            threads=args.threads,
            device=args.device,
        )
        print(json.dumps(result), flush=True)
    elif args.command == "toy-loop":
        result = run_toy_loop(
            args.model,
            steps=args.steps,
            prompts=args.prompts,
            group_size=args.group_size,
            lr=args.lr,
            temperature=args.temperature,
            control=args.control,
            seed=args.seed,
            threads=args.threads,
            log=lambda line: print(line, file=sys.stderr, flush=True),
        )
        result.pop("model")
        result.pop("tokenizer")
        print(json.dumps(result), flush=True)
    elif args.command == "learning-check":

        def check_in(folder: str) -> dict:
            return learning_check(
                folder,
                model_seed=args.model_seed,
                seed=args.seed,
                threads=args.threads,
                log=lambda line: print(line, file=sys.stderr, flush=True),
            )

        if args.folder:
            result = check_in(args.folder)
        else:
            with tempfile.TemporaryDirectory() as folder:
                result = check_in(folder)
        print(json.dumps(result), flush=True)
    elif args.command == "bench":
        shapes = [name for name in args.compare_shapes.split(",") if name]
        for shape in [args.shape, *shapes]:  # refused before anything is built or timed
            check_shape(shape)
        try:
            rows = [int(count) for count in args.compare_rows.split(",") if count]
        except ValueError:
            raise SystemExit(
                f"--compare-rows {args.compare_rows}: expected whole numbers, e.g. 4,16"
            ) from None
        if any(count < 1 for count in rows):
            raise SystemExit(f"--compare-rows {args.compare_rows}: every count must be 1 or more")
        if args.rounds > 0:
            compare_with_bare(
                shapes=shapes,
                rows=rows,
                rounds=args.rounds,
                device=args.device,
                threads=args.threads,
                emit=lambda line: print(json.dumps(line), flush=True),
            )
        print(
            json.dumps(
                {"bench": "step-and-sampler"}
                | run_bench(
                    threads=args.threads,
                    repeats=args.repeats,
                    learning=args.learning,
                    device=args.device,
                    shape=args.shape,
                )
            ),
            flush=True,
        )
    elif args.command == "toy-accuracy":
        print(
            json.dumps(
                toy_accuracy(
                    args.model, args.words, args.seed, samples=args.samples, temperature=args.temperature
                )
            ),
            flush=True,
        )
    else:
        print(json.dumps(make_toy_model(args.output, vocab_size=args.vocab_size, seed=args.seed)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
