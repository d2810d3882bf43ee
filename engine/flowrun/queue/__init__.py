"""Runs served by workers from a queue: the embedded and Postgres backends, workers, leases."""
