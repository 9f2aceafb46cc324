"""The ``atip-trust`` command line: one module per subcommand, named by ``main``; one catch point in ``common``."""
