"""PPO and SAC students: Stable-Baselines3 learners that accept an online-distillation term."""

from stable_baselines3 import SAC
from stable_baselines3.common.base_class import BaseAlgorithm

from agents.students.ppo import PPOStudent, ppo_action_distribution
from agents.students.sac import SACStudent, sac_action_distribution
from distill.policy import PolicyEntry
from distill.squashed import entropy_log_std

__all__ = ["PPOStudent", "SACStudent", "policy_entry", "ppo_action_distribution", "sac_action_distribution"]


def policy_entry(model: BaseAlgorithm) -> PolicyEntry:
    """The module that owns a learner's action distribution (SAC: its actor; PPO: its policy), and how to read it."""
    if isinstance(model, SAC):
        width = entropy_log_std(model.target_entropy, model.action_space.shape[0])
        return PolicyEntry(model.actor, sac_action_distribution, squashed=True, width_log_std=width)
    return PolicyEntry(model.policy, ppo_action_distribution)
