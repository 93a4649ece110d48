"""The dispatcher (leader only): snapshot → admit() → one transaction of decisions, then what
explains them.

- ``cache``: what it keeps of unfinished jobs between cycles (one entry per job, derived indexes);
- ``clusters``, ``snapshot``: the rest of what it keeps, and reading a cycle's Snapshot;
- ``cycle``: one cycle (lock, snapshot, admit, write) and the ``Dispatcher`` that runs them;
- ``explain``: what explains a cycle (changed wait reasons, queue figures) and its writer;
- ``metrics``: what a cycle tells Prometheus; ``loop``: the leader's loop.
"""
