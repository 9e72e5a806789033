"""Reads every batch the trajectory API has ready through the reference trainer's own client and
batch code (trainers/shears_trainer: TrajectoryApi, sequences_from_groups, collate), as a training
step would, and prints one JSON line with what it read. Exits non-zero if any batch cannot be read.
Usage: python read_batches.py URL   (with trainers/ on PYTHONPATH)
"""

import json
import sys

from shears_trainer.api import TrajectoryApi
from shears_trainer.batch import collate, sequences_from_groups

api = TrajectoryApi(sys.argv[1], timeout=30)
seen = {"batches": 0, "sequences": 0, "trained_tokens": 0, "scores": []}
while True:
    batch = api.batch()
    if not batch:
        break
    sequences = sequences_from_groups(batch)
    tensors = collate(sequences)
    seen["batches"] += 1
    seen["sequences"] += len(sequences)
    seen["trained_tokens"] += tensors.trained_tokens
    seen["scores"].extend(round(float(score), 6) for score in tensors.scores)
print(json.dumps(seen))
