"""The Pulumi program: plan the design named in stack config and build its component tree.

pulumi config set design designs/<name>.yaml     # default designs/superpod-h200-4su.yaml
pulumi config set granularity rack               # auto (default) / device / rack
pulumi config set lock designs/<name>.lock.json  # default: the design's lock beside it, when there is one
pulumi preview --diff --policy-pack policy-pack

Under the plan lock `gpucluster build` writes, a revised design keeps every built device's rack, U and name, so
`pulumi preview --diff` of a phase of growth creates the new resources and replaces none.
"""

from pathlib import Path

import pulumi

from gpucluster import DesignError, load_design, plan_design
from gpucluster.components import GRANULARITIES, Cluster
from gpucluster.plan.lock import default_lock_path, read_design_lock

DEFAULT_DESIGN = "designs/superpod-h200-4su.yaml"

config = pulumi.Config()
design_path = Path(__file__).resolve().parent / (config.get("design") or DEFAULT_DESIGN)
granularity = config.get("granularity") or "auto"
if granularity not in GRANULARITIES:
    raise pulumi.RunError(f"config granularity: {granularity!r} is not one of {', '.join(GRANULARITIES)}")
lock_setting = config.get("lock")
lock_path = Path(__file__).resolve().parent / lock_setting if lock_setting else default_lock_path(design_path)
try:
    loaded = load_design(design_path)
    lock = read_design_lock(lock_path, loaded) if lock_setting or lock_path.exists() else None
    plan = plan_design(loaded, lock=lock)
except DesignError as error:
    raise pulumi.RunError(f"design {design_path} is not valid:\n{error}") from None

cluster = Cluster(plan.name, plan, granularity)  # type: ignore[arg-type]
for key, value in cluster.outputs.items():
    pulumi.export(key, value)
