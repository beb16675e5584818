"""Planning: from a validated DAG to an execution plan (members, processors, partition ownership).

No pyspark here: the local runner and the Spark runner share the same plan, so a DAG gives the
same partition ownership and processor indexes on both.
"""
