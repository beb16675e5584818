"""The `jetspark` command: `jetspark run` and `jetspark submit` (see `jetspark --help`)."""
