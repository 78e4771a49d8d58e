"""Workflows: the core, the searches and the models composed into runs (anonymize, release, sweep)."""
