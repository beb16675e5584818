"""Runners: the local (in-process) runner and the Spark runner, the only code that imports pyspark."""
