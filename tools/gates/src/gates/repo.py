"""Where the repository is: every tool reads and runs the checked-out tree.

The package is installed editable (`make venv`) or run from its source with
PYTHONPATH=tools/gates/src (the pipeline's deploy jobs, the standard library
alone), so this file is always tools/gates/src/gates/repo.py of the tree it
checks."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
