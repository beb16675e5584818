"""The web UI of a driver's jobs: a jobs list, and per job its DAG, per-vertex figures, Spark
stages and links, and cancel / suspend / resume buttons (Starlette, served by uvicorn).

`serve(host="127.0.0.1", port=8740)` starts it in this process; `jetspark run --ui` and
`jetspark submit --ui` start it for the job file. See docs/web-ui.md.
"""

from jetspark.web.server import WebServer as WebServer
from jetspark.web.server import current_server as current_server
from jetspark.web.server import serve as serve
from jetspark.web.server import serve_address as serve_address

__all__ = ["WebServer", "current_server", "serve", "serve_address"]
