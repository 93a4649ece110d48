"""The hub: gRPC API, dispatcher and failover loops over Postgres."""
