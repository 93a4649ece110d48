"""gRPC servicers: they translate requests and own one transaction per call."""
