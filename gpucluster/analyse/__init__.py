"""The analysed plan: what is derived from the physical plan (graph analyses, totals, power budget, BOM, burn-in plan,
the schedulers' view, deviations) and the design rules over it."""
