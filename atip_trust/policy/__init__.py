"""Policy engine (layer 4): the only source of trust anchors, and decisions with reasons.

Load once, decide many times::

    from atip_trust import decide, load_policy

    policy = load_policy("policies/default.json")   # under the machine's org policy, as admit applies it
    decision = decide(policy, report, tool_name="gh", command="pr view 1", interactive=False)

Modules: ``model`` (typed policy), ``load`` (schema-checked layers), ``rules`` (command rules),
``compose`` (org + local + flags), ``anchors`` (the one anchor set), ``constraints`` (anchors handed to verification), ``effects``,
``decide``, ``explain``.
"""
