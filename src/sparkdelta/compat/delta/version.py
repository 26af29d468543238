"""The delta-spark release whose Python API sparkdelta's ``delta`` modules follow."""

__version__ = "4.4.1"
