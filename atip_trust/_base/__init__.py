"""Layer 0: bytes, files, strict JSON, canonical digests, the one jsonschema boundary, shipped data."""
