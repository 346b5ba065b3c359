"""The Pulumi program: plan the design named in stack config and build its component tree.

pulumi config set design designs/<name>.yaml     # default designs/superpod-h200-4su.yaml
pulumi config set granularity rack               # auto (default) / device / rack
pulumi preview --diff --policy-pack policy-pack
"""

from pathlib import Path

import pulumi

from gpucluster import DesignError, load_design, plan_design
from gpucluster.components import GRANULARITIES, Cluster

DEFAULT_DESIGN = "designs/superpod-h200-4su.yaml"

config = pulumi.Config()
design_path = Path(__file__).resolve().parent / (config.get("design") or DEFAULT_DESIGN)
granularity = config.get("granularity") or "auto"
if granularity not in GRANULARITIES:
    raise pulumi.RunError(f"config granularity: {granularity!r} is not one of {', '.join(GRANULARITIES)}")
try:
    plan = plan_design(load_design(design_path))
except DesignError as error:
    raise pulumi.RunError(f"design {design_path} is not valid:\n{error}") from None

cluster = Cluster(plan.name, plan, granularity)  # type: ignore[arg-type]
for key, value in cluster.outputs.items():
    pulumi.export(key, value)
