"""The modules the seeds name: ``reward_contracts`` (resolver) and ``reward_scoring`` (scorer)."""
