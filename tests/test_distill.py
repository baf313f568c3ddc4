"""Online policy distillation: KL maths, schedules, teachers, student parity and the import direction."""

from __future__ import annotations

import ast
import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from stable_baselines3 import PPO, SAC
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import VecNormalize

from agents.students import PPOStudent, SACStudent, policy_entry, ppo_action_distribution
from distill.kl import diag_gaussian_kl, distillation_kl, weighted_mean
from distill.opd import OnlinePolicyDistillation
from distill.policy import DiagGaussian, PolicyEntry
from distill.sequence import TeacherSequence
from distill.schedules import make_schedule
from distill.teachers import CheckpointTeacher, EMATeacher
from test_train import SAC_SHORT, train_here

ROOT = Path(__file__).resolve().parent.parent


def random_gaussians(batch=64, dim=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    p = DiagGaussian(torch.randn(batch, dim, generator=g), 0.5 * torch.randn(batch, dim, generator=g))
    q = DiagGaussian(torch.randn(batch, dim, generator=g), 0.5 * torch.randn(batch, dim, generator=g))
    return p, q


# ---------------------------------------------------------------- KL


def test_kl_matches_torch_distributions():
    p, q = random_gaussians()
    ref = torch.distributions.kl_divergence(
        torch.distributions.Normal(p.mean, p.log_std.exp()), torch.distributions.Normal(q.mean, q.log_std.exp())
    ).sum(-1)
    torch.testing.assert_close(diag_gaussian_kl(p, q), ref)


def test_kl_direction_and_zero():
    p, q = random_gaussians()
    torch.testing.assert_close(distillation_kl(p, q, "forward"), diag_gaussian_kl(p, q))
    torch.testing.assert_close(distillation_kl(p, q, "reverse"), diag_gaussian_kl(q, p))
    assert not torch.allclose(diag_gaussian_kl(p, q), diag_gaussian_kl(q, p))
    assert torch.all(diag_gaussian_kl(p, q) > 0)
    torch.testing.assert_close(diag_gaussian_kl(p, p), torch.zeros(64))
    with pytest.raises(ValueError, match="forward"):
        distillation_kl(p, q, "sideways")


def test_kl_of_pre_tanh_gaussians_equals_kl_of_squashed_distributions():
    """Monte-Carlo KL of the tanh-squashed distributions equals the analytic pre-tanh KL."""
    p = DiagGaussian(torch.tensor([[0.3, -0.2]]), torch.tensor([[-0.5, -1.0]]))
    q = DiagGaussian(torch.tensor([[0.1, 0.4]]), torch.tensor([[-0.7, -0.6]]))
    td = torch.distributions
    squash = [td.transforms.TanhTransform(cache_size=1)]
    sp = td.TransformedDistribution(td.Normal(p.mean, p.log_std.exp()), squash)
    sq = td.TransformedDistribution(td.Normal(q.mean, q.log_std.exp()), squash)
    torch.manual_seed(0)
    x = sp.sample((200_000,)).clamp(-1 + 1e-6, 1 - 1e-6)
    monte_carlo = (sp.log_prob(x) - sq.log_prob(x)).sum(-1).mean()
    assert abs(float(monte_carlo) - float(diag_gaussian_kl(p, q))) < 0.02


def test_weighted_mean_masks_samples():
    values = torch.tensor([1.0, 2.0, 100.0], requires_grad=True)
    assert float(weighted_mean(values, torch.tensor([1.0, 1.0, 0.0]))) == pytest.approx(1.5)
    empty = weighted_mean(values, torch.zeros(3))
    assert float(empty) == 0.0
    empty.backward()  # still differentiable, contributes nothing
    assert torch.all(values.grad == 0)


# ---------------------------------------------------------------- schedules


@pytest.mark.parametrize(
    "kind, expected",
    [
        ("constant", (1.0, 1.0, 1.0)),
        ("linear", (1.0, 0.55, 0.1)),
        ("cosine", (1.0, 0.55, 0.1)),
        ("exponential", (1.0, 0.1 + 0.9 * math.exp(-2.5), 0.1 + 0.9 * math.exp(-5.0))),
    ],
)
def test_alpha_schedules(kind, expected):
    schedule = make_schedule(kind, alpha=1.0, final_alpha=0.1, decay_rate=5.0)
    assert [schedule(p) for p in (0.0, 0.5, 1.0)] == pytest.approx(list(expected))


def test_schedule_that_ends_early_then_stays():
    """``end``: the schedule runs over progress [0, end] (e.g. its first 200 k of 5 M steps), then holds."""
    schedule = make_schedule("linear", alpha=0.5, final_alpha=0.0, end=0.04)
    assert [schedule(p) for p in (0.0, 0.02, 0.04, 0.5, 1.0)] == pytest.approx([0.5, 0.25, 0.0, 0.0, 0.0])


def test_bad_schedule_values():
    with pytest.raises(ValueError, match="choose one of"):
        make_schedule("step", 1.0)
    with pytest.raises(ValueError, match=">= 0"):
        make_schedule("constant", -0.1)
    with pytest.raises(ValueError, match=r"end=0 must be in \(0, 1\]"):
        make_schedule("linear", 1.0, end=0)


# ---------------------------------------------------------------- teachers


def linear_policy(seed: int) -> tuple[torch.nn.Module, callable]:
    torch.manual_seed(seed)
    net = torch.nn.Linear(3, 2)
    log_std = torch.nn.Parameter(torch.full((2,), -0.5))
    module = torch.nn.ModuleDict({"net": net})
    module.log_std = log_std

    def dist(m, obs):
        mean = m["net"](obs)
        return DiagGaussian(mean, m.log_std.expand_as(mean))

    return module, dist


def test_ema_teacher_update_rule_period_and_condition():
    student_module, dist = linear_policy(0)
    student = PolicyEntry(student_module, dist)
    allow = {"value": True}
    teacher = EMATeacher(student, decay=0.9, update_every=2, condition=lambda: allow["value"])
    before = [p.detach().clone() for p in teacher.entry.module.parameters()]
    with torch.no_grad():
        for p in student_module.parameters():
            p.add_(1.0)
    teacher.after_optimizer_step()  # step 1: not on the period
    for b, t in zip(before, teacher.entry.module.parameters()):
        torch.testing.assert_close(b, t)
    teacher.after_optimizer_step()  # step 2: update
    for b, t, s in zip(before, teacher.entry.module.parameters(), student_module.parameters()):
        torch.testing.assert_close(t, 0.9 * b + 0.1 * s)
    allow["value"] = False
    snapshot = [p.detach().clone() for p in teacher.entry.module.parameters()]
    teacher.after_optimizer_step()
    teacher.after_optimizer_step()  # on the period, but the condition refuses
    for b, t in zip(snapshot, teacher.entry.module.parameters()):
        torch.testing.assert_close(b, t)
    assert teacher.updates == 1
    assert not any(p.requires_grad for p in teacher.entry.module.parameters())


def test_distillation_pulls_student_toward_teacher():
    student_module, dist = linear_policy(0)
    teacher_module, _ = linear_policy(1)
    teacher = CheckpointTeacher(PolicyEntry(teacher_module, dist))
    opd = OnlinePolicyDistillation(PolicyEntry(student_module, dist), TeacherSequence.alone(teacher, make_schedule("constant", 1.0)))
    optimizer = torch.optim.Adam(student_module.parameters(), lr=0.05)
    obs = torch.randn(256, 3)
    losses = []
    for _ in range(200):
        loss, alpha = opd.distill_loss(obs, progress=0.0)
        optimizer.zero_grad()
        (alpha * loss).backward()
        optimizer.step()
        losses.append(float(loss))
    assert losses[-1] < 0.01 * losses[0]
    stats = opd.pop_stats()
    assert stats["coverage"] == 1.0 and stats["alpha"] == 1.0
    assert not any(p.grad is not None and p.grad.abs().sum() > 0 for p in teacher_module.parameters())


def test_checkpoint_teacher_raw_input_contract():
    module, dist = linear_policy(0)
    teacher = CheckpointTeacher(PolicyEntry(module, dist), preprocess=lambda o: o * 0.0, raw_input=True)
    assert teacher.needs_raw_obs
    with pytest.raises(ValueError, match="raw"):
        teacher.targets(torch.zeros(4, 3))
    targets = teacher.targets(torch.zeros(4, 3), raw_obs=torch.ones(4, 3))
    torch.testing.assert_close(targets.dist.mean, module["net"](torch.zeros(4, 3)).detach())


# ---------------------------------------------------------------- student parity (alpha = 0)


def params(model) -> list[torch.Tensor]:
    return [p.detach().clone() for p in model.policy.parameters()]


def _ppo(cls, seed=3, **kwargs):
    venv = make_vec_env("OpenClaw/Quadruped-v0", n_envs=2, seed=seed)
    return cls("MlpPolicy", venv, n_steps=64, batch_size=32, n_epochs=2, seed=seed, device="cpu",
               policy_kwargs=dict(net_arch=[32, 32]), **kwargs)


def _sac(cls, seed=3, **kwargs):
    """SAC on 1 quadruped env; a ``SACStudent`` in parity mode (SB3's Adam) unless ``kwargs`` say otherwise."""
    if cls is SACStudent:
        kwargs.setdefault("fast_update", False)
    venv = make_vec_env("OpenClaw/Quadruped-v0", n_envs=1, seed=seed)
    return cls("MlpPolicy", venv, learning_starts=64, batch_size=32, seed=seed, device="cpu",
               policy_kwargs=dict(net_arch=[32, 32]), **kwargs)


def _ema(model, alpha):
    entry = policy_entry(model)
    student = PolicyEntry(entry.module, entry.distribution_fn)
    return OnlinePolicyDistillation(student, TeacherSequence.alone(EMATeacher(student, decay=0.9), make_schedule("constant", alpha)))


@pytest.mark.parametrize("build, steps", [(_ppo, 256), (_sac, 160)])
def test_alpha_zero_is_bit_identical_to_sb3(build, steps):
    torch.set_num_threads(1)
    reference = build(PPO if build is _ppo else SAC).learn(steps)
    plain = build(PPOStudent if build is _ppo else SACStudent).learn(steps)
    zero = build(PPOStudent if build is _ppo else SACStudent)
    zero.attach_distillation(_ema(zero, alpha=0.0))
    zero.learn(steps)
    nonzero = build(PPOStudent if build is _ppo else SACStudent)
    nonzero.attach_distillation(_ema(nonzero, alpha=1.0))
    nonzero.learn(steps)
    for a, b, c, d in zip(params(reference), params(plain), params(zero), params(nonzero)):
        assert torch.equal(a, b) and torch.equal(a, c)
    assert any(not torch.equal(a, d) for a, d in zip(params(reference), params(nonzero)))


@pytest.mark.parametrize("start, desired_kl", [(1e-2, 1e-8), (1e-5, 1.0)])
def test_desired_kl_moves_the_learning_rate_towards_it_and_a_saved_model_goes_on_from_it(tmp_path, start, desired_kl):
    """rsl_rl's adaptive rate: updates whose KL is far over ``desired_kl`` lower the rate, far under it raise it,
    within the bounds; a saved and reloaded model keeps the rate it reached and adapts on from there."""
    from agents.students.ppo import ADAPTIVE_LR_BOUNDS

    torch.set_num_threads(1)
    model = _ppo(PPOStudent, learning_rate=start, desired_kl=desired_kl).learn(256)
    reached = model.policy.optimizer.param_groups[0]["lr"]
    lowering = desired_kl < 1e-3
    assert (reached < start / 10) if lowering else (reached > start * 10), reached
    assert ADAPTIVE_LR_BOUNDS[0] <= reached <= ADAPTIVE_LR_BOUNDS[1]
    model.save(tmp_path / "model")
    loaded = PPOStudent.load(tmp_path / "model", env=model.get_env(), device="cpu")
    assert loaded.desired_kl == desired_kl and loaded.policy.optimizer.param_groups[0]["lr"] == reached
    loaded.learn(128, reset_num_timesteps=False)
    went_on = loaded.policy.optimizer.param_groups[0]["lr"]
    assert (went_on < reached) if lowering else (went_on > reached), (reached, went_on)


def test_sac_fast_update_differs_from_sb3_by_rounding_only():
    """The default update (fused Adam) rounds differently from SB3's Adam, so it is not bit-identical,
    but after 96 gradient steps every parameter is within float32 rounding drift of SB3's."""
    torch.set_num_threads(1)
    reference = _sac(SAC).learn(160)
    fast = _sac(SACStudent, fast_update=True).learn(160)
    assert fast.actor.optimizer.defaults["fused"] and fast.ent_coef_optimizer.defaults["fused"]
    assert any(not torch.equal(a, b) for a, b in zip(params(reference), params(fast)))
    for a, b in zip(params(reference), params(fast)):
        torch.testing.assert_close(b, a, rtol=0, atol=1e-4)


def test_ppo_student_feeds_raw_observations_to_a_raw_input_teacher():
    """With VecNormalize, the teacher sees exactly the raw observations the env produced."""
    venv = VecNormalize(make_vec_env("OpenClaw/Quadruped-v0", n_envs=2, seed=0))
    model = PPOStudent("MlpPolicy", venv, n_steps=32, batch_size=16, n_epochs=1, seed=0, device="cpu",
                       policy_kwargs=dict(net_arch=[16]))
    seen: list[torch.Tensor] = []
    module, _ = linear_policy(0)

    def dist(m, obs):
        seen.append(obs.clone())
        return DiagGaussian(torch.zeros(obs.shape[0], 12), torch.zeros(obs.shape[0], 12))

    teacher = CheckpointTeacher(PolicyEntry(module, dist), raw_input=True)
    entry = policy_entry(model)
    student = PolicyEntry(entry.module, entry.distribution_fn)
    model.attach_distillation(OnlinePolicyDistillation(student, TeacherSequence.alone(teacher, make_schedule("constant", 0.5))))
    model.learn(64)
    raw = torch.cat(seen)
    assert raw.shape[1] == 48
    # Raw command entries are the env's command ranges (|vx| <= 1), not unit-variance normalised values,
    # and raw projected gravity is a unit vector.
    torch.testing.assert_close(raw[:, 6:9].norm(dim=1), torch.ones(len(raw)), atol=1e-3, rtol=0)
    assert float(raw[:, 9].abs().max()) <= 1.0


def test_ppo_kl_reads_the_distribution_of_the_minibatchs_own_forward_pass():
    """PPO's KL takes the student's Gaussian from the update's evaluate_actions (no second forward pass):
    it must be the policy's distribution for those observations, with gradients to the actor."""
    from agents.students.ppo import evaluated_distribution

    model = PPOStudent("MlpPolicy", make_vec_env("OpenClaw/Quadruped-v1", n_envs=1, seed=0), seed=0, device="cpu",
                       policy_kwargs=dict(net_arch=[16]))
    obs, actions = torch.randn(8, *model.observation_space.shape), torch.rand(8, 12) * 2 - 1
    model.policy.evaluate_actions(obs, actions)
    cached, fresh = evaluated_distribution(model.policy), ppo_action_distribution(model.policy, obs)
    assert torch.equal(cached.mean, fresh.mean) and torch.equal(cached.log_std, fresh.log_std)
    cached.mean.sum().backward()
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in model.policy.action_net.parameters())


def test_ppo_rollout_buffer_hands_each_sample_its_teacher_action_and_raw_observation():
    """Filled as SB3's collect_rollouts fills it; every minibatch row carries its own step's fields."""
    from stable_baselines3.common.buffers import RolloutBuffer

    from agents.students.rollout_buffer import ROLLOUT_EXTENSIONS, with_raw_observations
    from agents.students.teacher_actions import with_teacher_actions
    from distill.teachers import TeacherActions

    class Teacher:  # acts on the raw observation the student acts on (as ControllerTeacher.step_async)
        teacher_actions: TeacherActions

    venv, teacher = VecNormalize(make_vec_env("OpenClaw/Quadruped-v1", n_envs=2, seed=0)), Teacher()
    n_steps = 8
    buffer = RolloutBuffer(n_steps, venv.observation_space, venv.action_space, n_envs=2)
    buffer = with_raw_observations(with_teacher_actions(buffer, teacher, ROLLOUT_EXTENSIONS), venv)
    obs, starts = venv.reset(), np.ones(2, dtype=bool)
    buffer.reset()
    rng = np.random.default_rng(0)
    for t in range(n_steps):
        teacher.teacher_actions = TeacherActions(venv.get_original_obs()[:, :12].copy(), np.array([t % 2, 1], np.float32))
        actions = rng.uniform(-1, 1, size=(2, 12)).astype(np.float32)
        new_obs, rewards, dones, _ = venv.step(actions)
        buffer.add(obs, actions, rewards, starts, torch.zeros(2), torch.zeros(2))
        obs, starts = new_obs, dones
    buffer.compute_returns_and_advantage(torch.zeros(2), dones)
    weights, rows = [], 0
    for batch in buffer.get(4):
        taught = batch.teacher_actions
        assert taught.actions.shape == (4, 12) and taught.weights.shape == (4,)
        assert torch.equal(taught.actions, batch.raw_observations[:, :12])  # the same step's fields
        assert not torch.equal(batch.observations, batch.raw_observations)  # the stored ones are normalised
        weights.append(taught.weights)
        rows += 4
    assert rows == 2 * n_steps and float(torch.cat(weights).sum()) == n_steps + n_steps / 2


# ---------------------------------------------------------------- through train.py


@pytest.mark.parametrize(
    "teacher_env, student_env, agent",
    [("quadruped", "quadruped_rough", "ppo"), ("claw", "claw", "sac")],
)
def test_train_with_ema_then_checkpoint_teacher(tmp_path, teacher_env, student_env, agent):
    teacher_dir = tmp_path / "teacher"
    short = SAC_SHORT if agent == "sac" else ()
    first = train_here("train=smoke", f"env={teacher_env}", f"agent={agent}", "distill=ema", "distill.alpha=0.1", *short,
                      f"hydra.run.dir={teacher_dir}")
    assert first.returncode == 0, first.stderr[-3000:]
    header = (teacher_dir / "progress.csv").read_text().splitlines()[0]
    loss_key = "distill/action_kl" if agent == "sac" else "distill/kl"  # SAC: the squashed term (distill/squashed.py)
    for key in (loss_key, "distill/alpha", "distill/weighted_loss", "distill/action_distance",
                "distill/teacher_log_std", "distill/student_log_std", "distill/coverage", "train/rl_loss"):
        assert key in header
    latest = (teacher_dir / "checkpoints" / "latest").read_text().strip()
    assert (teacher_dir / "checkpoints" / latest / "teacher.pt").is_file()

    student_dir = tmp_path / "student"
    second = train_here("train=smoke", f"env={student_env}", f"agent={agent}", "distill=checkpoint", *short,
                       f"distill.teacher={teacher_dir}", f"hydra.run.dir={student_dir}")
    assert second.returncode == 0, second.stderr[-3000:]
    assert json.loads((student_dir / "summary.json").read_text())["distill"] == "checkpoint"
    rows = [r for r in csv.DictReader((student_dir / "progress.csv").open()) if r.get(loss_key)]
    assert rows and all(math.isfinite(float(r[loss_key])) for r in rows)
    assert float(rows[-1]["distill/coverage"]) == 1.0


@pytest.mark.parametrize(
    "override, expected",
    [
        (["distill=checkpoint"], "needs a teacher"),
        (["distill=ema", "distill.alpha=-1"], "must be >= 0"),
        (["distill=ema", "distill.schedule=step"], "choose one of"),
        (["distill=ema", "distill.ema_decay=1.5"], "[0, 1)"),
    ],
)
def test_bad_distill_values(override, expected):
    result = train_here(*override)
    assert result.returncode == 2 and expected in result.stderr


def test_torch_normalisation_matches_vec_normalize_both_ways():
    """The torch versions of VecNormalize's maths (checkpoint teacher: normalise; SAC raw observations:
    unnormalise) equal SB3's numpy ones, on a Dict env with one normalised key and on a Box env."""
    from agents.students.normalization import torch_normalize_obs, torch_unnormalize_obs

    rng = np.random.default_rng(0)
    for env_id, keys in (("OpenClaw/Claw-v0", ["observation"]), ("OpenClaw/Quadruped-v0", [None])):
        norm = VecNormalize(make_vec_env(env_id, n_envs=1), norm_reward=False, clip_obs=2.0,
                            norm_obs_keys=None if keys == [None] else keys)
        space = norm.observation_space
        shapes = {k: s.shape for k, s in space.spaces.items()} if keys != [None] else {None: space.shape}
        raw = {k: rng.normal(0.0, 3.0, (8, *shape)).astype(np.float32) for k, shape in shapes.items()}
        for k in keys:  # running statistics away from mean 0, variance 1
            rms = norm.obs_rms[k] if k else norm.obs_rms
            rms.mean, rms.var = rng.normal(0.0, 1.0, shapes[k]), rng.uniform(0.1, 4.0, shapes[k])
        if keys == [None]:
            raw = raw[None]
        normalized = norm.normalize_obs(raw)
        restored = norm.unnormalize_obs(normalized)

        def to_torch(obs):
            return {k: torch.as_tensor(v) for k, v in obs.items()} if isinstance(obs, dict) else torch.as_tensor(obs)

        got, back = torch_normalize_obs(norm, to_torch(raw)), torch_unnormalize_obs(norm, to_torch(normalized))
        for k in keys:
            part = {name: obs[k] if k else obs for name, obs in
                    (("normalized", normalized), ("restored", restored), ("got", got), ("back", back))}
            assert np.abs(part["normalized"]).max() == 2.0  # some entries were clipped
            # float32 tensors (as the learners pass them) against SB3's float64 maths: rounding only
            np.testing.assert_allclose(part["got"].numpy(), part["normalized"], rtol=1e-6, atol=1e-6)
            np.testing.assert_allclose(part["back"].numpy(), part["restored"], rtol=1e-6, atol=1e-6)
        if keys != [None]:
            assert torch.equal(got["desired_goal"], torch.as_tensor(raw["desired_goal"]))  # not a normalised key
        norm.close()


# ---------------------------------------------------------------- layering


def imported_modules(package: str, depth: int = 1) -> set[str]:
    """Dotted names (first ``depth`` parts) that the modules under ``package`` (a path) import."""
    names: set[str] = set()
    for path in (ROOT / package).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names.update(".".join(alias.name.split(".")[:depth]) for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(".".join(node.module.split(".")[:depth]))
    return names


def distill_core_imports() -> set[str]:
    """What the distillation method (``distill/*.py``) imports."""
    names: set[str] = set()
    for path in (ROOT / "distill").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module)
            elif isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
    return names


def test_imports_flow_one_way():
    assert not {"agents", "distill", "stable_baselines3"} & imported_modules("envs")
    assert not {"agents", "envs", "stable_baselines3"} & imported_modules("distill")
    core = distill_core_imports()
    assert not {n for n in core if n.split(".")[0] in {"agents", "envs", "coach", "openai"}}
    assert "agents.training" not in imported_modules("agents/evaluation", depth=2)
    # the config schema, read by saved run directories and so by evaluation, imports nothing of ours when it loads;
    # the env configs' ${env_default:<argument>} reads the envs only when it resolves one (a saved config.yaml has none)
    at_load = {n for path in (ROOT / "agents" / "config").glob("*.py") for n in top_level_imports(path)}
    assert not {n for n in at_load if n.split(".")[0] in {"agents", "envs", "distill"} and not n.startswith("agents.config")}
    inside = imported_modules("agents/config", depth=2)  # in functions too: of ours the envs' registry alone
    assert {n for n in inside if n.split(".")[0] in {"agents", "envs", "distill"} and n != "agents.config"} == {"envs"}
    assert not {"agents", "envs"} & imported_modules("coach/llm")
    assert not {"agents", "distill", "stable_baselines3", "torch"} & imported_modules("coach")  # envs/ alone
    llm_at_load = {path.relative_to(ROOT / "agents").as_posix() for path in (ROOT / "agents").rglob("*.py")
                   if {n for n in top_level_imports(path) if n == "openai" or n.startswith("coach.llm")}}
    assert llm_at_load == {"teachers/adaptive.py"}  # loaded only for distill=adaptive


def top_level_imports(path: Path) -> set[str]:
    """Modules a file imports when it is loaded (its module-level imports, not those inside functions)."""
    names: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names
