"""vglobal: one place to submit Volcano Jobs across many Kubernetes clusters."""

__version__ = "0.1.0"
