"""The Grafana dashboard of the monitoring artifact: per-GPU temperature, power, utilisation and errors,
filtered by SU, rack, rail and node, built with Grafana's foundation SDK (whose types are generated from
Grafana's dashboard schema) so that the JSON has the structure Grafana's dashboard model expects."""

from __future__ import annotations

import json

from grafana_foundation_sdk.builders import dashboard, prometheus, stat, timeseries
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models.dashboard import (
    DataSourceRef,
    GridPos,
    Threshold,
    ThresholdsMode,
    VariableRefresh,
    VariableSort,
)

from gpucluster.plan.model import Plan

_DATASOURCE = DataSourceRef(type_val="prometheus", uid="${datasource}")
_SELECTOR = 'su=~"$su", rack=~"$rack", rail=~"$rail", node=~"$node"'
_LEGEND = "{{node}} GPU {{gpu}} (rack {{rack}}, rail {{rail}})"
_WIDTH = 24  # Grafana's grid is 24 columns wide
_HEIGHT = 8


def dashboard_json(plan: Plan, temperature_alert_c: float) -> str:
    """The dashboard as Grafana's JSON model (import it, or provision it from a file); the temperature
    panel draws the alert threshold."""
    gpus = len(plan.gpu_nodes()) * plan.settings.gpus_per_server  # the totals' count, from the physical plan alone
    board = (
        dashboard.Dashboard(f"{plan.name}: GPUs by SU, rack and rail")
        .uid(_uid(plan.name))
        .description(f"DCGM exporter and node exporter metrics of {plan.name}, labelled from its plan by gpucluster.")
        .tags(["gpu-cluster", "dcgm", plan.name])
        .timezone("browser")
        .time("now-6h", "now")
        .refresh("1m")
        .with_variable(dashboard.DatasourceVariable("datasource").label("Prometheus").type("prometheus"))
    )
    board = board.with_variable(_variable("su", "SU", "DCGM_FI_DEV_GPU_TEMP"))
    board = board.with_variable(_variable("rack", "Rack", 'DCGM_FI_DEV_GPU_TEMP{su=~"$su"}'))
    board = board.with_variable(_variable("rail", "Rail", "DCGM_FI_DEV_GPU_TEMP"))
    board = board.with_variable(_variable("node", "Node", 'DCGM_FI_DEV_GPU_TEMP{su=~"$su", rack=~"$rack"}'))

    layout = _Layout()
    board = board.with_row(dashboard.Row("Overview by scalable unit and rack"))
    layout.row()
    board = board.with_panel(
        _stat(
            "GPUs reporting",
            f"count(DCGM_FI_DEV_GPU_TEMP{{{_SELECTOR}}})",
            f"GPUs whose DCGM exporter answers; the plan has {gpus} in all",
            layout.place(6),
        )
    )
    board = board.with_panel(
        _stat(
            "GPUs with an XID error",
            f"count(DCGM_FI_DEV_XID_ERRORS{{{_SELECTOR}}} != 0) or vector(0)",
            "GPUs whose last XID error is not 0 (alert GpuXidError)",
            layout.place(6),
            red_from=1,
        )
    )
    board = board.with_panel(
        _series("Mean GPU utilisation per SU", 'su:dcgm_gpu_utilization:avg{su=~"$su"}', "SU {{su}}", "percent",
                layout.place(6))
    )  # fmt: skip
    board = board.with_panel(
        _series("GPU power per rack", 'rack:dcgm_gpu_power_watts:sum{rack=~"$rack"}', "rack {{rack}}", "watt",
                layout.place(6))
    )  # fmt: skip

    board = board.with_row(dashboard.Row("Per GPU"))
    layout.row()
    temperature = _series("GPU temperature", f"DCGM_FI_DEV_GPU_TEMP{{{_SELECTOR}}}", _LEGEND, "celsius",
                          layout.place(12))  # fmt: skip
    temperature = temperature.thresholds(_thresholds(temperature_alert_c))
    board = board.with_panel(temperature)
    board = board.with_panel(
        _series("GPU power draw", f"DCGM_FI_DEV_POWER_USAGE{{{_SELECTOR}}}", _LEGEND, "watt", layout.place(12))
    )
    board = board.with_panel(
        _series("GPU utilisation", f"DCGM_FI_DEV_GPU_UTIL{{{_SELECTOR}}}", _LEGEND, "percent", layout.place(12))
    )
    board = board.with_panel(
        _series("GPU memory temperature", f"DCGM_FI_DEV_MEMORY_TEMP{{{_SELECTOR}}}", _LEGEND, "celsius",
                layout.place(12))
    )  # fmt: skip

    board = board.with_row(dashboard.Row("Errors"))
    layout.row()
    errors = [
        ("XID errors (last XID per GPU)", f"DCGM_FI_DEV_XID_ERRORS{{{_SELECTOR}}} != 0", "none"),
        ("Uncorrectable ECC errors (10 min)", f"increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{{{_SELECTOR}}}[10m]) > 0",
         "none"),
        ("Row remap pending or failed",
         f"DCGM_FI_DEV_ROW_REMAP_PENDING{{{_SELECTOR}}} > 0 or DCGM_FI_DEV_ROW_REMAP_FAILURE{{{_SELECTOR}}} > 0",
         "none"),
        ("NVLink errors (10 min)",
         f"increase(DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL{{{_SELECTOR}}}[10m])"
         f" + increase(DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL{{{_SELECTOR}}}[10m])"
         f" + increase(DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL{{{_SELECTOR}}}[10m])"
         f" + increase(DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL{{{_SELECTOR}}}[10m]) > 0", "none"),
        ("Thermal throttling (share of time)", f"rate(DCGM_FI_DEV_THERMAL_VIOLATION{{{_SELECTOR}}}[5m]) > 0", "none"),
    ]  # fmt: skip
    for title, expr, unit in errors:
        board = board.with_panel(_series(title, expr, _LEGEND, unit, layout.place(8)))
    board = board.with_panel(
        _series(
            "InfiniBand port receive errors (10 min)",
            f"increase(node_infiniband_port_errors_received_total{{{_SELECTOR}}}[10m]) > 0",
            "{{node}} {{device}} (rack {{rack}}, rail {{rail}}, leaf {{leaf}})",
            "none",
            layout.place(8),
        )
    )
    document = json.loads(json.dumps(board.build(), cls=JSONEncoder))
    for number, panel in enumerate(document["panels"], 1):
        panel["id"] = number
    return json.dumps(document, indent=2, sort_keys=True) + "\n"


def _uid(name: str) -> str:
    """Grafana uids are 8-40 characters; a design name keeps its dashboard's uid stable."""
    return f"gpucluster-{name}"[:40]


def _variable(name: str, label: str, metric: str) -> dashboard.QueryVariable:
    return (
        dashboard.QueryVariable(name)
        .label(label)
        .datasource(_DATASOURCE)
        .query(f"label_values({metric}, {name})")
        .refresh(VariableRefresh.ON_DASHBOARD_LOAD)
        .sort(VariableSort.NATURAL_ASC)
        .multi(True)
        .include_all(True)
        .all_value(".*")
    )


class _Layout:
    """Places panels left to right on Grafana's 24-column grid, a new line when a row is full."""

    def __init__(self) -> None:
        self.x = self.y = 0

    def row(self) -> None:
        if self.x:
            self.x, self.y = 0, self.y + _HEIGHT
        self.y += 1  # the row header

    def place(self, width: int) -> GridPos:
        if self.x + width > _WIDTH:
            self.x, self.y = 0, self.y + _HEIGHT
        position = GridPos(h=_HEIGHT, w=width, x=self.x, y=self.y)
        self.x += width
        return position


def _query(expr: str, legend: str) -> prometheus.Dataquery:
    return prometheus.Dataquery().expr(expr).legend_format(legend).ref_id("A").datasource(_DATASOURCE)


def _series(title: str, expr: str, legend: str, unit: str, position: GridPos) -> timeseries.Panel:
    return (
        timeseries.Panel()
        .title(title)
        .datasource(_DATASOURCE)
        .with_target(_query(expr, legend))
        .unit(unit)
        .grid_pos(position)
    )


def _stat(title: str, expr: str, description: str, position: GridPos, red_from: float | None = None) -> stat.Panel:
    panel = (
        stat.Panel()
        .title(title)
        .description(description)
        .datasource(_DATASOURCE)
        .with_target(_query(expr, ""))
        .grid_pos(position)
    )
    return panel.thresholds(_thresholds(red_from)) if red_from is not None else panel


def _thresholds(red_from: float) -> dashboard.ThresholdsConfig:
    return (
        dashboard.ThresholdsConfig()
        .mode(ThresholdsMode.ABSOLUTE)
        .steps([Threshold(value=None, color="green"), Threshold(value=red_from, color="red")])
    )
