"""The Grafana dashboard: per-GPU temperature, power, utilisation and errors by SU, rack, rail and node, built with
Grafana's foundation SDK, whose types are generated from Grafana's dashboard schema."""

from __future__ import annotations

import json
from collections.abc import Sequence

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
    overview: list[stat.Panel | timeseries.Panel] = [
        _stat(
            "GPUs reporting",
            f"count(DCGM_FI_DEV_GPU_TEMP{{{_SELECTOR}}})",
            f"GPUs whose DCGM exporter answers; the plan has {gpus} in all",
        ),
        _stat(
            "GPUs with an XID error",
            f"count(DCGM_FI_DEV_XID_ERRORS{{{_SELECTOR}}} != 0) or vector(0)",
            "GPUs whose last XID error is not 0 (alert GpuXidError)",
        ).thresholds(_thresholds(1)),
        _series("Mean GPU utilisation per SU", 'su:dcgm_gpu_utilization:avg{su=~"$su"}', "SU {{su}}", "percent"),
        _series("GPU power per rack", 'rack:dcgm_gpu_power_watts:sum{rack=~"$rack"}', "rack {{rack}}", "watt"),
    ]
    per_gpu = [
        _series("GPU temperature", f"DCGM_FI_DEV_GPU_TEMP{{{_SELECTOR}}}", _LEGEND, "celsius").thresholds(
            _thresholds(temperature_alert_c)
        ),
        _series("GPU power draw", f"DCGM_FI_DEV_POWER_USAGE{{{_SELECTOR}}}", _LEGEND, "watt"),
        _series("GPU utilisation", f"DCGM_FI_DEV_GPU_UTIL{{{_SELECTOR}}}", _LEGEND, "percent"),
        _series("GPU memory temperature", f"DCGM_FI_DEV_MEMORY_TEMP{{{_SELECTOR}}}", _LEGEND, "celsius"),
    ]
    nvlink = ("CRC_FLIT_ERROR", "CRC_DATA_ERROR", "REPLAY_ERROR", "RECOVERY_ERROR")
    errors = [
        ("XID errors (last XID per GPU)", f"DCGM_FI_DEV_XID_ERRORS{{{_SELECTOR}}} != 0"),
        ("Uncorrectable ECC errors (10 min)", f"increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{{{_SELECTOR}}}[10m]) > 0"),
        (
            "Row remap pending or failed",
            f"DCGM_FI_DEV_ROW_REMAP_PENDING{{{_SELECTOR}}} > 0 or DCGM_FI_DEV_ROW_REMAP_FAILURE{{{_SELECTOR}}} > 0",
        ),
        (
            "NVLink errors (10 min)",
            " + ".join(f"increase(DCGM_FI_DEV_NVLINK_{n}_COUNT_TOTAL{{{_SELECTOR}}}[10m])" for n in nvlink) + " > 0",
        ),
        ("Thermal throttling (share of time)", f"rate(DCGM_FI_DEV_THERMAL_VIOLATION{{{_SELECTOR}}}[5m]) > 0"),
    ]
    error_panels = [_series(title, expr, _LEGEND, "none") for title, expr in errors]
    error_panels.append(
        _series(
            "InfiniBand port receive errors (10 min)",
            f"increase(node_infiniband_port_errors_received_total{{{_SELECTOR}}}[10m]) > 0",
            "{{node}} {{device}} (rack {{rack}}, rail {{rail}}, leaf {{leaf}})",
            "none",
        )
    )
    y = 0
    rows: tuple[tuple[str, int, Sequence[stat.Panel | timeseries.Panel]], ...] = (
        ("Overview by scalable unit and rack", 6, overview),
        ("Per GPU", 12, per_gpu),
        ("Errors", 8, error_panels),
    )
    for title, width, panels in rows:  # each row's panels left to right on Grafana's grid, under the row's header
        board = board.with_row(dashboard.Row(title))
        y += 1
        for i, panel in enumerate(panels):
            x, line = (i * width) % _WIDTH, i * width // _WIDTH
            board = board.with_panel(panel.grid_pos(GridPos(h=_HEIGHT, w=width, x=x, y=y + line * _HEIGHT)))
        y += -(-len(panels) * width // _WIDTH) * _HEIGHT
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


def _query(expr: str, legend: str) -> prometheus.Dataquery:
    return prometheus.Dataquery().expr(expr).legend_format(legend).ref_id("A").datasource(_DATASOURCE)


def _series(title: str, expr: str, legend: str, unit: str) -> timeseries.Panel:
    return timeseries.Panel().title(title).datasource(_DATASOURCE).with_target(_query(expr, legend)).unit(unit)


def _stat(title: str, expr: str, description: str) -> stat.Panel:
    return stat.Panel().title(title).description(description).datasource(_DATASOURCE).with_target(_query(expr, ""))


def _thresholds(red_from: float) -> dashboard.ThresholdsConfig:
    return (
        dashboard.ThresholdsConfig()
        .mode(ThresholdsMode.ABSOLUTE)
        .steps([Threshold(value=None, color="green"), Threshold(value=red_from, color="red")])
    )
