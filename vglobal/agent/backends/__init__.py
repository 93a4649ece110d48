"""Where pods really run: ``sim`` (simulated nodes) now, ``kube`` (a real cluster) later."""
