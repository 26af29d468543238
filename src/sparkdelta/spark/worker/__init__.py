"""Code that runs in Spark's Python workers, shipped by value so the server needs none of sparkdelta.

``mapInArrow`` pickles its function with pyspark's bundled cloudpickle, on a classic
session (``CloudPickleSerializer`` in ``pyspark.core.rdd``) as on a Spark Connect one
(``CloudPickleSerializer`` in ``pyspark.sql.connect``): by reference to its module,
unless that module is registered to go by value. This package is so registered, on
import, so its functions reach a Spark server (a managed Spark Connect one with nothing
installed, say) with their code, and never make a worker import ``sparkdelta``.

Hence the rule for every module in here: import only what a Spark server with Python has
(the standard library, numpy, pyarrow), and nothing of sparkdelta, not even through this
package's ``__init__``, which runs on the client only.
"""

from __future__ import annotations

import sys

from pyspark import cloudpickle

cloudpickle.register_pickle_by_value(sys.modules[__name__])
