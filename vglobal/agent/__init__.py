"""The per-cluster agent: hub connection, job controller, local scheduling, backends."""
