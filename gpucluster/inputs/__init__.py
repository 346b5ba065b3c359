"""Reading the inputs: YAML that remembers where each value stands, the bounds every input is held to, the
price list."""
