"""The pet store's gates, rehearsals and tools (formerly scripts/*.py): one
package, each command a module with a `main` the console scripts of
tools/gates/pyproject.toml name, run from the repository by the Makefile."""
