"""What every manifest spec model builds on: the strict base model (unknown keys are errors)
and the name pattern, shared by specs.py and the eval set's specs (eval_specs.py)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

NAME = r"^[A-Za-z][A-Za-z0-9_-]{0,63}$"

Name = Annotated[str, Field(pattern=NAME, description="Letters, digits, _ and -; starts with a letter.")]
Texts = str | list[str]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, defer_build=True, frozen=True)
