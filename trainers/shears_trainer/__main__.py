"""`python -m shears_trainer` (or `shears-trainer`): grpo | sft | toy-model | toy-accuracy | toy-loop |
learning-check | bench."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .loss import VARIANTS


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="shears-trainer", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    grpo = commands.add_parser("grpo", help="train with GRPO on batches pulled from the trajectory API")
    grpo.add_argument("--model", required=True, help="Hugging Face model folder to start from")
    grpo.add_argument("--output", required=True, help="folder for the final model, metrics and checkpoints")
    grpo.add_argument("--api-url", help="trajectory API (default: $SHEARS_API_URL, then $ATROPOS_SERVER_URL)")
    grpo.add_argument("--steps", type=int, default=50)
    grpo.add_argument(
        "--batch-size", type=int, default=64, help="sequences per step (registered with the API)"
    )
    grpo.add_argument(
        "--micro-batch", type=int, default=16, help="sequences per forward pass (gradient accumulation)"
    )
    grpo.add_argument("--lr", type=float, default=1e-3)
    grpo.add_argument("--weight-decay", type=float, default=0.0)
    grpo.add_argument("--max-grad-norm", type=float, default=1.0)
    grpo.add_argument("--clip-low", type=float, default=0.2)
    grpo.add_argument("--clip-high", type=float, default=0.2)
    grpo.add_argument(
        "--beta",
        type=float,
        default=0.0,
        help="KL weight to the reference (ref_logprobs, else the start model)",
    )
    grpo.add_argument(
        "--loss", choices=VARIANTS, default="grpo", help="aggregation: grpo, token (DAPO), dr_grpo"
    )
    grpo.add_argument(
        "--max-tokens", type=int, help="dr_grpo's constant normaliser (default: the batch width)"
    )
    grpo.add_argument(
        "--advantages",
        choices=("served", "scores"),
        default="served",
        help="served: the per-token advantages in each group (shears computes them); scores: normalise scores here",
    )
    grpo.add_argument(
        "--control",
        choices=("shuffle-signs",),
        help="a control experiment: give each sequence's advantage a random sign (nothing should be learnt)",
    )
    grpo.add_argument(
        "--checkpoint-every", type=int, default=0, help="save a checkpoint every N steps (0: never)"
    )
    grpo.add_argument(
        "--lora-rank", type=int, default=0, help="train a LoRA adapter of this rank (peft); merged on save"
    )
    grpo.add_argument("--lora-alpha", type=int, default=16)
    grpo.add_argument(
        "--serve-port", type=int, help="serve the policy colocated on this port (POST /generate)"
    )
    grpo.add_argument("--serve-host", default="127.0.0.1")
    grpo.add_argument("--max-token-len", type=int, default=2048)
    grpo.add_argument("--metrics", help="metrics JSONL (default OUTPUT/metrics.jsonl)")
    grpo.add_argument("--seed", type=int, default=0)
    grpo.add_argument("--batch-timeout", type=float, default=600.0, help="seconds to wait for one batch")
    grpo.add_argument("--threads", type=int, help="torch CPU threads")
    grpo.add_argument(
        "--device",
        default="auto",
        help="torch device: auto (CUDA when this torch has it, else CPU), cpu, cuda or cuda:N",
    )

    sft = commands.add_parser("sft", help="supervised warm-up on shears' SFT export (chat JSONL)")
    sft.add_argument("--model", required=True)
    sft.add_argument(
        "--data", required=True, help="JSONL with {messages: [...]} per line (shears' SFT export)"
    )
    sft.add_argument("--output", required=True)
    sft.add_argument("--tools", help="JSON file with the tool schemas the prompts were rendered with")
    sft.add_argument("--steps", type=int)
    sft.add_argument("--epochs", type=float, default=1.0)
    sft.add_argument("--batch-size", type=int, default=32)
    sft.add_argument("--lr", type=float, default=3e-3)
    sft.add_argument("--seed", type=int, default=0)
    sft.add_argument("--threads", type=int)
    sft.add_argument(
        "--device",
        default="auto",
        help="torch device: auto (CUDA when this torch has it, else CPU), cpu, cuda or cuda:N",
    )

    toy = commands.add_parser(
        "toy-model", help="make the toy model folder (BPE vocabulary, chat template, random weights)"
    )
    toy.add_argument("--output", required=True)
    toy.add_argument("--vocab-size", type=int, default=440)
    toy.add_argument("--seed", type=int, default=0)

    accuracy = commands.add_parser("toy-accuracy", help="greedy accuracy of a toy model on fresh words")
    accuracy.add_argument("--model", required=True)
    accuracy.add_argument("--words", type=int, default=64)
    accuracy.add_argument("--seed", type=int, default=12345)
    accuracy.add_argument(
        "--samples",
        type=int,
        default=0,
        help="also the mean reward of this many sampled answers per word (at --temperature)",
    )
    accuracy.add_argument("--temperature", type=float, default=1.0)

    loop = commands.add_parser(
        "toy-loop",
        help="GRPO on the toy task in one process (sample, score with the toy rule, step): the algorithm alone",
    )
    loop.add_argument("--model", required=True)
    loop.add_argument("--steps", type=int, default=40)
    loop.add_argument("--prompts", type=int, default=8, help="groups per step")
    loop.add_argument("--group-size", type=int, default=8)
    loop.add_argument("--lr", type=float, default=3e-4)
    loop.add_argument("--temperature", type=float, default=1.0)
    loop.add_argument("--control", choices=("shuffle-signs",))
    loop.add_argument("--seed", type=int, default=0)
    loop.add_argument("--threads", type=int)

    check = commands.add_parser(
        "learning-check",
        help="the learning test in one process: toy model, warm-up, GRPO and the shuffled-sign control (JSON)",
    )
    check.add_argument("--folder", help="where the models go (default: a temporary folder)")
    check.add_argument("--model-seed", type=int, default=0)
    check.add_argument("--seed", type=int, default=0, help="the GRPO runs' sampling seed")
    check.add_argument("--threads", type=int, default=1)

    bench = commands.add_parser(
        "bench",
        help="time the trainer step and the colocated sampler on the toy model or --shape (JSON on stdout)",
    )
    bench.add_argument("--threads", type=int, default=1)
    bench.add_argument("--repeats", type=int, default=5)
    bench.add_argument(
        "--device", default="cpu", help="torch device: cpu (the default), auto, cpu, cuda or cuda:N"
    )
    bench.add_argument(
        "--learning", action="store_true", help="also run and time the CI learning test (~90 s of CPU)"
    )
    bench.add_argument(
        "--rounds",
        type=int,
        default=5,
        help="interleaved rounds of the GRPO step against a bare torch step (0: skip the comparison)",
    )
    bench.add_argument(
        "--compare-shapes",
        default="toy,qwen3-vocab",
        help="models of the comparison (comma-separated): toy (its 435 tokens), qwen3-vocab (Qwen3's 151 669)",
    )
    bench.add_argument(
        "--compare-rows", default="4,16", help="batch rows of the comparison (comma-separated)"
    )
    bench.add_argument(
        "--shape",
        default="toy",
        help="the model timed: toy (the default) or qwen3-0.6b (Qwen3-0.6B's architecture, random"
        " weights, float32 as the trainer keeps them; its step peaked at 25 GiB on a GPU; on a CPU, before the chunked logits, 34 GiB of RAM)",
    )

    args = parser.parse_args(argv)
    if args.command == "grpo":
        from .train import GrpoConfig, run_grpo

        fields = vars(args).copy()
        fields.pop("command")
        fields["batch_timeout_s"] = fields.pop("batch_timeout")
        from .api import ApiError

        try:
            run_grpo(GrpoConfig(**fields))
        except ApiError as error:
            # The API's own words (no batch in time, refused, unreachable): one line, exit 1.
            print(f"shears-trainer grpo: {error}", file=sys.stderr, flush=True)
            return 1
    elif args.command == "sft":
        from .train import run_sft

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
        from .toy_loop import run_toy_loop

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
        import tempfile

        from .toy_loop import learning_check

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
        from .bench import check_shape, compare_with_bare, run_bench

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
        from .toy import toy_accuracy

        print(
            json.dumps(
                toy_accuracy(
                    args.model, args.words, args.seed, samples=args.samples, temperature=args.temperature
                )
            ),
            flush=True,
        )
    else:
        from .toy import make_toy_model

        print(json.dumps(make_toy_model(args.output, vocab_size=args.vocab_size, seed=args.seed)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
