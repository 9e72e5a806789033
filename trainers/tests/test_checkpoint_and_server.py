"""A checkpoint round trip (the saved folder loads with AutoModelForCausalLM and gives the same
logits; the tokenizer keeps the chat template) and the colocated policy server: vLLM `/generate`
fields, logprobs that are the model's own, and weight sync (the version in every answer)."""

import json
import urllib.error
import urllib.request

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from shears_trainer.policy_server import PolicyServer
from shears_trainer.train import load_model, save_model, stop_token_ids


def post(url: str, body: dict) -> dict:
    request = urllib.request.Request(
        url + "/generate",
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def test_toy_model_folder(toy_model):
    model = AutoModelForCausalLM.from_pretrained(toy_model)
    tokenizer = AutoTokenizer.from_pretrained(toy_model)
    parameters = sum(p.numel() for p in model.parameters())
    assert 300_000 < parameters < 2_000_000
    assert 300 <= len(tokenizer) <= 512
    config = json.loads((toy_model / "tokenizer_config.json").read_text())
    assert "<tool_call>" in config["chat_template"]  # shears' loader reads it from here
    text = tokenizer.apply_chat_template(
        [{"role": "user", "content": "Save the word kemo."}],
        tools=[
            {"type": "function", "function": {"name": "save", "parameters": {"properties": {"word": {}}}}}
        ],
        tokenize=False,
        add_generation_prompt=True,
    )
    assert (
        text
        == "<|im_start|>tools\nsave(word)<|im_end|>\n<|im_start|>user\nSave the word kemo.<|im_end|>\n<|im_start|>assistant\n"
    )


def perturb(model, seed):
    torch.manual_seed(seed)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(torch.randn_like(parameter) * 0.05)


def test_checkpoint_round_trip(toy_model, tmp_path):
    model, tokenizer = load_model(str(toy_model))
    perturb(model, 1)
    save_model(model, tokenizer, tmp_path / "ft")
    assert (tmp_path / "ft" / "model.safetensors").exists()
    loaded = AutoModelForCausalLM.from_pretrained(tmp_path / "ft")
    ids = torch.tensor([[1, 20, 30, 40, 50]])
    assert torch.allclose(model(ids).logits, loaded(ids).logits, atol=1e-6)
    again = AutoTokenizer.from_pretrained(tmp_path / "ft")
    assert again.chat_template == tokenizer.chat_template
    assert (
        json.loads((tmp_path / "ft" / "tokenizer_config.json").read_text())["chat_template"]
        == tokenizer.chat_template
    )


def test_lora_checkpoint_is_merged_into_a_plain_model(toy_model, tmp_path):
    pytest.importorskip("peft", reason="LoRA is optional: pip install shears-trainer[lora]")
    model, tokenizer = load_model(str(toy_model), lora_rank=4)
    trainable = [name for name, p in model.named_parameters() if p.requires_grad]
    assert trainable and all("lora" in name for name in trainable)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "lora_B" in name:
                parameter.normal_(0, 0.1)
    save_model(model, tokenizer, tmp_path / "lora-ft")
    loaded = AutoModelForCausalLM.from_pretrained(tmp_path / "lora-ft")
    ids = torch.tensor([[1, 20, 30, 40, 50]])
    assert torch.allclose(model(ids).logits, loaded(ids).logits, atol=1e-5)
    base = AutoModelForCausalLM.from_pretrained(toy_model)
    assert not torch.allclose(base(ids).logits, loaded(ids).logits, atol=1e-3)


@pytest.fixture()
def served(toy_model):
    model, tokenizer = load_model(str(toy_model))
    server = PolicyServer(model, stop_token_ids(tokenizer), port=0).start()
    yield server, model, tokenizer
    server.close()


def test_generate_speaks_vllm_fields_and_returns_the_models_logprobs(served):
    server, model, tokenizer = served
    prompt = tokenizer("<|im_start|>user\nSave the word kemo.<|im_end|>\n<|im_start|>assistant\n")[
        "input_ids"
    ]
    answer = post(
        server.url,
        {
            "prompt": {"prompt_token_ids": prompt},
            "n": 3,
            "max_tokens": 12,
            "temperature": 1.0,
            "logprobs": 0,
            "skip_special_tokens": False,
            "spaces_between_special_tokens": False,
        },
    )
    assert answer["policy_version"] == 0
    assert len(answer["token_ids"]) == 3 and len(answer["finish_reasons"]) == 3
    stops = set(stop_token_ids(tokenizer))
    for ids, positions, reason in zip(answer["token_ids"], answer["logprobs"], answer["finish_reasons"]):
        assert len(positions) == len(ids) and 1 <= len(ids) <= 12
        assert reason == ("stop" if ids[-1] in stops else "length")
        # Each logprob is the model's log-softmax (temperature 1) at that position.
        with torch.no_grad():
            logits = model(torch.tensor([prompt + ids])).logits[0]
        expected = torch.log_softmax(logits, -1)[len(prompt) - 1 : -1].gather(-1, torch.tensor(ids)[:, None])[
            :, 0
        ]
        served_lps = [position[str(token)] for position, token in zip(positions, ids)]
        assert served_lps == pytest.approx(expected.tolist(), abs=1e-4)


def test_concurrent_requests_are_batched_and_seeded_sampling_repeats(served):
    server, _, _ = served
    body = {"prompt": {"prompt_token_ids": [5, 6, 7]}, "max_tokens": 8, "seed": 3, "temperature": 1.0}
    first = post(server.url, body)
    assert post(server.url, body)["token_ids"] == first["token_ids"]
    greedy = {"prompt": {"prompt_token_ids": [5, 6, 7, 8, 9]}, "max_tokens": 8, "temperature": 0}
    alone = post(server.url, greedy)["token_ids"]
    from concurrent.futures import ThreadPoolExecutor

    bodies = [greedy] + [{"prompt": {"prompt_token_ids": [9] * k}, "max_tokens": 5} for k in range(1, 8)]
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda b: post(server.url, b), bodies))
    # Left padding next to longer and shorter prompts does not change a greedy answer.
    assert answers[0]["token_ids"] == alone


def test_weight_sync_changes_answers_and_the_version(served):
    server, model, _ = served
    greedy = {"prompt": {"prompt_token_ids": [5, 6, 7, 8, 9]}, "max_tokens": 10, "temperature": 0}
    before = post(server.url, greedy)
    with server.lock:
        perturb(model, 7)
        assert server.bump_version() == 1
    after = post(server.url, greedy)
    assert (before["policy_version"], after["policy_version"]) == (0, 1)
    assert after["logprobs"] != before["logprobs"]


@pytest.mark.parametrize(
    "body, message",
    [
        ({"prompt": {"prompt_token_ids": [1]}, "stop": ["x"]}, "unsupported field(s) stop"),
        ({"prompt": {"prompt_token_ids": []}}, "prompt_token_ids"),
        ({"prompt": {"prompt_token_ids": [100000]}}, "prompt_token_ids[0] = 100000 is not a token id"),
        ({"prompt": {"prompt_token_ids": [1]}, "top_p": 0}, '"top_p" = 0 is outside'),
        ({"prompt": {"prompt_token_ids": [1]}, "skip_special_tokens": True}, "only false is supported"),
    ],
)
def test_bad_requests_are_refused_naming_the_field(served, body, message):
    server, _, _ = served
    with pytest.raises(urllib.error.HTTPError) as caught:
        post(server.url, body)
    assert caught.value.code == 400
    assert message in json.loads(caught.value.read())["detail"]


def test_a_trainer_that_gets_no_batch_exits_with_the_error_while_its_server_is_busy(
    toy_model, fresh_shears_api, tmp_path
):
    """No batch within --batch-timeout: exit 1 with the API's words in one line — also while the
    colocated policy server is in the middle of generating (before, the daemon generation thread
    was killed inside a torch call at exit and the process aborted, SIGABRT)."""
    import subprocess
    import sys
    import threading

    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "shears_trainer",
            "grpo",
            "--model",
            str(toy_model),
            "--output",
            str(tmp_path / "out"),
            "--api-url",
            fresh_shears_api,
            "--steps",
            "1",
            "--batch-size",
            "8",
            "--serve-port",
            "0",
            "--batch-timeout",
            "3",
            "--threads",
            "1",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = None
    for line in process.stdout:
        if "policy server listening on " in line:
            url = line.split("policy server listening on ")[1].split()[0]
            break
    assert url, "the trainer did not start its policy server"
    answered = []

    def keep_generating():
        body = {"prompt": {"prompt_token_ids": [5, 6, 7]}, "max_tokens": 64, "temperature": 1.0, "n": 16}
        while process.poll() is None:
            try:
                post(url, body)
                answered.append(1)
            except (OSError, urllib.error.URLError):
                return

    client = threading.Thread(target=keep_generating, daemon=True)
    client.start()
    _, stderr = process.communicate(timeout=120)
    assert answered, "the policy server answered no request while the trainer waited"
    assert process.returncode == 1, stderr[-2000:]
    assert "shears-trainer grpo: no batch from" in stderr and "within 3 s" in stderr
    assert "Traceback" not in stderr
