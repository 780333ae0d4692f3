"""Package discovery only; all metadata is in pyproject.toml.

The catalogs `solvers/` and `models/` are data at the top of the repository. They are mapped into
the wheel as `butcherflow/_catalog/solvers` and `butcherflow/_catalog/models` by the package-dir
table in pyproject.toml; setuptools' automatic discovery cannot see mapped folders, so the package
list is computed here.
"""

from setuptools import find_packages, setup

setup(
    packages=[
        *find_packages(include=["butcherflow", "butcherflow.*"]),
        "butcherflow._catalog.solvers",
        "butcherflow._catalog.models",
    ]
)
