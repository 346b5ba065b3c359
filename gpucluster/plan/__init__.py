"""The physical plan: devices, racks, links, cables and graphs (plan/build.py builds it from a design).

Its model (model.py) and vocabularies (registry.py) are the contract every later stage and view reads.
This package imports nothing above it: the derived models, the design rules and the views import it.
"""
