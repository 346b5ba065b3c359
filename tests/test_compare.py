"""`gpucluster compare`: alternatives side by side, each planned afresh (no plan lock), as one table and one page of
figures with each design's value and its delta against the first."""

from __future__ import annotations

import pytest
from conftest import planned

from gpucluster.analyse.bom import bom_for
from gpucluster.analyse.budget import kept_power_budget
from gpucluster.growth.compare import NO_PRICE_LIST, Alternative, Comparison, Row, compare_alternatives
from gpucluster.training import analyse_checkpoints


def alternative(name: str) -> Alternative:
    loaded, plan = planned(name)
    return Alternative(
        str(loaded.path), plan, bom_for(plan, loaded), kept_power_budget(plan), analyse_checkpoints(plan)
    )


@pytest.fixture(scope="module")
def compared() -> Comparison:
    return compare_alternatives([alternative("superpod-h100-1su"), alternative("lab-4-servers")])


def rows(comparison: Comparison) -> dict[tuple[str, str], Row]:
    return {(row.section, row.name): row for row in comparison.rows}


def test_each_figure_is_the_plans_own_with_its_delta_against_the_first(compared: Comparison) -> None:
    (_l1, h100), (_l2, lab) = planned("superpod-h100-1su"), planned("lab-4-servers")
    by_name = rows(compared)
    gpus = by_name[("Systems and GPUs", "GPUs")]
    assert gpus.values == (float(h100.totals.gpus), float(lab.totals.gpus))
    assert gpus.deltas == (None, float(lab.totals.gpus - h100.totals.gpus)) and gpus.differs
    peak = by_name[("Power and cooling", "IT power, peak")]
    assert peak.values == (h100.totals.it_power_max_kw, lab.totals.it_power_max_kw) and peak.unit == "kW"
    bisection = by_name[("Bisection and oversubscription", "Compute fabric: bisection bandwidth")]
    assert bisection.values[0] == h100.analysis_of("compute")["bisection_bandwidth_gbps"] / 1000
    goodput = by_name[("Failure analysis", "Goodput")]
    assert goodput.values[0] == 100 * analyse_checkpoints(h100).goodput
    assert by_name[("Systems and GPUs", "GPU server")].deltas[1] == "differs"
    assert by_name[("Floor space", "Racks")].values == (float(h100.totals.racks), float(lab.totals.racks))


def test_switches_per_model_are_the_boms_lines_and_zero_where_a_design_has_none(compared: Comparison) -> None:
    boms = [alternative(name).bom for name in ("superpod-h100-1su", "lab-4-servers")]
    per_model = {row.name: row.values for row in compared.rows if row.section == "Switches" and row.name.endswith(")")}
    for name, values in per_model.items():
        for bom, value in zip(boms, values, strict=True):
            assert value == sum(
                line.quantity for line in bom.lines if line.kind == "switch" and name.endswith(f"({line.item})")
            )
    assert per_model["Quantum-2 QM9700 (MQM9700-NS2F) (qm9700)"][0] == 18.0  # 12 compute, 6 storage: the 1-SU RA
    only_one = [values for values in per_model.values() if 0.0 in values]
    assert only_one, "the lab and the RA share every switch model"


def test_designs_without_a_price_list_say_so(compared: Comparison) -> None:
    row = rows(compared)[("Bill of materials", "Price list")]
    assert row.values == (NO_PRICE_LIST, NO_PRICE_LIST) and not row.differs
    assert not any(r.name == "Price" for r in compared.rows)


def test_one_design_is_no_comparison() -> None:
    with pytest.raises(ValueError, match="two or more"):
        compare_alternatives([alternative("lab-4-servers")])
