"""How the course installs: pyproject.toml's ranges, the tested versions in constraints/, and the conda route.

`make setup` installs pyproject.toml's requirements with `-c constraints/python3.X.txt`, the versions CI tested on
that Python; these tests keep the three in step, so a constraints file never pins something pyproject refuses, never
leaves a requirement open, and never pins torch (a learner's or Colab's torch in range is kept).
"""

import pathlib
import re
import tomllib

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

ROOT = pathlib.Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
SUPPORTED = ("3.11", "3.12", "3.13")
TESTED_TORCH = ("2.11.0", "2.13.0")  # Colab's (the Colab-like run, tools/colab_like.py) and CI's
NEVER_PINNED = re.compile(r"^(torch|triton|nvidia-.*|cuda-.*)$")


def constraints(python: str) -> dict[str, str]:
    """{canonical name: version} from constraints/python<python>.txt; every line must be NAME==VERSION or a comment."""
    pins = {}
    for line in (ROOT / "constraints" / f"python{python}.txt").read_text().splitlines():
        if line.startswith("#"):
            continue
        match = re.fullmatch(r"([A-Za-z0-9_.\-]+)==([^\s;]+)", line)
        assert match, f"python{python}.txt: {line!r} is not NAME==VERSION"
        pins[canonicalize_name(match.group(1))] = match.group(2)
    return pins


def requirements(python: str, extras: tuple[str, ...] = ("dev",)) -> list[Requirement]:
    """pyproject's requirements that apply on that Python (markers evaluated), with the given extras."""
    environment = default_environment() | {"python_version": python, "python_full_version": f"{python}.0"}
    listed = PROJECT["dependencies"] + [r for extra in extras for r in PROJECT["optional-dependencies"][extra]]
    return [r for r in map(Requirement, listed) if r.marker is None or r.marker.evaluate(environment)]


def test_every_supported_python_and_no_other_has_a_constraints_file():
    files = sorted(p.name for p in (ROOT / "constraints").glob("python*.txt"))
    assert files == [f"python{v}.txt" for v in SUPPORTED]
    requires = SpecifierSet(PROJECT["requires-python"])
    assert all(f"{v}.0" in requires for v in SUPPORTED)
    assert "3.10.0" not in requires and "3.14.0" not in requires


def test_constraints_pin_every_requirement_inside_pyprojects_range():
    for python in SUPPORTED:
        pins = constraints(python)
        for requirement in requirements(python):
            name = canonicalize_name(requirement.name)
            if NEVER_PINNED.match(name):
                continue
            assert name in pins, f"python{python}.txt does not pin {name}"
            assert requirement.specifier.contains(pins[name], prereleases=True), \
                f"python{python}.txt pins {name}=={pins[name]}, outside pyproject's '{requirement.specifier}'"


def test_the_browser_tests_python_pins_playwright():
    pins = constraints("3.13")  # .ci/run runs the browser tests on 3.13
    for requirement in map(Requirement, PROJECT["optional-dependencies"]["browser"]):
        assert requirement.specifier.contains(pins[canonicalize_name(requirement.name)])


def test_every_python_pins_the_websites_packages():
    # the site extra (make site; CI builds on 3.13, a learner may on any): `make constraints` from an environment
    # without it would drop these pins, and this fails
    for python in SUPPORTED:
        pins = constraints(python)
        for requirement in map(Requirement, PROJECT["optional-dependencies"]["site"]):
            name = canonicalize_name(requirement.name)
            assert name in pins, f"python{python}.txt does not pin {name} (the site extra)"
            assert requirement.specifier.contains(pins[name]), f"python{python}.txt pins {name}=={pins[name]}"


def test_torch_is_a_tested_range_never_pinned():
    (torch,) = [r for r in requirements("3.13") if r.name == "torch"]
    assert "==" not in str(torch.specifier)
    assert all(torch.specifier.contains(v) for v in TESTED_TORCH)
    for python in SUPPORTED:
        assert not [name for name in constraints(python) if NEVER_PINNED.match(name)], python


def test_setuptools_only_where_gym_needs_distutils():
    names = {python: {canonicalize_name(r.name) for r in requirements(python, ())} for python in SUPPORTED}
    assert "setuptools" not in names["3.11"]
    assert "setuptools" in names["3.12"] and "setuptools" in names["3.13"]
    assert "setuptools" in constraints("3.12") and "setuptools" in constraints("3.13")


def test_the_pins_that_matter():
    pinned = {str(r) for r in requirements("3.13")}
    assert "gym==0.20.0" in pinned       # ma-gym's requirement; installed from tools/build_gym_wheel.py's wheel
    assert "ma-gym==0.0.13" in pinned    # 0.0.14 has the same code and refuses Python >= 3.12


def test_environment_yml_is_the_readmes_conda_route():
    """environment.yml makes a conda env with a supported Python, pip and make; make setup then installs into it."""
    conda = [line.split("#")[0].strip()[2:] for line in (ROOT / "environment.yml").read_text().splitlines()
             if line.split("#")[0].strip().startswith("- ")]
    (python,) = [d for d in conda if d.startswith("python=")]
    assert python.removeprefix("python=") in SUPPORTED
    assert "pip" in conda and "make" in conda
    readme = (ROOT / "README.md").read_text()
    assert "conda env create -f environment.yml" in readme
    assert 'make setup VENV="$CONDA_PREFIX"' in readme
