"""The modules the contract names (docs/contracts.md §2): ``reward_contracts`` (resolver) and ``reward_scoring`` (scorer)."""
