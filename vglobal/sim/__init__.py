"""Simulated member clusters: nodes from SimCluster files, a virtual clock, the ``sim run`` driver."""
