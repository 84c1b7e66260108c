"""Input layer: parse and validate user input (TOML files, Python arguments) without executing it."""
