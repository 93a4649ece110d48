"""Built-in plugins, one module each; ``vglobal.scheduler.tables.PLUGINS`` names them for the conf."""
