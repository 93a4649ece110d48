"""Repository functions: each takes ``*, session``, flushes at most, never commits."""
