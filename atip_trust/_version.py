"""The package version, in its own module so that `--version` imports nothing else."""

__version__ = "0.1.0"
