"""Layer 8: the agent gates: pre-tool hooks of coding agents, the shell model they stand on, and call checks.

``bash_syntax`` is the one boundary of tree-sitter; ``words`` reads a word as bash would after quote
removal; ``runners`` models the programs that run other programs; ``shell_model`` turns a parsed line
into the programs it can execute (or says it cannot prove them); ``hooks`` admits those programs and
answers in each agent's format; ``calls`` decides whether one tool call may run (RFC §11.2).
"""
