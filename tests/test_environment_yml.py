"""environment.yml (conda) and pyproject.toml (pip) must describe the same environment."""

import pathlib
import re
import tomllib

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _normalise(requirement: str) -> str:
    name, spec = re.match(r"^([A-Za-z0-9_.\-]+)\s*(.*)$", requirement.strip()).groups()
    return re.sub(r"[-_.]+", "-", name).lower() + spec.replace(" ", "")


def _pyproject_requirements() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = project["dependencies"] + [r for extra in project["optional-dependencies"].values() for r in extra]
    return {_normalise(r) for r in requirements}


def _environment_yml():
    lines = (ROOT / "environment.yml").read_text().splitlines()
    conda, pip, in_pip = [], [], False
    for line in lines:
        stripped = line.split("#")[0].strip()
        if stripped == "- pip:":
            in_pip = True
        elif stripped.startswith("- ") and in_pip and line.startswith(" " * 6):
            pip.append(stripped[2:])
        elif stripped.startswith("- "):
            in_pip = False
            conda.append(stripped[2:])
    return conda, pip


def test_same_packages_and_pins_as_pyproject():
    _, pip = _environment_yml()
    packages = {_normalise(r) for r in pip if not r.startswith("-")}
    assert packages == _pyproject_requirements()


def test_python_311_and_the_project_itself():
    conda, pip = _environment_yml()
    assert "python=3.11" in conda
    assert "-e ." in pip
    assert "--find-links .wheelhouse" in pip  # gym 0.20.0 only installs from the repaired local wheel
    assert ">=3.11,<3.12" in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]


def test_the_pins_that_matter():
    requirements = _pyproject_requirements()
    for pin in ("torch==2.13.0", "gym==0.20.0", "ma-gym==0.0.14"):
        assert pin in requirements
