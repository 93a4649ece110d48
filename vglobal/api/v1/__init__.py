"""Generated gRPC code for the vglobal.v1 API. Do not edit: run `make proto`."""
