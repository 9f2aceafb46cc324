"""Layer 1: the nouns every layer exchanges: Digest, Artifact, TrustLevel/Check/TrustReport, Decision/Reason, ATIP metadata."""
