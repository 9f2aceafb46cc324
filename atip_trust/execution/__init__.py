"""Layer 6: run exactly the bytes that were admitted.

``exec`` replaces this process with the verified descriptor (``atip-trust exec``); ``child`` runs it as a
bounded child process (probes, the call loop); ``env`` is the environment both give it.
"""
