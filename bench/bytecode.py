"""flowrun's bytecode compiled before a bench starts its processes, as `pip install` does. An
editable install in an environment that sets PYTHONDONTWRITEBYTECODE (this machine's) leaves no
bytecode behind, and every fresh process would compile flowrun from source: about a quarter of
a second of CPU that no installed flowrun pays."""

from __future__ import annotations

import compileall
from pathlib import Path


def compile_flowrun() -> None:
    import flowrun

    compileall.compile_dir(Path(flowrun.__file__).parent, quiet=1)
