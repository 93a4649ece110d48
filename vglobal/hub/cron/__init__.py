"""CronJobs: the leader makes each scheduled run a Job, once."""
