"""Watching jobs: the change log's revisions (leader) and the streams each replica serves."""
