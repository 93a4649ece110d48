"""Pure decisions of the hub's CronJob and JobFlow loops, as ``vglobal.admission`` is the dispatcher's.

``decide_cron`` (with ``due_runs``) says what one look at a CronJob creates, cancels and deletes;
``flow_progress`` which flows' Jobs one look at a JobFlow creates and deletes. Each is a function of
the object, what the hub sees of its Jobs and ``now`` (a datetime the loop passes in): no clock, no
randomness, no I/O; the loops in ``vglobal/hub/cron`` and ``vglobal/hub/flows`` apply the result.
"""
