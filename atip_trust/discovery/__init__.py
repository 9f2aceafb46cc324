"""Layer 7: which tools an agent may see (RFC §5): the safe scan, the verified probe, discovery and the lock."""
