"""Typed Pulumi components of a GPU training cluster (installed as gpucluster.components)."""
