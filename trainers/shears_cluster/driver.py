"""The Ray driver of `shears serve --cluster ray://HOST:PORT`.

The CLI validates the config, writes a launch spec (JSON, see `LaunchSpec`) and runs
`python -m shears_cluster SPEC`. This program connects to the cluster with `ray.init(address=...)`
and places, top to bottom:

1. the trajectory API: one `shears api` process in an actor pinned to the head node (Ray's
   `node:__internal_head__` resource), its queue database on that node's disk;
2. N env workers: each a `shears serve` process in an actor that Ray restarts (`max_restarts`)
   when it or its node dies, spread over the nodes that have the worker resources. Every line a
   worker prints reaches this terminal prefixed `[worker-I]`. A worker that dies is started again
   on a surviving node with the groups it still owes; the rollouts it had in flight are lost and
   counted, the groups the API acknowledged stay in the API's database.
3. At the end, once every worker finished and the trainer took every queued group, it stops the
   API and writes a summary (JSON): per worker its incarnations (node, env id, groups sent),
   and the API's own counts (groups received, sequences received and served).

Ray is imported here only, so a one-machine user never needs it.
"""

from __future__ import annotations

import ctypes
import json
import os
import platform
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from typing import Any

HEAD_RESOURCE = "node:__internal_head__"
SENT_LINE = re.compile(r"→ sent$")
REGISTERED_LINE = re.compile(r"registered with \S+ as env (\d+)")
LISTENING_LINE = re.compile(r"(?:trajectory API|policy server) listening on (\S+)")


class LaunchError(Exception):
    """A cluster that cannot run the spec: said before anything is placed."""


@dataclass
class LaunchSpec:
    address: str
    workers: int
    # The shears command on every node (node and the CLI's bin; the same path on every node).
    shears: list[str]
    # `shears serve` arguments after the command (config file, --max-groups is added per worker).
    serve_args: list[str]
    api_args: list[str]
    cwd: str
    summary: str
    max_groups: int | None = None
    max_restarts: int = 3
    worker_cpus: float = 1
    worker_resources: dict[str, float] = field(default_factory=dict)
    # The Ray resource a node with a Docker daemon advertises; set when the sandboxes are Docker's.
    docker_resource: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    drain_timeout_s: float = 600
    # Where the workers write their copies of the groups; None: cwd.
    out_dir: str | None = None
    # `shears train --cluster`: the trainer placed on a node with what it asks for (TrainerSpec).
    trainer: TrainerSpec | None = None
    # Env workers added while the trainer waits on data (ScalingSpec); None: cluster.workers, fixed.
    scaling: ScalingSpec | None = None

    @staticmethod
    def load(path: str) -> LaunchSpec:
        with open(path, encoding="utf-8") as file:
            raw = json.load(file)
        if raw.get("trainer") is not None:
            raw["trainer"] = TrainerSpec(**raw["trainer"])
        if raw.get("scaling") is not None:
            raw["scaling"] = ScalingSpec(**raw["scaling"])
        return LaunchSpec(**raw)


@dataclass
class TrainerSpec:
    """The trainer process of `shears train --cluster` and what it asks Ray for."""

    command: list[str]
    cwd: str
    env: dict[str, str] = field(default_factory=dict)
    cpus: float = 1
    gpus: float = 0
    # Bytes of memory reserved (Ray's `memory` resource); 0: none reserved.
    memory: float = 0
    resources: dict[str, float] = field(default_factory=dict)
    # The reference trainer serves the policy (colocated): the workers sample from it.
    serves_policy: bool = False
    # Seconds to wait for its policy server (the model loads first).
    ready_timeout_s: float = 600


@dataclass
class ScalingSpec:
    """Env workers between `min_workers` (cluster.workers) and `max_workers`: one more while the
    trainer waits on data, checked every `interval_s`."""

    max_workers: int
    # The trainer's batch (api.batch_size, sequences): less queued than that and it waits.
    batch_size: int
    interval_s: float = 10


def _die_with_parent() -> None:
    """Runs in the child before exec: SIGKILL it when the actor that started it dies (a node lost
    with its raylet leaves no orphan `shears serve` behind)."""
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _node_labels() -> dict[str, Any]:
    """This node's id, address and custom resources (what a user recognises it by)."""
    import ray

    node_id = ray.get_runtime_context().get_node_id()
    for node in ray.nodes():
        if node["NodeID"] == node_id:
            custom = sorted(
                name
                for name in node["Resources"]
                if not name.startswith("node:")
                and name not in ("CPU", "GPU", "memory", "object_store_memory")
            )
            return {"node_id": node_id, "address": node["NodeManagerAddress"], "resources": custom}
    return {"node_id": node_id, "address": None, "resources": []}


class ShearsProcess:
    """One `shears` process on a node, its output streamed line by line with this actor's label."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.process: subprocess.Popen[str] | None = None
        self.sent = 0
        self.env_id: int | None = None
        self.listening: str | None = None
        self.ready = threading.Event()

    def __repr__(self) -> str:
        # Ray prefixes every line this actor prints with it: "(worker-1 pid=..)".
        return self.label

    def node(self) -> dict[str, Any]:
        return _node_labels()

    def _pump(self) -> None:
        assert self.process and self.process.stdout
        for raw in self.process.stdout:
            line = raw.rstrip("\n")
            if SENT_LINE.search(line):
                self.sent += 1
            match = REGISTERED_LINE.search(line)
            if match:
                self.env_id = int(match.group(1))
            match = LISTENING_LINE.search(line)
            if match:
                self.listening = match.group(1)
                self.ready.set()
            print(f"[{self.label}] {line}", flush=True)
        self.ready.set()

    def start(self, argv: list[str], cwd: str, env: dict[str, str]) -> dict[str, Any]:
        # Asked again after an unanswered call (the actor was unreachable for a moment): the process
        # this incarnation already runs is the worker, not a second one.
        if self.process is not None and self.process.poll() is None:
            return {"pid": self.process.pid, **_node_labels()}
        self.process = subprocess.Popen(
            argv,
            cwd=cwd,
            env={**os.environ, **env},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            bufsize=1,
            # Only prctl runs between fork and exec (no lock taken), which is safe beside Ray's threads.
            preexec_fn=_die_with_parent,  # noqa: PLW1509
        )
        self.pump = threading.Thread(target=self._pump, daemon=True)
        self.pump.start()
        return {"pid": self.process.pid, **_node_labels()}

    def wait_listening(self, timeout_s: float) -> str | None:
        self.ready.wait(timeout_s)
        return self.listening

    def wait(self) -> dict[str, Any]:
        assert self.process
        code = self.process.wait()
        self.pump.join(timeout=10)
        return {"exit_code": code, "sent": self.sent, "env_id": self.env_id}

    def progress(self) -> dict[str, Any]:
        return {"sent": self.sent, "env_id": self.env_id}

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)


def _metrics(url: str) -> dict[str, float]:
    """The API's own gauges and counters (shears_api_*), and `batch_polls`: the trainer's GET /batch."""
    with urllib.request.urlopen(f"{url.rstrip('/')}/metrics", timeout=10) as response:
        text = response.read().decode("utf-8")
    values: dict[str, float] = {"batch_polls": 0}
    for line in text.splitlines():
        match = re.match(r"^(shears_api_[a-z_]+) ([0-9.eE+-]+)$", line)
        if match:
            values[match.group(1)] = float(match.group(2))
        match = re.match(r'^shears_api_requests_total\{path="/batch",[^}]*\} ([0-9.eE+-]+)$', line)
        if match:
            values["batch_polls"] += float(match.group(1))
    return values


def trainer_waits(before: dict[str, float], now: dict[str, float], batch_size: int) -> bool:
    """The trainer waits on data: it asked for a batch since the last look and less than one batch
    is queued, none formed."""
    return (
        now.get("batch_polls", 0) > before.get("batch_polls", 0)
        and now.get("shears_api_formed_batches", 0) == 0
        and now.get("shears_api_queue_sequences", 0) < batch_size
    )


def trainer_behind(now: dict[str, float], batch_size: int) -> bool:
    """Data waits on the trainer: two batches or more are queued."""
    queued = now.get("shears_api_queue_sequences", 0) + batch_size * now.get("shears_api_formed_batches", 0)
    return queued >= 2 * batch_size


class WorkerSizing:
    """How many env workers keep the trainer fed, between `low` (cluster.workers) and `high`
    (cluster.max_workers): one more after the trainer waited on data at `grow_after` looks in a
    row, one fewer (never below `low`) after two batches or more waited for the trainer at
    `shrink_after` looks in a row. `reason` says why the last change was made."""

    def __init__(self, low: int, high: int, grow_after: int = 2, shrink_after: int = 3) -> None:
        self.low, self.high = low, max(low, high)
        self.grow_after, self.shrink_after = grow_after, shrink_after
        self.workers = low
        self.starved = 0
        self.flooded = 0
        self.reason = ""

    def observe(self, waits: bool, behind: bool) -> int:
        """One look at the API's queue; returns the change in workers (+1, -1 or 0)."""
        self.starved = self.starved + 1 if waits else 0
        self.flooded = self.flooded + 1 if behind and not waits else 0
        if self.starved >= self.grow_after and self.workers < self.high:
            self.workers += 1
            self.starved = 0
            self.reason = (
                f"the trainer waited on data at {self.grow_after} looks in a row; at most {self.high}"
            )
            return 1
        if self.flooded >= self.shrink_after and self.workers > self.low:
            self.workers -= 1
            self.flooded = 0
            self.reason = (
                f"two batches or more waited for the trainer at {self.shrink_after} looks in a row; "
                f"at least {self.low}"
            )
            return -1
        return 0


_NOT_CUSTOM = ("CPU", "GPU", "memory", "object_store_memory")


def cluster_metadata(address: str) -> dict[str, Any]:
    """The versions the cluster was started with, as Ray keeps them in the head's GCS
    (`ray_version`, `python_version`); read before `ray.init`, which would refuse a mismatch with
    a less specific message."""
    from ray._common.usage.usage_lib import get_cluster_metadata
    from ray._raylet import GcsClient

    return get_cluster_metadata(GcsClient(address=address))


def version_problems(cluster: dict[str, Any], ray_version: str, python_version: str) -> list[str]:
    """Where this driver's Ray and Python differ from the cluster's (Ray refuses to connect then:
    the Ray versions must be equal, the Python versions equal to the patch level, unless
    RAY_DEFAULT_PYTHON_VERSION_MATCH_LEVEL=minor)."""
    problems = []
    if cluster.get("ray_version") != ray_version:
        problems.append(
            f"the cluster runs Ray {cluster.get('ray_version')}, this driver's Python ({sys.executable}) "
            f"has Ray {ray_version}; install ray=={cluster.get('ray_version')} there "
            "(or set cluster.python to a Python that has it)"
        )
    level = os.environ.get("RAY_DEFAULT_PYTHON_VERSION_MATCH_LEVEL", "patch")
    parts = 2 if level == "minor" else 3
    theirs = str(cluster.get("python_version", "")).split(".")[:parts]
    if theirs != python_version.split(".")[:parts]:
        problems.append(
            f"the cluster runs Python {cluster.get('python_version')}, this driver runs Python "
            f"{python_version}; set cluster.python to a Python {'.'.join(theirs)}"
        )
    return problems


def _have(node: dict[str, Any]) -> str:
    return f"{node['NodeManagerAddress']}: " + ", ".join(
        f"{name}={value:g}"
        for name, value in sorted(node["Resources"].items())
        if not name.startswith("node:") and name not in ("memory", "object_store_memory")
    )


def worker_needs(spec: LaunchSpec) -> dict[str, float]:
    """What one env worker asks Ray for: its CPUs, the custom resources, and a share of the Docker
    resource when its sandboxes are Docker containers (so it lands on a node with a daemon)."""
    needs = {"CPU": spec.worker_cpus, **spec.worker_resources}
    if spec.docker_resource and needs.get(spec.docker_resource, 0) <= 0:
        needs[spec.docker_resource] = 0.001
    return needs


def node_problems(nodes: list[dict[str, Any]], spec: LaunchSpec) -> list[str]:
    """What the cluster's nodes (`ray.nodes()`) lack for the spec, as sentences (empty: none)."""
    problems = []
    nodes = [node for node in nodes if node["Alive"]]
    if not any(HEAD_RESOURCE in node["Resources"] for node in nodes):
        problems.append("no head node is alive (the trajectory API runs there)")
    if spec.docker_resource and not any(node["Resources"].get(spec.docker_resource, 0) > 0 for node in nodes):
        problems.append(
            f"the env's sandboxes are Docker containers (sandbox.provider docker) and no node advertises "
            f"the resource {spec.docker_resource!r} (cluster.docker_resource) that says it has a Docker "
            f"daemon; start the nodes that have one with `ray start --resources "
            f"'{{\"{spec.docker_resource}\": 1}}'`; the nodes have: "
            + "; ".join(_have(node) for node in nodes)
        )
        return problems
    needs = worker_needs(spec)
    fit = [
        node
        for node in nodes
        if all(node["Resources"].get(name, 0) >= amount for name, amount in needs.items() if amount > 0)
    ]
    if not fit:
        problems.append(
            "no node has the resources one env worker asks for ("
            + ", ".join(f"{name}={amount:g}" for name, amount in needs.items())
            + "; cluster.worker_cpus / cluster.worker_resources); the nodes have: "
            + "; ".join(_have(node) for node in nodes)
        )
    return problems


def trainer_needs(trainer: TrainerSpec) -> dict[str, float]:
    """What the trainer asks Ray for (cluster.trainer: cpus, gpus, memory, resources)."""
    needs = {"CPU": trainer.cpus, "GPU": trainer.gpus, "memory": trainer.memory, **trainer.resources}
    return {name: amount for name, amount in needs.items() if amount > 0}


def _amount(name: str, value: float) -> str:
    return f"{name}={value / 2**30:g} GiB" if name == "memory" else f"{name}={value:g}"


def trainer_problems(nodes: list[dict[str, Any]], trainer: TrainerSpec) -> list[str]:
    """Why no alive node can take the trainer (empty: one can): each resource no node has enough
    of, named with the most any node has, or that no single node has all of them."""
    nodes = [node for node in nodes if node["Alive"]]
    needs = trainer_needs(trainer)
    if any(all(node["Resources"].get(name, 0) >= amount for name, amount in needs.items()) for node in nodes):
        return []
    missing = []
    for name, amount in needs.items():
        most = max((node["Resources"].get(name, 0) for node in nodes), default=0)
        if most < amount:
            missing.append(
                f"{_amount(name, amount)}: the most one node has is {_amount(name, most).split('=', 1)[1]}"
            )
    asked = ", ".join(_amount(name, amount) for name, amount in needs.items())
    why = "; ".join(missing) if missing else "each is on some node, but no single node has all of them"
    return [
        f"no node has the resources the trainer asks for ({asked}; cluster.trainer): {why}; the nodes have: "
        + "; ".join(_have(node) for node in nodes)
    ]


def check_cluster(spec: LaunchSpec) -> list[str]:
    """What the connected cluster lacks for the spec, as sentences (empty: it can run it)."""
    import ray

    nodes = ray.nodes()
    return node_problems(nodes, spec) + (trainer_problems(nodes, spec.trainer) if spec.trainer else [])


def doctor(spec: LaunchSpec) -> list[dict[str, str]]:
    """`shears doctor --cluster`: the cluster's versions, nodes and resources against this Python's
    Ray and the spec (worker_cpus, worker_resources, docker_resource), as doctor check lines
    (name, status ok/fail/skip, detail, fix). Places nothing."""
    import ray

    checks = [
        {
            "name": "cluster python",
            "status": "ok",
            "detail": f"{sys.executable}: Python {platform.python_version()}, ray {ray.__version__}, shears_cluster",
        }
    ]
    try:
        cluster = cluster_metadata(spec.address)
    except Exception as error:  # noqa: BLE001 (ray raises its own types, RuntimeError, ConnectionError)
        checks.append(
            {
                "name": "ray version",
                "status": "fail",
                "detail": f"cannot read the cluster's versions from the GCS at {spec.address}: {error}",
                "fix": "point --cluster at the head's GCS port (`ray start --head --port PORT`)",
            }
        )
        return checks
    problems = version_problems(cluster, ray.__version__, platform.python_version())
    checks.append(
        {
            "name": "ray version",
            "status": "fail" if problems else "ok",
            "detail": "; ".join(problems)
            or f"driver and cluster: Ray {ray.__version__}, Python {cluster.get('python_version')}",
            **(
                {"fix": "set cluster.python to a Python with the cluster's Ray and Python"}
                if problems
                else {}
            ),
        }
    )
    if problems:
        return checks  # ray.init would refuse to connect
    ray.init(address=spec.address, logging_level="WARNING", log_to_driver=False)
    try:
        nodes = [node for node in ray.nodes() if node["Alive"]]
    finally:
        ray.shutdown()
    checks.append(
        {
            "name": "cluster nodes",
            "status": "ok" if nodes else "fail",
            "detail": f"{len(nodes)} alive: " + "; ".join(_have(node) for node in nodes),
        }
    )
    if spec.docker_resource:
        docker = [node for node in nodes if node["Resources"].get(spec.docker_resource, 0) > 0]
        checks.append(
            {
                "name": "cluster docker",
                "status": "ok" if docker else "fail",
                "detail": (
                    f"{len(docker)} node(s) advertise {spec.docker_resource!r}: "
                    + ", ".join(node["NodeManagerAddress"] for node in docker)
                )
                if docker
                else f"sandbox.provider docker and no node advertises the resource {spec.docker_resource!r}; "
                "the nodes have: " + "; ".join(_have(node) for node in nodes),
                **(
                    {}
                    if docker
                    else {
                        "fix": f"start the nodes that have a Docker daemon with "
                        f"`ray start --resources '{{\"{spec.docker_resource}\": 1}}'` (cluster.docker_resource)"
                    }
                ),
            }
        )
    else:
        checks.append(
            {"name": "cluster docker", "status": "skip", "detail": "not needed (sandbox is not docker)"}
        )
    if checks[-1]["status"] == "fail":
        checks.append(
            {"name": "cluster workers", "status": "skip", "detail": "no node for Docker workers (above)"}
        )
        return checks
    problems = node_problems(nodes, spec)
    checks.append(
        {
            "name": "cluster workers",
            "status": "fail" if problems else "ok",
            "detail": "; ".join(problems)
            or "a node can take an env worker ("
            + ", ".join(f"{name}={amount:g}" for name, amount in worker_needs(spec).items())
            + ")",
            **(
                {"fix": "fix cluster.worker_cpus / cluster.worker_resources or add nodes"} if problems else {}
            ),
        }
    )
    return checks


class WaitNotes:
    """A wait the driver makes says so within `first_s` and then every `every_s`, with what it
    waits for, the time so far and how long it gives it (a cluster start on a busy machine can
    take minutes: nothing may look like a hang)."""

    def __init__(
        self,
        what: str,
        limit_s: float,
        *,
        first_s: float = 5.0,
        every_s: float = 10.0,
        clock: Any = time.monotonic,
        printer: Any = None,
    ) -> None:
        self.what = what
        self.limit_s = limit_s
        self.every_s = every_s
        self.clock = clock
        self.printer = printer or (lambda line: print(line, flush=True))
        self.started = clock()
        self.next_at = self.started + first_s
        self.noted = False

    def tick(self) -> None:
        now = self.clock()
        if now < self.next_at:
            return
        self.next_at = now + self.every_s
        self.noted = True
        self.printer(
            f"[driver] waiting for {self.what}: {now - self.started:.0f} s so far (gives up after {self.limit_s:g} s)"
        )

    def done(self) -> None:
        if self.noted:
            self.printer(f"[driver] {self.what}: done after {self.clock() - self.started:.0f} s")


def wait_listening_noted(ask: Any, what: str, timeout_s: float, notes: WaitNotes | None = None) -> str | None:
    """`ask(seconds)` waits up to that long for an address and returns it or None; asked in slices
    of at most 5 s, so that the wait is announced while it lasts."""
    notes = notes or WaitNotes(what, timeout_s)
    left = timeout_s
    while True:
        step = min(5.0, left)
        url = ask(step)
        left -= step
        notes.tick()
        if url or left <= 0:
            notes.done()
            return url


def _stop_all(actors: dict[Any, Any], grace_s: float) -> None:
    """Stops `shears` processes (their `wait` ref -> actor): SIGINT (drain), SIGINT again after
    `grace_s` (stop at once), and after another `grace_s` the actor is killed (its process with it)."""
    import ray

    pending = dict(actors)
    for _ in range(2):
        for actor in pending.values():
            try:
                ray.get(actor.stop.remote(), timeout=10)
            except ray.exceptions.RayError:
                pass  # dead already
        done, _ = ray.wait(list(pending), num_returns=len(pending), timeout=grace_s)
        for ref in done:
            pending.pop(ref)
        if not pending:
            return
    for actor in pending.values():
        ray.kill(actor, no_restart=True)


def run(spec: LaunchSpec) -> int:
    import ray

    started = time.monotonic()
    try:
        cluster = cluster_metadata(spec.address)
    except Exception as error:  # the GCS unreachable or not a Ray head
        raise LaunchError(f"cannot read the Ray cluster's versions at {spec.address}: {error}") from error
    problems = version_problems(cluster, ray.__version__, platform.python_version())
    if problems:
        raise LaunchError("the Ray cluster cannot run this driver: " + "; ".join(problems))
    try:
        ray.init(address=spec.address, log_to_driver=True, logging_level="WARNING")
    except Exception as error:  # ray raises ConnectionError, RuntimeError or its own types
        raise LaunchError(f"cannot connect to the Ray cluster at {spec.address}: {error}") from error
    problems = check_cluster(spec)
    if problems:
        raise LaunchError("the Ray cluster cannot run this: " + "; ".join(problems))

    # The actor's code travels with it: the nodes need Ray, not shears_cluster installed.
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    # No task retries: a worker's `wait` cut short by its death is answered by the driver, which
    # starts it again with the groups it still owes.
    process_actor = ray.remote(ShearsProcess)
    api = process_actor.options(
        name=None, num_cpus=0, resources={HEAD_RESOURCE: 0.001}, max_concurrency=4
    ).remote("api")
    api_node = ray.get(api.start.remote(spec.shears + spec.api_args, spec.cwd, spec.env))
    url = wait_listening_noted(
        lambda seconds: ray.get(api.wait_listening.remote(seconds)),
        "the trajectory API on the head node",
        120,
    )
    if not url:
        raise LaunchError("the trajectory API on the head node did not start (its output is above)")
    # Bound to every interface of the head node: the workers reach it at the node's address.
    url = url.replace("://0.0.0.0:", f"://{api_node['address']}:")
    print(f"[driver] trajectory API on the head node {api_node['address']}: {url}", flush=True)

    # The trainer first, so the env workers do not take the CPUs it asked for.
    trainer = spec.trainer
    trainer_actor = None
    trainer_ref = None
    trainer_run: dict[str, Any] | None = None
    policy_url: str | None = None
    if trainer:
        needs = trainer_needs(trainer)
        trainer_actor = process_actor.options(
            num_cpus=trainer.cpus,
            num_gpus=trainer.gpus,
            memory=trainer.memory or None,
            resources=trainer.resources or None,
            max_restarts=0,
            max_concurrency=4,
        ).remote("trainer")
        env = {**spec.env, **trainer.env, "SHEARS_API_URL": url, "ATROPOS_SERVER_URL": url}
        info = ray.get(trainer_actor.start.remote(trainer.command, trainer.cwd, env))
        trainer_run = {**info, "asked": needs, "exit_code": None}
        print(
            f"[driver] trainer started on {info['address']} {info['resources']} (pid {info['pid']}; asked "
            + ", ".join(_amount(name, amount) for name, amount in needs.items())
            + ")",
            flush=True,
        )
        trainer_ref = trainer_actor.wait.remote()
        if trainer.serves_policy:
            policy_url = wait_listening_noted(
                lambda seconds: ray.get(trainer_actor.wait_listening.remote(seconds)),
                "the trainer's policy server (the model loads first)",
                trainer.ready_timeout_s,
            )
            if not policy_url:
                _stop_all({trainer_ref: trainer_actor}, 10)
                ray.get(api.stop.remote())
                raise LaunchError(
                    "the trainer's policy server did not start within "
                    f"{trainer.ready_timeout_s:g} s (the trainer's output is above)"
                )
            policy_url = policy_url.replace("://0.0.0.0:", f"://{info['address']}:")
            trainer_run["policy_url"] = policy_url
            print(
                f"[driver] the env workers sample from the trainer's policy server {policy_url}", flush=True
            )

    shares = _shares(spec.max_groups, spec.workers)
    worker_options = {
        "num_cpus": spec.worker_cpus,
        "resources": {name: amount for name, amount in worker_needs(spec).items() if name != "CPU"} or None,
        "max_restarts": spec.max_restarts,
        "max_task_retries": 0,
        "max_concurrency": 4,
        "scheduling_strategy": "SPREAD",
    }
    workers = [
        process_actor.options(**worker_options).remote(f"worker-{index}") for index in range(spec.workers)
    ]
    incarnations: list[list[dict[str, Any]]] = [[] for _ in workers]
    owed = list(shares)

    def argv(index: int) -> list[str]:
        extra = ["--url", url]
        if policy_url:
            extra += ["--server.base_url", policy_url]
        if owed[index] is not None:
            extra += ["--max-groups", str(owed[index])]
        attempt = len(incarnations[index])
        return (
            spec.shears
            + spec.serve_args
            + extra
            + [
                "--env.seed",
                str(1000 * attempt + index),
                "--force",
                "--out",
                os.path.join(spec.out_dir or spec.cwd, f"worker-{index}.{attempt}.jsonl"),
            ]
        )

    def start(index: int) -> Any:
        # A restarting actor answers ActorUnavailableError until Ray has started it again.
        deadline = time.monotonic() + 600
        notes = WaitNotes(f"Ray to start worker-{index}", 600)
        call = None
        while True:
            if call is None:
                call = workers[index].start.remote(argv(index), spec.cwd, spec.env)
            try:
                # Looked at every 5 s to say the wait; the same call is kept while it runs (asking
                # again would start a second process).
                info = ray.get(call, timeout=5)
                break
            except ray.exceptions.GetTimeoutError:
                if time.monotonic() > deadline:
                    raise
            except ray.exceptions.ActorUnavailableError:
                if time.monotonic() > deadline:
                    raise
                call = None
                time.sleep(1)
            notes.tick()
        notes.done()
        incarnations[index].append({**info, "sent": 0, "env_id": None, "exit_code": None})
        print(
            f"[driver] worker-{index} started on {info['address']} {info['resources']} (pid {info['pid']})",
            flush=True,
        )
        return workers[index].wait.remote()

    # A worker that owes no group (--max-groups below the number of workers) is not started.
    waiting = {start(index): index for index in range(len(workers)) if owed[index] != 0}
    restarts = 0
    lost_workers = []
    sizing = WorkerSizing(spec.workers, spec.scaling.max_workers) if spec.scaling and trainer else None
    sized_at = time.monotonic()
    resizes: list[dict[str, Any]] = []
    previous: dict[str, float] = {}
    while waiting or trainer_ref is not None:
        refs = list(waiting) + ([trainer_ref] if trainer_ref is not None else [])
        done, _ = ray.wait(refs, num_returns=1, timeout=2)
        if trainer_ref is not None and trainer_ref in done:
            assert trainer_run is not None
            try:
                trainer_run.update(ray.get(trainer_ref))
            except ray.exceptions.RayActorError as error:
                trainer_run["died"] = str(error).splitlines()[0]
            print(
                f"[driver] trainer {'exited with ' + str(trainer_run['exit_code']) if 'died' not in trainer_run else 'died: ' + trainer_run['died']};"
                " stopping the env workers",
                flush=True,
            )
            trainer_ref = None
            break
        # Progress of the live incarnations (what a dead one sent is what it last reported).
        for ref, index in waiting.items():
            if ref in done:
                continue
            try:
                progress = ray.get(workers[index].progress.remote(), timeout=5)
                incarnations[index][-1].update(progress)
            except ray.exceptions.RayError:
                continue  # dead or restarting: what it last reported stands
        for ref in done:
            index = waiting.pop(ref)
            current = incarnations[index][-1]
            try:
                result = ray.get(ref)
                current.update(result)
                if result["exit_code"] != 0:
                    print(f"[driver] worker-{index} exited with {result['exit_code']}", flush=True)
            except ray.exceptions.RayActorError as error:
                current["exit_code"] = None
                current["died"] = str(error).splitlines()[0]
                if owed[index] is not None:
                    owed[index] = max(0, owed[index] - current["sent"])
                restarts += 1
                if len(incarnations[index]) > spec.max_restarts:
                    lost_workers.append(index)
                    print(f"[driver] worker-{index} died and has no restart left", flush=True)
                    continue
                print(
                    f"[driver] worker-{index} died on {current['address']} after {current['sent']} groups;"
                    " Ray restarts it",
                    flush=True,
                )
                if owed[index] == 0:
                    continue
                waiting[start(index)] = index
        if trainer_ref is not None and not waiting:
            # No env worker is left to feed the trainer: it would wait for a batch until its timeout.
            failed = [runs[-1] for runs in incarnations if runs and runs[-1].get("exit_code") != 0]
            if failed or lost_workers:
                print(
                    "[driver] every env worker ended and not all of them well; stopping the trainer",
                    flush=True,
                )
                assert trainer_actor is not None and trainer_run is not None
                _stop_all({trainer_ref: trainer_actor}, 10)
                trainer_run["stopped"] = "no env worker left"
                try:
                    trainer_run.update(ray.get(trainer_ref, timeout=10))
                except ray.exceptions.RayError:
                    pass
                trainer_ref = None
        if sizing and time.monotonic() - sized_at >= spec.scaling.interval_s:
            sized_at = time.monotonic()
            try:
                now = _metrics(url)
            except OSError:
                continue
            batch = spec.scaling.batch_size
            change = sizing.observe(trainer_waits(previous, now, batch), trainer_behind(now, batch))
            previous = now
            if change > 0:
                index = len(workers)
                workers.append(process_actor.options(**worker_options).remote(f"worker-{index}"))
                incarnations.append([])
                owed.append(None)
                waiting[start(index)] = index
            elif change < 0 and waiting:
                ref, index = max(waiting.items(), key=lambda item: item[1])
                waiting.pop(ref)
                _stop_all({ref: workers[index]}, 10)
                incarnations[index][-1].update(ray.get(workers[index].progress.remote()))
                incarnations[index][-1]["stopped"] = "fewer workers"
                incarnations[index][-1]["exit_code"] = 0
            if change:
                note = sizing.reason
                resizes.append(
                    {"seconds": round(time.monotonic() - started, 1), "workers": sizing.workers, "why": note}
                )
                print(f"[driver] env workers: {sizing.workers} ({note})", flush=True)

    if trainer:
        # The trainer ended: the env workers stop at once (their rollouts sample from its policy).
        live = {ref: workers[index] for ref, index in waiting.items()}
        _stop_all(live, 15)
        for ref, index in waiting.items():
            current = incarnations[index][-1]
            try:
                current.update(ray.get(ref, timeout=5))
            except ray.exceptions.RayError:
                current["exit_code"] = None
            current["stopped"] = "the trainer ended"
        waiting = {}
    else:
        # Every worker is done: the trainer takes what is queued, then the API stops.
        deadline = time.monotonic() + spec.drain_timeout_s
        while _metrics(url).get("shears_api_queue_groups", 0) > 0 and time.monotonic() < deadline:
            time.sleep(1)
    metrics = _metrics(url)
    ray.get(api.stop.remote())
    ray.get(api.wait.remote())
    summary = {
        "api": {"url": url, "node": api_node},
        **({"trainer": trainer_run} if trainer_run else {}),
        "workers": [
            {"worker": f"worker-{index}", "incarnations": runs} for index, runs in enumerate(incarnations)
        ],
        **({"resizes": resizes} if sizing else {}),
        "restarts": restarts,
        "groups_sent": sum(run["sent"] for runs in incarnations for run in runs),
        "groups_received": int(metrics.get("shears_api_groups_received_total", 0)),
        "sequences_received": int(metrics.get("shears_api_sequences_received_total", 0)),
        "sequences_served": int(metrics.get("shears_api_sequences_served_total", 0)),
        "batches_served": int(metrics.get("shears_api_batches_served_total", 0)),
        "queued_at_end": int(metrics.get("shears_api_queue_groups", 0)),
        "seconds": round(time.monotonic() - started, 1),
    }
    with open(spec.summary, "w", encoding="utf-8") as file:
        json.dump(summary, file, indent=2)
    print(
        f"[driver] {summary['groups_received']} groups acknowledged by the API, "
        f"{summary['sequences_served']} of {summary['sequences_received']} sequences served to the trainer, "
        f"{restarts} worker restart{'s' if restarts != 1 else ''}; summary in {spec.summary}",
        flush=True,
    )
    if trainer_run is not None:
        if "died" in trainer_run or trainer_run.get("stopped"):
            return 1
        if trainer_run["exit_code"] != 0:
            return trainer_run["exit_code"] or 1
        return 0 if summary["groups_received"] > 0 else 1
    failed = [runs[-1] for runs in incarnations if runs and runs[-1].get("exit_code") not in (0,)]
    if summary["groups_received"] == 0 or failed or lost_workers:
        return 1
    return 0


def _shares(total: int | None, workers: int) -> list[int | None]:
    """`total` groups split over `workers` (the first ones take the remainder); None: unbounded."""
    if total is None:
        return [None] * workers
    return [total // workers + (1 if index < total % workers else 0) for index in range(workers)]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    checking = args[:1] == ["--doctor"]
    if checking:
        args = args[1:]
    if len(args) != 1:
        print("usage: python -m shears_cluster [--doctor] LAUNCH_SPEC.json", file=sys.stderr)
        return 2
    try:
        spec = LaunchSpec.load(args[0])
    except (OSError, TypeError, ValueError) as error:
        print(f"error: launch spec {args[0]}: {error}", file=sys.stderr)
        return 2
    try:
        import ray  # noqa: F401
    except ImportError:
        print(
            "error: Ray is not installed in this Python environment; run `shears prepare --cluster ray` "
            "(or pip install ray==2.58.0)",
            file=sys.stderr,
        )
        return 2
    if checking:
        print(json.dumps(doctor(spec)), flush=True)
        return 0
    try:
        return run(spec)
    except LaunchError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
