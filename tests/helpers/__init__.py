"""Shared test helpers: stream DSL, samples, servers, strategies."""
