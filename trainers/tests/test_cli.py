"""The command line says each default once: `grpo`'s flags are GrpoConfig's fields (built by
transformers' HfArgumentParser), the other commands' defaults are those of the function they call
(issue 37 §4). A flag that parses but is not passed on would be a setting silently ignored."""

import dataclasses

import pytest

from shears_trainer import __main__ as cli
from shears_trainer.bench import compare_with_bare, run_bench
from shears_trainer.toy import make_toy_model
from shears_trainer.toy_loop import learning_check, run_toy_loop, toy_accuracy
from shears_trainer.train import GrpoConfig, run_sft

REQUIRED = {"model": "in", "output": "out"}


def parse(*argv):
    return cli.build_parser().parse_args(list(argv))


def test_grpo_without_flags_is_the_dataclass_with_its_defaults():
    args = parse("grpo", "--model", "in", "--output", "out")
    assert cli.grpo_config(args) == GrpoConfig(**REQUIRED)


# A value other than the default for every field, and the flag shears' CLI passes it as.
CHANGED = {
    "api_url": ("--api-url", "http://127.0.0.1:9"),
    "steps": ("--steps", 3),
    "batch_size": ("--batch-size", 8),
    "micro_batch": ("--micro-batch", 4),
    "lr": ("--lr", 0.5),
    "weight_decay": ("--weight-decay", 0.1),
    "adam_beta1": ("--adam-beta1", 0.8),
    "adam_beta2": ("--adam-beta2", 0.95),
    "max_grad_norm": ("--max-grad-norm", 2.0),
    "clip_low": ("--clip-low", 0.1),
    "clip_high": ("--clip-high", 0.3),
    "beta": ("--beta", 0.04),
    "loss": ("--loss", "dr_grpo"),
    "max_tokens": ("--max-tokens", 512),
    "advantages": ("--advantages", "scores"),
    "control": ("--control", "shuffle-signs"),
    "checkpoint_every": ("--checkpoint-every", 2),
    "lora_rank": ("--lora-rank", 8),
    "lora_alpha": ("--lora-alpha", 32),
    "serve_port": ("--serve-port", 8001),
    "serve_host": ("--serve-host", "0.0.0.0"),
    "max_token_len": ("--max-token-len", 4096),
    "metrics": ("--metrics", "m.jsonl"),
    "seed": ("--seed", 7),
    "batch_timeout_s": ("--batch-timeout", 5.0),
    "wait_note_s": ("--wait-note-s", 5.0),
    "threads": ("--threads", 2),
    "device": ("--device", "cpu"),
}


def test_every_grpo_setting_is_a_flag_that_reaches_the_config():
    names = {field.name for field in dataclasses.fields(GrpoConfig)}
    assert names - set(REQUIRED) == set(CHANGED)
    argv = ["grpo", "--model", "in", "--output", "out"]
    for flag, value in CHANGED.values():
        argv += [flag, str(value)]
    config = cli.grpo_config(parse(*argv))
    assert config == GrpoConfig(**REQUIRED, **{name: value for name, (_, value) in CHANGED.items()})
    for name, (_, value) in CHANGED.items():
        assert getattr(config, name) != getattr(GrpoConfig(**REQUIRED), name), name


def test_a_grpo_choice_outside_its_set_is_refused(capsys):
    with pytest.raises(SystemExit):
        parse("grpo", "--model", "in", "--output", "out", "--loss", "ppo")
    assert "invalid choice" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, function",
    [
        (["sft", "--model", "m", "--data", "d", "--output", "o"], run_sft),
        (["toy-model", "--output", "o"], make_toy_model),
        (["toy-accuracy", "--model", "m"], toy_accuracy),
        (["toy-loop", "--model", "m"], run_toy_loop),
        (["learning-check"], learning_check),
        (["bench"], run_bench),
        (["bench"], compare_with_bare),
    ],
)
def test_a_commands_defaults_are_its_functions(argv, function):
    parsed = vars(parse(*argv))
    defaults = cli.defaults_of(function)
    shared = set(parsed) & set(defaults)
    assert shared, function.__name__
    assert {name: parsed[name] for name in shared} == {name: defaults[name] for name in shared}
