"""The `vglobal` command line: a client of the hub's gRPC API, plus `hub`, `agent`, `demo` and `sim`."""
