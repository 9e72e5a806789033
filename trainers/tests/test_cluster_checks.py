"""The cluster driver's checks before anything is placed (trainers/shears_cluster): fed the
cluster's versions and node lists as Ray reports them (`ray.nodes()`, the GCS cluster metadata),
so each refusal is tested without a cluster; cluster.e2e.test.ts runs them on a real one."""

from shears_cluster.driver import LaunchSpec, node_problems, version_problems, worker_needs


def spec(**overrides):
    return LaunchSpec(
        address="127.0.0.1:6379",
        workers=2,
        shears=["shears"],
        serve_args=[],
        api_args=[],
        cwd=".",
        summary="s.json",
        **overrides,
    )


def node(address, resources, alive=True, head=False):
    return {
        "NodeManagerAddress": address,
        "Alive": alive,
        "Resources": {
            **resources,
            f"node:{address}": 1.0,
            **({"node:__internal_head__": 1.0} if head else {}),
            "memory": 1e9,
        },
    }


HEAD = node("10.0.0.1", {"CPU": 4.0}, head=True)
WORKER = node("10.0.0.2", {"CPU": 2.0, "nodeA": 1.0})


def test_equal_versions_pass():
    assert version_problems({"ray_version": "2.58.0", "python_version": "3.11.9"}, "2.58.0", "3.11.9") == []


def test_a_ray_version_mismatch_names_both_versions():
    [problem] = version_problems({"ray_version": "2.40.0", "python_version": "3.11.9"}, "2.58.0", "3.11.9")
    assert "the cluster runs Ray 2.40.0" in problem
    assert "has Ray 2.58.0" in problem
    assert "ray==2.40.0" in problem


def test_a_python_patch_mismatch_is_refused_like_ray_does(monkeypatch):
    monkeypatch.delenv("RAY_DEFAULT_PYTHON_VERSION_MATCH_LEVEL", raising=False)
    [problem] = version_problems({"ray_version": "2.58.0", "python_version": "3.11.4"}, "2.58.0", "3.11.9")
    assert "Python 3.11.4" in problem and "Python 3.11.9" in problem
    monkeypatch.setenv("RAY_DEFAULT_PYTHON_VERSION_MATCH_LEVEL", "minor")
    assert version_problems({"ray_version": "2.58.0", "python_version": "3.11.4"}, "2.58.0", "3.11.9") == []


def test_a_cluster_with_the_resources_passes():
    assert node_problems([HEAD, WORKER], spec(worker_resources={"nodeA": 1})) == []


def test_a_worker_request_no_node_satisfies_names_the_request_and_the_nodes():
    [problem] = node_problems([HEAD, WORKER], spec(worker_cpus=8))
    assert "no node has the resources one env worker asks for (CPU=8" in problem
    assert "10.0.0.1: CPU=4" in problem and "10.0.0.2: CPU=2, nodeA=1" in problem
    [problem] = node_problems([HEAD, WORKER], spec(worker_resources={"gpu_big": 1}))
    assert "gpu_big=1" in problem


def test_dead_nodes_do_not_count():
    dead = node("10.0.0.3", {"CPU": 16.0}, alive=False)
    [problem] = node_problems([HEAD, WORKER, dead], spec(worker_cpus=8))
    assert "10.0.0.3" not in problem


def test_docker_sandboxes_need_a_node_that_advertises_docker():
    [problem] = node_problems([HEAD, WORKER], spec(docker_resource="docker"))
    assert "sandbox.provider docker" in problem
    assert "no node advertises the resource 'docker'" in problem
    assert "10.0.0.1: CPU=4" in problem and "10.0.0.2: CPU=2, nodeA=1" in problem
    with_docker = node("10.0.0.4", {"CPU": 2.0, "docker": 1.0})
    assert node_problems([HEAD, WORKER, with_docker], spec(docker_resource="docker")) == []


def test_docker_workers_are_placed_on_docker_nodes():
    assert worker_needs(spec(docker_resource="docker")) == {"CPU": 1, "docker": 0.001}
    assert worker_needs(spec(docker_resource="docker", worker_resources={"docker": 1})) == {
        "CPU": 1,
        "docker": 1,
    }
    assert worker_needs(spec()) == {"CPU": 1}
    # Docker on one node, the asked CPUs on another only: no node can run a worker.
    docker_small = node("10.0.0.4", {"CPU": 1.0, "docker": 1.0})
    [problem] = node_problems([HEAD, WORKER, docker_small], spec(docker_resource="docker", worker_cpus=2))
    assert "CPU=2, docker=0.001" in problem


def trainer(**overrides):
    from shears_cluster.driver import TrainerSpec

    return TrainerSpec(command=["python", "-m", "shears_trainer"], cwd=".", **overrides)


def test_a_trainer_the_cluster_can_take_passes():
    from shears_cluster.driver import trainer_problems

    assert trainer_problems([HEAD, WORKER], trainer(cpus=1, resources={"nodeA": 1})) == []


def test_a_trainer_that_asks_for_a_gpu_no_node_has_is_refused_naming_the_gpu_and_the_nodes():
    from shears_cluster.driver import trainer_problems

    (problem,) = trainer_problems([HEAD, WORKER], trainer(gpus=1))
    assert "no node has the resources the trainer asks for (CPU=1, GPU=1; cluster.trainer)" in problem
    assert "GPU=1: the most one node has is 0" in problem
    assert "CPU" not in problem.split("cluster.trainer):")[1].split(";")[0]  # CPUs are there
    assert "10.0.0.2: CPU=2, nodeA=1" in problem


def test_memory_is_asked_and_named_in_gib():
    from shears_cluster.driver import trainer_needs, trainer_problems

    assert trainer_needs(trainer(memory=2**31)) == {"CPU": 1, "memory": 2**31}
    (problem,) = trainer_problems([HEAD, WORKER], trainer(memory=2**31))
    assert "memory=2 GiB: the most one node has is 0.931323 GiB" in problem


def test_resources_on_different_nodes_are_not_enough():
    from shears_cluster.driver import trainer_problems

    gpu = node("10.0.0.3", {"CPU": 0.0, "GPU": 1.0})
    (problem,) = trainer_problems([HEAD, WORKER, gpu], trainer(gpus=1, resources={"nodeA": 1}))
    assert "each is on some node, but no single node has all of them" in problem


def test_dead_nodes_do_not_take_the_trainer():
    from shears_cluster.driver import trainer_problems

    gpu = node("10.0.0.3", {"CPU": 2.0, "GPU": 1.0}, alive=False)
    assert trainer_problems([HEAD, WORKER, gpu], trainer(gpus=1)) != []
