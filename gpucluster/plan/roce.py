"""RoCE, the plan's one rule for it: which networks run RDMA over Converged Ethernet, and the QoS profile their
switches run and their hosts mark to. The switch configurations, NCCL's environment, the burn-in's perftest runs and
the monitoring's PFC/ECN alerts all read it here, so a host never marks a class its switches do not keep lossless.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpucluster.catalog.schema import Switch
from gpucluster.plan.model import Plan
from gpucluster.plan.registry import NETWORK_INFO


@dataclass(frozen=True)
class RoceQos:
    """The RoCE QoS profile the switches run and the hosts mark to: Cumulus Linux's ``qos roce`` defaults
    (5.14 "RDMA over Converged Ethernet - RoCE": RoCE on switch priority 3 / traffic class 3 with PFC in lossless
    mode and ECN, CNPs on priority 6 strict) and its DSCP map (DSCP 24-31 -> priority 3, so DSCP 26, AF31)."""

    mode: str = "lossless"
    priority: int = 3
    cnp_priority: int = 6
    dscp: int = 26

    @property
    def traffic_class(self) -> int:
        """The IP ToS byte hosts set (NCCL_IB_TC): DSCP x 4, the low two bits being ECN."""
        return self.dscp * 4


ROCE_QOS = RoceQos()


def roce_networks(plan: Plan) -> list[str]:
    """The networks that run RoCE: those that carry RDMA traffic (the registry's ``rdma``: compute and storage) whose
    switches are Ethernet, in the registry's order."""
    return [
        name
        for name, entry in NETWORK_INFO.items()
        if entry.rdma and (switches := plan.switches(name)) and _technology(plan, switches[0].name) == "ethernet"
    ]


def _technology(plan: Plan, switch: str) -> str:
    part = plan.part(switch)
    assert isinstance(part, Switch)
    return part.technology
