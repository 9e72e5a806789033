"""A Python client that talks to the trajectory API the way Atropos' own Python code does.

Walks the example trainer's calls (GET /info probe, POST /register, GET /batch polling) and
BaseEnv's (GET /wandb_info, POST /register-env retried while "wait for trainer to start",
GET /info, GET /status-env with a JSON body on a GET, gzipped POST /scored_data and
/scored_data_list with env_id injected), then checks what the trainer receives with Python's own
json module: the 128-bit integer uuid, all 14 keys, batches of exactly batch_size sequences, and
the trainer's per-group advantage normalisation. Uses `requests` (what Atropos' trainer and
tests use) when it is installed, otherwise urllib; prints one JSON line with what it saw.
Usage: python3 atropos_python_client.py URL
"""

import gzip
import json
import sys
import time

URL = sys.argv[1].rstrip("/")
GROUP_SIZE = 4
BATCH_SIZE = 8
KEYS = {
    "tokens", "masks", "scores", "advantages", "ref_logprobs", "messages", "generation_params",
    "inference_logprobs", "overrides", "group_overrides", "images", "env_id", "distill_token_ids",
    "distill_logprobs",
}

try:
    import requests  # type: ignore

    LIBRARY = "requests"

    def call(method, path, body=None, gzip_body=False):
        headers = {}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
            if gzip_body:
                data = gzip.compress(data)
                headers["Content-Encoding"] = "gzip"
        response = requests.request(method, URL + path, data=data, headers=headers, timeout=30)
        return response.status_code, response.headers.get("Content-Encoding"), response.json()

except ImportError:
    import urllib.request

    LIBRARY = "urllib"

    def call(method, path, body=None, gzip_body=False):
        headers = {"Accept-Encoding": "gzip"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
            if gzip_body:
                data = gzip.compress(data)
                headers["Content-Encoding"] = "gzip"
        request = urllib.request.Request(URL + path, data=data, headers=headers, method=method)
        with urllib.request.urlopen(request, timeout=30) as response:
            raw = response.read()
            encoding = response.headers.get("Content-Encoding")
            if encoding == "gzip":
                raw = gzip.decompress(raw)
            return response.status, encoding, json.loads(raw)


def check(condition, message):
    if not condition:
        raise SystemExit("check failed: " + message)


seen = {"library": LIBRARY}

# Trainer: reachability probe, register, first /batch (which lets envs register).
status, _, info = call("GET", "/info")
check(status == 200 and info == {"batch_size": -1, "max_token_len": -1}, f"/info before register: {info}")
status, _, registered = call("POST", "/register", {
    "wandb_group": "g", "wandb_project": "p", "batch_size": BATCH_SIZE, "max_token_len": 64,
    "checkpoint_dir": "ckpts", "save_checkpoint_interval": 10, "starting_step": 0, "num_steps": 100,
})
uuid = registered["uuid"]
check(isinstance(uuid, int) and uuid.bit_length() > 64, f"uuid is not a 128-bit int: {uuid!r}")
seen["uuid_bits"] = uuid.bit_length()

# Env: before the trainer's first /batch, registration must wait.
status, _, waiting = call("POST", "/register-env", {
    "max_token_length": 64, "desired_name": "py", "weight": 1.0, "group_size": GROUP_SIZE,
    "min_batch_allocation": None,
})
check(waiting == {"status": "wait for trainer to start"}, f"register-env before start: {waiting}")
status, _, first = call("GET", "/batch")
check(first == {"batch": None}, f"first /batch: {first}")

status, _, wandb = call("GET", "/wandb_info")
check(wandb == {"group": "g", "project": "p"}, f"/wandb_info: {wandb}")
for attempt in range(10):
    status, _, env = call("POST", "/register-env", {
        "max_token_length": 64, "desired_name": "py", "weight": 1.0, "group_size": GROUP_SIZE,
        "min_batch_allocation": None,
    })
    if env.get("status") == "success":
        break
    time.sleep(0.2)
check(env.get("status") == "success" and env["wandb_name"] == "py_0", f"register-env: {env}")
env_id = env["env_id"]
status, _, info = call("GET", "/info")
check(info == {"batch_size": BATCH_SIZE, "max_token_len": 64}, f"/info after register: {info}")

# GET with a JSON body, as BaseEnv (aiohttp) and Atropos' tests (requests) send it.
status, _, env_status = call("GET", "/status-env", {"env_id": env_id})
check(status == 200 and env_status["env_weight"] == 1.0 and isinstance(env_status["env_weight"], float),
      f"/status-env: {env_status}")


def group(index):
    tokens = [[index, position, 7, 8, 9] for position in range(GROUP_SIZE)]
    return {
        "tokens": tokens,
        "masks": [[-100, -100, 7, 8, 9] for _ in tokens],
        "scores": [float(position) for position in range(GROUP_SIZE)],
        "inference_logprobs": [[1.0, 1.0, -0.5, -0.25, -0.125] for _ in tokens],
        "messages": [[{"role": "user", "content": f"task {index} 東京"}] for _ in tokens],
        "group_overrides": {"group": index},
        "env_id": env_id,
    }


status, _, answer = call("POST", "/scored_data", group(0), gzip_body=True)
check(status == 200 and answer == {"status": "received"}, f"/scored_data: {answer}")
status, _, answer = call("POST", "/scored_data_list", [group(1), group(2), group(3)], gzip_body=True)
check(status == 200 and answer.get("groups_processed") == 3, f"/scored_data_list: {answer}")

# Trainer data loop: poll until non-null, keep pulling while non-null.
batches = []
for attempt in range(50):
    status, encoding, body = call("GET", "/batch")
    if body["batch"] is None:
        if batches:
            break
        time.sleep(0.1)
        continue
    batches.append(body["batch"])
    seen.setdefault("batch_encodings", []).append(encoding)

groups = [item for batch in batches for item in batch]
check(len(batches) == 2, f"expected 2 batches of {BATCH_SIZE} sequences, got {len(batches)}")
for batch in batches:
    check(sum(len(item["tokens"]) for item in batch) == BATCH_SIZE, "a batch is not batch_size sequences")
for item in groups:
    check(set(item.keys()) == KEYS, f"keys of a served group: {sorted(item.keys())}")
    check(all(len(lp) == len(t) for lp, t in zip(item["inference_logprobs"], item["tokens"])),
          "inference_logprobs do not line up with tokens")
    check(item["env_id"] == env_id, "env_id lost")
check([item["group_overrides"]["group"] for item in groups] == [0, 1, 2, 3], "groups out of order or lost")
check(groups[0]["messages"][0][0]["content"] == "task 0 東京", "messages not passed through")

# The example trainer's advantages: (s - mean) / max(std, 1e-8), population std.
advantages = []
for item in groups:
    scores = item["scores"]
    mean = sum(scores) / len(scores)
    std = (sum((score - mean) ** 2 for score in scores) / len(scores)) ** 0.5
    advantages.append([round((score - mean) / max(std, 1e-8), 6) for score in scores])
seen["advantages_group0"] = advantages[0]

status, _, latest = call("GET", "/latest_example")
check(latest["group_overrides"] == {"group": 3}, f"/latest_example: {latest.get('group_overrides')}")
status, _, run = call("GET", "/status")
seen["current_step"] = run["current_step"]
seen["batches"] = len(batches)
print(json.dumps(seen))
