"""sparkdelta: Delta Lake in Python, with PySpark as its engine."""

__version__ = "0.1.0"
