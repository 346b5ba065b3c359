"""Typed Pulumi components of a GPU training cluster (installed as gpucluster.components).

``Cluster(name, design)`` plans a design and builds the whole tree under one root; the stack
outputs come from :func:`stack_outputs`.
"""

from .cluster import CLUSTER_TYPE, DEVICE_GRANULARITY_MAX_SERVERS, FACTS_PROP, GRANULARITIES, Cluster, Granularity
from .compute import GpuServer, ScalableUnit
from .network import ComputeFabric, FabricManager, ManagementNetwork, StorageNetwork, Switch, SwitchTier
from .outputs import stack_outputs
from .scheduler import HeadNode, Scheduler
from .site import Rack, Site
from .storage import ObjectStorage, ParallelFilesystem, StorageBlock

__all__ = [
    "CLUSTER_TYPE",
    "DEVICE_GRANULARITY_MAX_SERVERS",
    "FACTS_PROP",
    "GRANULARITIES",
    "Cluster",
    "ComputeFabric",
    "FabricManager",
    "GpuServer",
    "Granularity",
    "HeadNode",
    "ManagementNetwork",
    "ObjectStorage",
    "ParallelFilesystem",
    "Rack",
    "ScalableUnit",
    "Scheduler",
    "Site",
    "StorageBlock",
    "StorageNetwork",
    "Switch",
    "SwitchTier",
    "stack_outputs",
]
