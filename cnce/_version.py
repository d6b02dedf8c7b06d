"""The version of the package, in one place (read by ``cnce.__version__``, the provenance records
and the build: ``pyproject.toml`` takes it from here)."""
__version__ = "0.1.0"
