"""Fixtures every integration test may ask for by name (the stack's own are in tests/conftest.py)."""

from tests.support.worker_support import wenv  # noqa: F401  (a fixture: pytest finds it here)
