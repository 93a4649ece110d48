"""Generated API packages."""
