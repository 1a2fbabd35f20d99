"""The privacy service: erase a user or a tenant (crypto-shredding) and export what mnemo holds about a user."""
