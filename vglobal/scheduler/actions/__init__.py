"""Scheduler actions, one module each; ``vglobal.scheduler.tables.ACTIONS`` names them for the conf."""
