"""Predicted starts: the leader replays admission forward from the dispatcher's last snapshot."""
