"""Layer 2: in-toto statements, SLSA facts, the trusted-builder map, provenance requirements."""
