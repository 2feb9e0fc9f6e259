"""Only what pyproject.toml cannot say: the folders ``methods/`` and ``tasks/`` install under the import names
``specbench_methods`` and ``specbench_tasks``, so an installed specbench owns no bare top-level name that a user's
own package (``tasks`` is common) would collide with. In a checkout, ``specbench/plugins/checkout_names.py`` maps
the same names onto the folders."""
from setuptools import find_packages, setup

RENAMED = {"methods": "specbench_methods", "tasks": "specbench_tasks"}  # folder -> import name


def import_name(package: str) -> str:
    head, dot, tail = package.partition(".")
    return RENAMED.get(head, head) + dot + tail


setup(packages=[import_name(p) for p in find_packages(include=["specbench*", "methods*", "tasks*"])],
      package_dir={name: folder for folder, name in RENAMED.items()})
