"""One module per sub-command, each with ``register(subparsers)``."""
