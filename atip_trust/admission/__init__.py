"""Layer 5: may this artifact (or one of its commands) run? Verification, admission and what they stand on.

``verify`` checks an artifact against flags or policy (the CI job); ``admit`` verifies and decides allow /
ask / deny for one command (the enterprise admission check); ``held`` keeps an admitted tool open for a
runtime's call-time decisions; ``batch`` verifies many on both cores. Beneath them: ``verdict_key`` (what a
cached verdict is keyed by), ``metadata_trust`` and ``shims`` (how far declared metadata may be trusted),
``vsa`` (summaries other verifiers signed), ``command_decision``, ``interactive`` and ``policy_test``.
"""
