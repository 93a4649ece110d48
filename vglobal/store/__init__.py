"""Postgres storage: tables, repositories (functions taking ``*, session``), engine, embedded server."""
