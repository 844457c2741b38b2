"""Shared paths for the tests: the vectors this package's tests read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
VECTORS = HERE / "vectors"
REPO = HERE.parent.parent
REPO_VECTORS = REPO / "test" / "vectors"


def load(name: str) -> Any:
    """A JSON file of python/tests/vectors."""
    return json.loads((VECTORS / name).read_text(encoding="utf-8"))
