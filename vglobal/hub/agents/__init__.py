"""One agent's stream, as the hub serves it (``servicers/agent.py`` is its gRPC face):

- ``check``: what an agent may say, every message checked before anything is recorded;
- ``register``: a Register recorded (inventory, the stream made the cluster's) and released;
- ``record``: the reports that follow (heartbeats, acknowledgements, job status), in batches;
- ``deliver``: what reaches the stream (Dispatch of what its cluster should run, Cancel of what
  it must stop).
"""
