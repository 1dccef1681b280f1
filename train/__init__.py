"""Training entry points for the platform agents (stable-baselines3 PPO), their evaluation
against fixed baselines, TensorBoard callbacks, and a Ray RLlib example.

    python -m oasis_gym.train.recommender --help
    python -m oasis_gym.train.moderator --help
"""
