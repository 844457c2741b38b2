"""One version: the package, its pyproject and the service report the same one."""

from __future__ import annotations

import json
import re

import pytest

import escrow_settlement
from conftest import HERE, REPO


@pytest.mark.skipif(not (REPO / "package.json").is_file(), reason="runs inside the repository (package.json)")
def test_version_is_the_services() -> None:
    service = json.loads((REPO / "package.json").read_text())["version"]
    assert escrow_settlement.__version__ == service
    pyproject = (HERE.parent / "pyproject.toml").read_text()
    m = re.search(r'^version = "([^"]+)"$', pyproject, re.M)
    assert m and m.group(1) == service
