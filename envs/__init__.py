"""PettingZoo environments of oasis-gym: twitter_v0, reddit_v0."""
