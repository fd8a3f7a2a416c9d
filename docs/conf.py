"""Sphinx configuration of the guide and the API reference.

Built by ``tests/test_docs.py`` with warnings as errors:
``python -m sphinx -W -b html docs DIR``.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.abspath(".."))

project = "timely"
author = "The timely-dataflow for Python authors"
copyright = "2026, " + author
release = __import__("timely").__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
    "myst_parser",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build"]
myst_heading_anchors = 3

autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_member_order = "bysource"
autodoc_typehints = "none"         # signatures come from the code and the stubs' docstrings
autodoc_mock_imports = ["pyspark", "pyarrow", "pandas"]
napoleon_google_docstring = True
napoleon_numpy_docstring = False

html_theme = "alabaster"
html_title = "timely"
