"""PPO and SAC students: Stable-Baselines3 learners that accept an online-distillation term."""

from agents.students.ppo import PPOStudent, ppo_action_distribution
from agents.students.sac import SACStudent, sac_action_distribution

__all__ = ["PPOStudent", "SACStudent", "ppo_action_distribution", "sac_action_distribution"]
