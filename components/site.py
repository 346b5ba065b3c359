"""The data hall: the site's power and cooling, and every rack on its floor."""

from __future__ import annotations

from collections import Counter

import pulumi

from gpucluster.design.schema import Site as SiteSpec
from gpucluster.plan.model import RackPlan
from gpucluster.plan.power.cooling import cooling_capacity_kw

SITE_TYPE = "gpu-cluster:site:Site"
RACK_TYPE = "gpu-cluster:site:Rack"


class Rack(pulumi.ComponentResource):
    """One rack: where it stands (row and position from 0, floor coordinates), what it holds, its load."""

    def __init__(self, name: str, rack: RackPlan, opts: pulumi.ResourceOptions | None = None) -> None:
        power_max_kw = round(rack.power_max_w / 1000, 3)
        power_typical_kw = round(rack.power_typical_w / 1000, 3)
        props = {
            "rack": rack.name,
            "model": rack.part,
            "purpose": rack.purpose,
            "scalable_unit": rack.su,
            "row": rack.row,
            "position": rack.position,
            "x_mm": rack.x_mm,
            "y_mm": rack.y_mm,
            "height_u": rack.height_u,
            "devices": list(rack.devices),
            "pdus": list(rack.pdus),
            "power_max_kw": power_max_kw,
            "power_typical_kw": power_typical_kw,
        }
        super().__init__(RACK_TYPE, name, props, opts)
        self.register_outputs(
            {"devices": len(rack.devices), "power_max_kw": power_max_kw, "power_typical_kw": power_typical_kw}
        )


class Site(pulumi.ComponentResource):
    """The site: rack model, power budget and feed, cooling, and its racks as children."""

    def __init__(
        self,
        name: str,
        spec: SiteSpec,
        racks: list[RackPlan],
        pdu_model: str,
        prefix: str = "",
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        it_power_max_kw = round(sum(r.power_max_w for r in racks) / 1000, 3)
        it_power_typical_kw = round(sum(r.power_typical_w for r in racks) / 1000, 3)
        purposes = Counter(rack.purpose for rack in racks)
        feed = spec.power_feed
        props = {
            "site": spec.name,
            "rack_model": spec.rack,
            "rack_power_budget_kw": spec.rack_power_budget_kw,
            "cooling": spec.cooling,
            "cooling_capacity_kw": cooling_capacity_kw(spec),
            "power_feed": {
                "voltage_v": feed.voltage_v,
                "phases": feed.phases,
                "breaker_a": feed.breaker_a,
                "redundancy": feed.redundancy,
            },
            "pdu_model": pdu_model,
            "pue": spec.pue,
            "rows": len({r.row for r in racks}),
            "racks": len(racks),
            "racks_by_purpose": dict(sorted(purposes.items())),
            "it_power_max_kw": it_power_max_kw,
            "it_power_typical_kw": it_power_typical_kw,
        }
        super().__init__(SITE_TYPE, name, props, opts)
        child = pulumi.ResourceOptions(parent=self)
        for rack in racks:
            Rack(prefix + rack.name, rack, child)
        self.register_outputs(
            {"racks": len(racks), "it_power_max_kw": it_power_max_kw, "it_power_typical_kw": it_power_typical_kw}
        )
