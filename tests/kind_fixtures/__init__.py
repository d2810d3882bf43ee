"""Kinds made only for tests: each module is a whole kind, registered by a test with one line."""
