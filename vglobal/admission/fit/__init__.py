"""Where a gang fits: per-cluster placement and gang packing, HyperNodes and partitions, GPU cards,
node groups, pod anti-affinity and node-group limits, and a HyperJob's children across clusters."""
