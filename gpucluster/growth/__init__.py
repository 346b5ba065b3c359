"""Phased growth and revisions: the plan lock as written, what changes between two plans, the phase review."""
