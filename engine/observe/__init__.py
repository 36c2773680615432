"""Observability: Prometheus metrics and the health endpoints."""
