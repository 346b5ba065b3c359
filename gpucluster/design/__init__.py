"""The design file: its pydantic schema (schema.py) and the loader with located errors (load.py)."""
