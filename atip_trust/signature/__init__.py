"""Layer 2: trust roots, bundles, DSSE, signer identities, keyless (the only sigstore importer), Rekor, Fulcio, keys."""
