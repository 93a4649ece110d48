"""The kube backend: the agent driving a real Kubernetes cluster through the official client."""
