"""Room made by victims: preemption within a queue, reclaim across queues (pods and whole jobs),
starvation reservations, and the victims of a HyperJob's children."""
