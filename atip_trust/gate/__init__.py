"""Layer 5: the library pipelines every front end calls: verify, admit (and discovery, exec)."""
