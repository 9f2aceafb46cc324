"""The agent gates: pre-tool hooks of coding agents and the shell model they stand on.

``bash_syntax`` is the one boundary of tree-sitter; ``words`` reads a word as bash would after quote
removal; ``runners`` models the programs that run other programs; ``shell_model`` turns a parsed line
into the programs it can execute (or says it cannot prove them); ``hooks`` admits those programs and
answers in each agent's format.
"""
