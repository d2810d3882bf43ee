"""Travel unit converter: the entry point of design/scenario.md (convert:convert)."""

from __future__ import annotations

KM_TO_MI = 1 / 1.609344  # R1: 1 international mile = 1.609344 km
DISTANCES = {"km", "mi"}
TEMPERATURES = {"C", "F"}


def convert(value: float, from_unit: str, to_unit: str) -> float:
    """`value` in `to_unit`; raises ValueError for an unknown unit or a kind mix (R3)."""
    for unit in (from_unit, to_unit):
        if unit not in DISTANCES | TEMPERATURES:  # R3
            raise ValueError(f"unknown unit {unit!r}")
    if (from_unit in DISTANCES) != (to_unit in DISTANCES):  # R3
        raise ValueError(f"cannot convert {from_unit} to {to_unit}")
    if from_unit == to_unit:  # R4
        return float(value)
    if from_unit == "km":  # R1
        return value * KM_TO_MI
    if from_unit == "mi":
        return value / KM_TO_MI
    if from_unit == "C":  # R2
        return value * 9 / 5 + 32
    return (value - 32) * 5 / 9
