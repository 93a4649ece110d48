"""JobFlows: the leader makes each flow's Job once its dependencies are met."""
