"""Text formats every writer shares: the Jinja environment and the YAML dumper."""
