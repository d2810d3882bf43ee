"""Each manifest kind's JSON Schema from its specs, and data checked against it or a model at its line."""
