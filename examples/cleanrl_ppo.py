"""CleanRL-style single-file PPO (continuous actions) on ``gymnasium.make_vec``: no SB3, no project code.

    python examples/cleanrl_ppo.py                                   # quadruped, 8 envs, 200k steps
    python examples/cleanrl_ppo.py --env-id OpenClaw/Claw-v0 --total-timesteps 50000

Follows CleanRL's ``ppo_continuous_action.py`` (GAE, clipped surrogate and value loss, per-minibatch
advantage normalisation, state-independent log-std) on a Gymnasium vector env: Gymnasium's wrappers
clip actions and normalise observations in each env (the claw's Dict is flattened first with
``FlattenObservation``), a vector wrapper records episode statistics. ``autoreset_mode=SAME_STEP``
hands back the reset observation with the step that ended an episode, the layout this loop expects.
"""

from __future__ import annotations

import argparse
import time

import gymnasium as gym
import numpy as np
import torch
from torch import nn

import envs  # noqa: F401  (registers OpenClaw/*)


def make_envs(env_id: str, num_envs: int) -> gym.vector.VectorEnv:
    probe = gym.make(env_id)
    flatten = [gym.wrappers.FlattenObservation] if isinstance(probe.observation_space, gym.spaces.Dict) else []
    probe.close()
    wrappers = [*flatten, gym.wrappers.ClipAction, gym.wrappers.NormalizeObservation]  # per env, as CleanRL
    vec = gym.make_vec(env_id, num_envs, vectorization_mode="sync", wrappers=wrappers,
                       vector_kwargs={"autoreset_mode": gym.vector.AutoresetMode.SAME_STEP})
    return gym.wrappers.vector.RecordEpisodeStatistics(vec)


class Agent(nn.Module):
    def __init__(self, obs_dim: int, act_dim: int, width: int = 256) -> None:
        super().__init__()
        self.critic = nn.Sequential(nn.Linear(obs_dim, width), nn.Tanh(), nn.Linear(width, width), nn.Tanh(), nn.Linear(width, 1))
        self.actor = nn.Sequential(nn.Linear(obs_dim, width), nn.Tanh(), nn.Linear(width, width), nn.Tanh(), nn.Linear(width, act_dim))
        self.log_std = nn.Parameter(torch.full((act_dim,), -0.5))

    def act(self, obs: torch.Tensor, action: torch.Tensor | None = None):
        dist = torch.distributions.Normal(self.actor(obs), self.log_std.exp())
        action = dist.sample() if action is None else action
        return action, dist.log_prob(action).sum(-1), self.critic(obs).squeeze(-1)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--env-id", default="OpenClaw/Quadruped-v1")
    p.add_argument("--num-envs", type=int, default=8)
    p.add_argument("--num-steps", type=int, default=256, help="steps per env per rollout")
    p.add_argument("--total-timesteps", type=int, default=200_000)
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--gamma", type=float, default=0.99)
    p.add_argument("--gae-lambda", type=float, default=0.95)
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--minibatches", type=int, default=4)
    p.add_argument("--clip", type=float, default=0.2)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    torch.manual_seed(a.seed)
    torch.set_num_threads(1)
    vec = make_envs(a.env_id, a.num_envs)
    obs_dim, act_dim = vec.single_observation_space.shape[0], vec.single_action_space.shape[0]
    agent = Agent(obs_dim, act_dim)
    optim = torch.optim.Adam(agent.parameters(), lr=a.lr, eps=1e-5)
    T, N = a.num_steps, a.num_envs
    obs_buf, act_buf = torch.zeros(T, N, obs_dim), torch.zeros(T, N, act_dim)
    logp_buf, rew_buf, done_buf, val_buf = (torch.zeros(T, N) for _ in range(4))
    obs, _ = vec.reset(seed=a.seed)
    obs, done = torch.as_tensor(obs, dtype=torch.float32), torch.zeros(N)
    start, step, returns = time.time(), 0, []
    for update in range(a.total_timesteps // (T * N)):
        for t in range(T):
            with torch.no_grad():
                action, logp, value = agent.act(obs)
            obs_buf[t], act_buf[t], logp_buf[t], val_buf[t], done_buf[t] = obs, action, logp, value, done
            next_obs, reward, terminated, truncated, info = vec.step(action.numpy())
            rew_buf[t] = torch.as_tensor(reward, dtype=torch.float32)
            obs = torch.as_tensor(next_obs, dtype=torch.float32)
            done = torch.as_tensor(terminated | truncated, dtype=torch.float32)  # truncation treated as an end, as CleanRL
            returns += [float(r) for r, ended in zip(info.get("episode", {}).get("r", []), info.get("_episode", [])) if ended]
            step += N
        with torch.no_grad():  # generalised advantage estimation
            next_value, gae = agent.act(obs)[2], torch.zeros(N)
            adv = torch.zeros(T, N)
            for t in reversed(range(T)):
                not_done = 1.0 - (done if t == T - 1 else done_buf[t + 1])
                nv = next_value if t == T - 1 else val_buf[t + 1]
                delta = rew_buf[t] + a.gamma * nv * not_done - val_buf[t]
                adv[t] = gae = delta + a.gamma * a.gae_lambda * not_done * gae
            ret = adv + val_buf
        b_obs, b_act, b_logp, b_adv, b_ret = (x.reshape(T * N, *x.shape[2:]) for x in (obs_buf, act_buf, logp_buf, adv, ret))
        for _ in range(a.epochs):
            for mb in torch.randperm(T * N).chunk(a.minibatches):
                _, logp, value = agent.act(b_obs[mb], b_act[mb])
                ratio = (logp - b_logp[mb]).exp()
                mb_adv = (b_adv[mb] - b_adv[mb].mean()) / (b_adv[mb].std() + 1e-8)
                pg_loss = torch.max(-mb_adv * ratio, -mb_adv * ratio.clamp(1 - a.clip, 1 + a.clip)).mean()
                loss = pg_loss + 0.5 * ((value - b_ret[mb]) ** 2).mean()  # no entropy bonus (ent_coef 0)
                optim.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), 0.5)
                optim.step()
        recent = f"{np.mean(returns[-20:]):.1f}" if returns else "-"
        print(f"update {update + 1}: {step} steps, {step / (time.time() - start):.0f} steps/s, mean return (last 20 episodes) {recent}")
    vec.close()


if __name__ == "__main__":
    main()
