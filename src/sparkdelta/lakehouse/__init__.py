"""The medallion lakehouse of *Delta Lake: Up & Running* on sparkdelta: NYC taxi trips
landing as daily CSV files, refined through bronze, silver and gold Delta tables.

``lakehouse run`` (cli.py) runs it; pipeline.py holds one run; each layer is a module, and
streams.py runs the layers as Structured Streaming queries (``lakehouse run --stream``).
"""

from .generator import FeedSpec
from .pipeline import PipelineConfig, run
from .warehouse import Warehouse

__all__ = ["FeedSpec", "PipelineConfig", "Warehouse", "run"]
