"""The colocated policy server: the trainer's own model serves token-in/token-out generation over
the wire protocol of vLLM's `/generate` (the one shears' managed `vllm` server speaks), so env
workers sample from the weights being trained. After each optimiser step the trainer bumps the
policy version; a generation never runs while the weights change (one lock), and every answer
says which version sampled it (`policy_version`, an extension vLLM does not send).

Request (POST /generate): {"prompt": {"prompt_token_ids": [...]}, "n", "max_tokens",
"temperature", "top_p", "seed", "logprobs": 0, "skip_special_tokens": false,
"spaces_between_special_tokens": false}. Answer: {"token_ids": [[...]], "logprobs": [[{"id":
logprob}, ...]], "finish_reasons": ["stop" | "length"], "policy_version": v}. The logprobs are
the model's own (temperature 1, before top-p), which is what the trainer's importance ratio
compares against. Any other field, or `stop` strings, is refused with 400 naming it: a setting is
used or refused, never ignored.

Concurrent requests are batched: a worker thread takes every waiting request (up to
`max_batch` sequences), left-pads the prompts and samples them together with a KV cache.
"""

from __future__ import annotations

import inspect
import json
import queue
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import torch

KNOWN_FIELDS = {
    "prompt",
    "n",
    "max_tokens",
    "temperature",
    "top_p",
    "seed",
    "logprobs",
    "skip_special_tokens",
    "spaces_between_special_tokens",
    "model",
}


class RequestError(ValueError):
    pass


@dataclass(frozen=True)
class Sampling:
    """How one row is sampled by `generate_batch`: vLLM's fields of the same names."""

    max_tokens: int
    temperature: float = 1.0
    top_p: float = 1.0
    seed: int | None = None


@dataclass
class _Job:
    """A request waiting for the generation thread, and its answer."""

    prompt: list[int]
    n: int
    sampling: Sampling
    done: threading.Event = field(default_factory=threading.Event)
    result: dict | None = None
    error: str | None = None
    status: int = 500


def parse_request(body: object, vocab_size: int, default_max_tokens: int) -> _Job:
    if not isinstance(body, dict):
        raise RequestError("body must be a JSON object")
    unknown = sorted(set(body) - KNOWN_FIELDS)
    if unknown:
        raise RequestError(
            f"unsupported field(s) {', '.join(unknown)} (supported: {', '.join(sorted(KNOWN_FIELDS))})"
        )
    prompt = body.get("prompt")
    ids = prompt.get("prompt_token_ids") if isinstance(prompt, dict) else None
    if not isinstance(ids, list) or not ids:
        raise RequestError('"prompt" must be {"prompt_token_ids": [non-empty list of token ids]}')
    tokens: list[int] = []
    for index, value in enumerate(ids):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < vocab_size:
            raise RequestError(
                f"prompt_token_ids[{index}] = {value!r} is not a token id (0..{vocab_size - 1})"
            )
        tokens.append(value)
    if body.get("skip_special_tokens", False) or body.get("spaces_between_special_tokens", False):
        raise RequestError("skip_special_tokens / spaces_between_special_tokens: only false is supported")
    if body.get("logprobs", 0) not in (0, None):
        raise RequestError('"logprobs": only 0 (the sampled token\'s logprob) is supported')

    def number(name: str, default, low, high, integer=False):
        value = body.get(name, default)
        if value is None:
            value = default
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise RequestError(f'"{name}" must be a number, got {value!r}')
        if integer and not float(value).is_integer():
            raise RequestError(f'"{name}" must be an integer, got {value!r}')
        if not low <= value <= high:
            raise RequestError(f'"{name}" = {value!r} is outside [{low}, {high}]')
        return int(value) if integer else float(value)

    seed = body.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise RequestError(f'"seed" must be an integer, got {seed!r}')
    return _Job(
        prompt=tokens,
        n=number("n", 1, 1, 256, integer=True),
        sampling=Sampling(
            max_tokens=number("max_tokens", default_max_tokens, 1, 1 << 20, integer=True),
            temperature=number("temperature", 1.0, 0.0, 100.0),
            top_p=number("top_p", 1.0, 1e-6, 1.0),
            seed=seed,
        ),
    )


class PolicyServer:
    """Serves `model` on host:port; `lock` guards the weights (hold it while stepping the optimiser)."""

    def __init__(
        self,
        model,
        stop_token_ids: list[int],
        host: str = "127.0.0.1",
        port: int = 0,
        max_batch: int = 128,
        default_max_tokens: int = 256,
        max_context: int | None = None,
    ):
        self.model = model
        self.stop_token_ids = set(stop_token_ids)
        self.max_batch = max_batch
        self.default_max_tokens = default_max_tokens
        self.max_context = max_context
        self.lock = threading.Lock()
        self.version = 0
        self.requests = 0
        self.generated_tokens = 0
        self._queue: queue.Queue[_Job] = queue.Queue()
        self._closing = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet: the trainer logs metrics, not requests
                pass

            def _send(self, status: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                if self.path in ("/health", "/v1/health"):
                    self._send(200, {"status": "ok", "policy_version": server.version})
                else:
                    self._send(404, {"detail": f"no route GET {self.path} (routes: /health, POST /generate)"})

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if self.path != "/generate":
                    self._send(404, {"detail": f"no route POST {self.path} (routes: /generate)"})
                    return
                try:
                    job = parse_request(
                        json.loads(raw or b"null"), server.vocab_size, server.default_max_tokens
                    )
                except (RequestError, ValueError) as error:
                    self._send(400, {"detail": str(error)})
                    return
                server._queue.put(job)
                job.done.wait()
                if job.error is not None:
                    self._send(job.status, {"detail": job.error})
                else:
                    self._send(200, job.result)

        self.vocab_size = model.get_input_embeddings().weight.shape[0]
        self.httpd = ThreadingHTTPServer((host, port), Handler)
        self.httpd.daemon_threads = True
        self._closed = False
        self.port = self.httpd.server_address[1]
        self.url = f"http://{host}:{self.port}"
        self._threads = [
            threading.Thread(target=self.httpd.serve_forever, daemon=True, name="policy-http"),
            threading.Thread(target=self._work, daemon=True, name="policy-generate"),
        ]

    def start(self) -> PolicyServer:
        for thread in self._threads:
            thread.start()
        return self

    def close(self) -> None:
        """Stops serving: the batch in progress finishes, waiting requests are answered 503. The
        generation thread is joined, so the process never exits in the middle of a torch call.
        Closing again does nothing."""
        if self._closed:
            return
        self._closed = True
        self._closing.set()
        self._threads[1].join(timeout=60)
        while True:
            try:
                job = self._queue.get_nowait()
            except queue.Empty:
                break
            job.error = "the policy server is shutting down"
            job.status = 503
            job.done.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def bump_version(self) -> int:
        """Call with `lock` held, after the optimiser step."""
        self.version += 1
        return self.version

    def _work(self) -> None:
        while not self._closing.is_set():
            try:
                first = self._queue.get(timeout=0.1)
            except queue.Empty:
                continue
            jobs = [first]
            width = first.n
            while width < self.max_batch:
                try:
                    job = self._queue.get_nowait()
                except queue.Empty:
                    break
                jobs.append(job)
                width += job.n
            try:
                with self.lock:
                    version = self.version
                    results = generate_batch(
                        self.model,
                        [(job.prompt, job.sampling) for job in jobs for _ in range(job.n)],
                        self.stop_token_ids,
                        self.max_context,
                    )
                offset = 0
                for job in jobs:
                    mine = results[offset : offset + job.n]
                    offset += job.n
                    job.result = {
                        "token_ids": [ids for ids, _, _ in mine],
                        "logprobs": [[{str(t): lp} for t, lp in zip(ids, lps)] for ids, lps, _ in mine],
                        "finish_reasons": [reason for _, _, reason in mine],
                        "policy_version": version,
                    }
                    self.requests += 1
                    self.generated_tokens += sum(len(ids) for ids, _, _ in mine)
            except Exception as error:  # noqa: BLE001 -- a failed batch fails its requests, not the server
                for job in jobs:
                    job.error = f"generation failed: {type(error).__name__}: {error}"
            for job in jobs:
                job.done.set()


def _last_logits_only(model) -> dict:
    """`{"logits_to_keep": 1}` where the model's forward takes it (transformers' causal LMs; a LoRA
    model's base), else nothing."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return {"logits_to_keep": 1} if "logits_to_keep" in inspect.signature(base.forward).parameters else {}


@torch.no_grad()
def generate_batch(
    model, rows: list[tuple[list[int], Sampling]], stop_ids: set[int], max_context: int | None = None
):
    """Samples every row together (left-padded, KV cache). Returns (ids, logprobs, finish_reason) per row."""
    was_training = model.training
    model.eval()
    try:
        device = next(model.parameters()).device
        count = len(rows)
        longest = max(len(prompt) for prompt, _ in rows)
        input_ids = torch.zeros((count, longest), dtype=torch.long, device=device)
        attention = torch.zeros((count, longest), dtype=torch.long, device=device)
        for row, (prompt, _) in enumerate(rows):
            input_ids[row, longest - len(prompt) :] = torch.tensor(prompt, dtype=torch.long)
            attention[row, longest - len(prompt) :] = 1
        budgets = [sampling.max_tokens for _, sampling in rows]
        if max_context is not None:
            budgets = [max(0, min(b, max_context - len(p))) for b, (p, _) in zip(budgets, rows)]
        generators = []
        for _, sampling in rows:
            if sampling.seed is None:
                generators.append(None)
            else:
                generator = torch.Generator(device=device)
                generator.manual_seed(sampling.seed)
                generators.append(generator)
        temperatures = torch.tensor([sampling.temperature for _, sampling in rows], dtype=torch.float32)
        top_ps = torch.tensor([sampling.top_p for _, sampling in rows], dtype=torch.float32)
        simple = (
            all(generator is None for generator in generators)
            and bool((top_ps == 1.0).all())
            and bool((temperatures == temperatures[0]).all())
            and float(temperatures[0]) > 0
        )
        out_ids: list[list[int]] = [[] for _ in rows]
        out_lps: list[list[float]] = [[] for _ in rows]
        reasons: list[str | None] = [None] * count
        for row, budget in enumerate(budgets):
            if budget == 0:
                reasons[row] = "length"
        position_ids = (attention.cumsum(-1) - 1).clamp(min=0)
        # Only the last position's logits are sampled from: without this, the prompt's forward pass
        # (the first step) computes [rows, prompt length, vocabulary] logits, 2.5 GB for 16 prompts
        # of 256 tokens at Qwen3's vocabulary.
        last_only = _last_logits_only(model)
        past = None
        step_input = input_ids
        step_positions = position_ids
        for _ in range(max(budgets)):
            active = [row for row in range(count) if reasons[row] is None]
            if not active:
                break
            output = model(
                input_ids=step_input,
                attention_mask=attention,
                position_ids=step_positions,
                past_key_values=past,
                use_cache=True,
                **last_only,
            )
            past = output.past_key_values
            logits = output.logits[:, -1, :].float()
            logprobs = torch.log_softmax(logits, dim=-1)
            if simple:
                # The common case, vectorised: no seeds, no top-p, one temperature.
                probs = torch.softmax(logprobs / temperatures[0], dim=-1)
                chosen = torch.multinomial(probs, 1).squeeze(-1)
            else:
                chosen = torch.zeros(count, dtype=torch.long)
                for row in active:
                    chosen[row] = _sample(logprobs[row], temperatures[row], top_ps[row], generators[row])
            # One copy to the host per step (not one per row): on a GPU each int()/float() of a
            # device tensor would wait for the device on its own.
            chosen = chosen.to(device)
            tokens = chosen.tolist()
            picked = logprobs.gather(1, chosen.unsqueeze(-1)).squeeze(-1).tolist()
            for row in active:
                token = tokens[row]
                out_ids[row].append(token)
                out_lps[row].append(picked[row])
                if token in stop_ids:
                    reasons[row] = "stop"
                elif len(out_ids[row]) >= budgets[row]:
                    reasons[row] = "length"
            step_input = chosen.unsqueeze(-1)
            attention = torch.cat(
                [attention, torch.ones((count, 1), dtype=torch.long, device=device)], dim=-1
            )
            step_positions = step_positions[:, -1:] + 1
        return [(out_ids[row], out_lps[row], reasons[row] or "length") for row in range(count)]
    finally:
        model.train(was_training)


def _sample(logprobs: torch.Tensor, temperature: torch.Tensor, top_p: torch.Tensor, generator) -> int:
    if float(temperature) == 0.0:
        return int(torch.argmax(logprobs))
    probs = torch.softmax(logprobs / temperature, dim=-1)
    if float(top_p) < 1.0:
        sorted_probs, order = torch.sort(probs, descending=True)
        keep = sorted_probs.cumsum(-1) - sorted_probs < top_p
        probs = torch.zeros_like(probs).scatter(0, order[keep], sorted_probs[keep])
    return int(torch.multinomial(probs, 1, generator=generator))
