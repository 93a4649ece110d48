"""The web dashboard: a separate process, a gRPC client of the hub acting with each caller's token.

Server-rendered pages (Starlette + Jinja2, htmx vendored in ``static/``, SVG drawn on the server);
live updates pushed by Server-Sent Events from WatchJobs. The dashboard holds no privilege of its
own: every read and action is decided by the hub on the caller's token.
"""
