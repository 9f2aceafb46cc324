"""Layer 3: the ordered evaluation of one artifact over loaded evidence, producing a ``TrustReport``.

``inputs`` holds what one evaluation is given (``Evidence``, ``Constraints``) without loading the
evaluation; ``evaluate`` runs it.
"""
