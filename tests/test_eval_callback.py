"""The training-time evaluation (``agents.training.callbacks.EvalAndCheckpoint``), in process."""

from __future__ import annotations

from stable_baselines3 import PPO
from stable_baselines3.common.logger import Logger

import envs  # noqa: F401  (registers the OpenClaw envs)
from agents import checkpoint
from agents.training.callbacks import EvalAndCheckpoint
from agents.vec_env import make_vec_env

ENV_ID, KWARGS = "OpenClaw/Claw-v0", {"reward_type": "dense"}  # 100-step episodes; the reset draws the object's place


def _evaluations(tmp_path, eval_seed):
    """The mean returns of three evaluations of one unchanged policy, at steps 1, 2 and 3."""
    model = PPO("MultiInputPolicy", make_vec_env(ENV_ID, KWARGS, 1), n_steps=64, seed=0, device="cpu")
    model.set_logger(Logger(folder=None, output_formats=[]))
    run_dir = tmp_path / str(eval_seed)
    run_dir.mkdir()
    callback = EvalAndCheckpoint(run_dir, make_vec_env(ENV_ID, KWARGS, 2), eval_freq=1, eval_episodes=4,
                                 checkpoint_freq=0, keep_checkpoints=1, eval_seed=eval_seed)
    callback.init_callback(model)
    returns = []
    for step in (1, 2, 3):
        model.num_timesteps = callback.num_timesteps = step
        returns.append(callback.run_evaluation().mean_return)
    return returns, callback


def test_every_evaluation_runs_the_same_episodes_so_the_best_compares_policies(tmp_path):
    returns, callback = _evaluations(tmp_path, eval_seed=7)
    assert returns[0] == returns[1] == returns[2], f"the same policy scored differently: {returns}"
    best = checkpoint.best(callback.run_dir)
    assert best is not None and best.meta["mean_return"] == returns[0] and best.meta["num_timesteps"] == 1, best.meta
    # without a seed the evaluations draw new episodes (what the seed prevents); another seed, other episodes
    unseeded, _ = _evaluations(tmp_path, eval_seed=None)
    assert len(set(unseeded)) > 1, unseeded
    assert _evaluations(tmp_path, eval_seed=8)[0][0] != returns[0]
