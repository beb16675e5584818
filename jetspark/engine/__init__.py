"""The engine: tasklets, queues, inbox/outbox, watermark coalescing, snapshot barriers.

It drives processors exactly as the `Processor` contract describes, knows nothing of Spark, and
is used both by the in-process local runner and inside each Spark task by the Spark runner.
"""
