"""Layer 6: between model providers and the gate: provider tool calls -> argv (``argv.py``), above
gate because every call goes through admission and the call validator."""
