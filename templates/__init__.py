"""Jinja templates of the artifact writers (installed as gpucluster.templates)."""
