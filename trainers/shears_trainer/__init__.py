"""shears' reference GRPO trainer: batches from the trajectory API, a GRPO loss, a colocated policy server."""

from .batch import BatchError, TrainBatch, batch_from_groups
from .loss import grpo_loss, token_weights

__all__ = ["BatchError", "TrainBatch", "batch_from_groups", "grpo_loss", "token_weights"]
__version__ = "0.1.0"
