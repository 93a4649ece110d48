"""Who may call the hub: the auth config file, tokens, certificate identities, the role rules and
per-principal rate limits."""
