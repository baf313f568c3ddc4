"""Learners and the training pipeline: PPO/SAC students on OpenClaw envs (Stable-Baselines3 based)."""
