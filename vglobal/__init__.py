"""vglobal: one place to submit Volcano Jobs across many Kubernetes clusters."""

import os

__version__ = "0.1.0"

# gRPC's C core prints INFO lines (a failed TLS handshake, ...) to stderr unless told otherwise; our
# errors say what went wrong in one line of their own. Set before any module of ours imports grpc.
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
