"""Simulation: the hub's admission and the agents' code on simulated clusters, on a virtual clock."""
