"""The parts catalog: hardware facts with their sources."""
