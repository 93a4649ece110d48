"""Fair share: the queue tree and its deserved shares, the fair order, decayed usage, the queue
checks (capability, guarantees) and the queues' status."""
