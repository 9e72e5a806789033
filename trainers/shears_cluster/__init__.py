"""shears on a Ray cluster: the driver `shears serve --cluster` starts (`python -m shears_cluster SPEC`)."""

__version__ = "0.1.0"
