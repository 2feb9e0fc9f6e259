"""Run configuration: ``RunConfig``, the run flags of the CLI, filling dataclasses from strings and YAML, argparse value types."""
