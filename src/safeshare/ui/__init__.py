"""``safeshare ui``: a browser workbench for the custodian (docs/ui.md).

A local web application (Starlette, Jinja2 templates with autoescaping, uvicorn; a small
script of our own, charts and the lattice drawn as SVG on the server) above the use cases:
every figure it shows comes from the same functions as the command line and the Python API,
through :mod:`safeshare.api` (its :mod:`~safeshare.workflows.workbench`), and every run executes
in a child process (:mod:`safeshare.ui.worker`). Layer: above ``workflows`` (and the application layer), below
``cli``; the web stack is imported only by the ``ui`` command.
"""
