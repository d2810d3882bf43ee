"""CSV files a user gives (a batch's items, an eval set's dataset): cells of any length, as a
column of whole documents has them (the csv module's default refuses a cell over 128 KiB, which
had ended the command as a flowrun bug)."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from typing import TextIO

BIG_CELL = 1 << 30  # characters in one cell (the file's own size bounds it first)


def csv_lines(f: TextIO) -> Iterator[tuple[int, list[str]]]:
    """(line number, cells) of each row of `f` (opened with newline="")."""
    csv.field_size_limit(max(csv.field_size_limit(), BIG_CELL))
    reader = csv.reader(f)
    for cells in reader:
        yield reader.line_num, cells
