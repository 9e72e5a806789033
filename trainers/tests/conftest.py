"""Fixtures: the real trajectory API (`@shears/grpo`'s server in a Node process) and a toy model."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def shears_api(tmp_path_factory):
    """Starts shears' trajectory API (the built server-main.js, else its source through tsx)."""
    yield from start_shears_api(tmp_path_factory.mktemp("api") / "queue.sqlite")


@pytest.fixture
def fresh_shears_api(tmp_path):
    """A trajectory API of the test's own (an empty queue, no trainer registered yet)."""
    yield from start_shears_api(tmp_path / "queue.sqlite")


def start_shears_api(database: Path):
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is required: these tests run the real trajectory API")
    built = REPO / "packages/grpo/dist/server-main.js"
    if built.exists():
        command = [node, str(built)]
    else:
        command = [
            node,
            "--conditions=@shears/source",
            "--import",
            "tsx",
            str(REPO / "packages/grpo/src/server-main.ts"),
        ]
    env = {
        **os.environ,
        "SHEARS_API_PORT": "0",
        "SHEARS_API_DB": str(database),
        "SHEARS_API_SYNCHRONOUS": "normal",
    }
    process = subprocess.Popen(
        command, cwd=REPO / "packages/grpo", env=env, stdout=subprocess.PIPE, text=True
    )
    line = process.stdout.readline()
    if not line:
        process.kill()
        pytest.fail(f"the trajectory API did not start: {' '.join(command)}")
    url = json.loads(line)["url"]
    yield url
    process.terminate()
    process.wait(timeout=10)


@pytest.fixture(scope="session")
def toy_model(tmp_path_factory):
    from shears_trainer.toy import make_toy_model

    folder = tmp_path_factory.mktemp("toy") / "model"
    make_toy_model(folder, seed=0)
    return folder
