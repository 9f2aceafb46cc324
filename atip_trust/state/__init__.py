"""Layer 3: per-user state on disk: platformdirs paths, the audit log, caches."""
