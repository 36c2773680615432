"""Entry points: the Python API, the HTTP service, batch file scoring, the CLI and its commands."""
