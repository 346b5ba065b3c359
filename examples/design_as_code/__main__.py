"""Design as code: the cluster described with the typed design models in Python instead of YAML, and
built as the same component tree a design file gives.

Two scalable units of DGX H200, a VAST parallel filesystem, object storage, Slurm and Kubernetes side
by side; the compute fabric is 2:1 oversubscribed at the leaves, which the policy pack reports as
advisory:

    cd examples/design_as_code && pulumi stack init dev && pulumi preview --policy-pack ../../policy-pack
"""

import pulumi

from gpucluster import Design
from gpucluster.components import Cluster
from gpucluster.design.schema import Compute, ComputeFabric, ObjectStorage, ParallelFilesystem, Scheduler

design = Design(
    name="h200-design-as-code",
    description="Two SUs of DGX H200, designed in Python",
    compute=Compute(server="dgx-h200", servers=62),
    compute_fabric=ComputeFabric(oversubscription=2.0),
    parallel_filesystem=ParallelFilesystem(kind="vast", capacity_tb=2000),
    object_storage=ObjectStorage(capacity_tb=5000),
    scheduler=Scheduler(kind="both", kubernetes_servers=16),
)

cluster = Cluster(design.name, design)
for key, value in cluster.outputs.items():
    pulumi.export(key, value)
