"""The ``atip-trust`` command line: one module per subcommand, one catch point in ``main``."""
