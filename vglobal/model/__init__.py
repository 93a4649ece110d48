"""Pure domain model: quantities, resources, Volcano manifests, phases. No I/O."""
