"""Continuous-action MADDPG (tanh actors, Gaussian noise, deterministic policy gradient), by hand."""

import numpy as np
import pytest
import torch

from marl_edu.data.rollout import run_episode
from marl_edu.envs.make import make_vec_env
from marl_edu.envs.make import make_env
from marl_edu.learners.continuous import ContinuousIDDPG, ContinuousMADDPG, ContinuousMADDPGConfig
from marl_edu.training.evaluation import evaluate_particle
from marl_edu.training.loops import train


def _fixed_learner(learner=ContinuousMADDPG, gamma=0.9, action_reg=1e-3) -> ContinuousMADDPG:
    """N=2, O=1, A=1, one hidden unit everywhere, every weight 1 and bias 0: for inputs >= 0 each network returns
    the sum of its inputs (relu(relu(sum x))). So actor i's pre-activation is o_i and its action tanh(o_i)."""
    agent = learner(2, 1, 1, ContinuousMADDPGConfig(hidden=1, gamma=gamma, action_reg=action_reg), seed=0)
    with torch.no_grad():
        for module in (agent.actors, agent.critics, agent.target_actors, agent.target_critics):
            for name, p in module.named_parameters():
                p.fill_(1.0 if name.endswith("weight") else 0.0)
    return agent


def _batch(dones: list[float]) -> dict[str, torch.Tensor]:
    B = len(dones)
    return {
        "obs": torch.tensor([[[0.5], [0.25]]]).repeat(B, 1, 1),  # (B, N=2, O=1)
        "actions": torch.tensor([[[0.3], [0.2]]]).repeat(B, 1, 1),  # (B, 2, A=1) forces the agents took
        "rewards": torch.tensor([[1.0, 2.0]]).repeat(B, 1),  # (B, 2) each agent's own reward
        "next_obs": torch.tensor([[[1.0], [0.0]]]).repeat(B, 1, 1),  # (B, 2, 1)
        "dones": torch.tensor([[d, d] for d in dones]),  # (B, 2)
    }


def test_critic_target_uses_the_target_actors_tanh_by_hand():
    agent = _fixed_learner(gamma=0.9)
    # Q_0(x) = 0.5 + 0.25 + 0.3 + 0.2 = 1.25
    # target actions mu'(o') = tanh([1.0, 0.0]) = [0.761594, 0]; Q'_0(x') = 1.0 + 0.0 + 0.761594 + 0 = 1.761594
    # y_0 = r_0 + gamma (1 - d) Q'_0 = 1 + 0.9 * 1.761594 = 2.585435;  loss = (1.25 - 2.585435)^2 = 1.783386
    assert agent.critic_loss(0, _batch([0.0])).item() == pytest.approx(1.783386, abs=1e-5)
    # terminal: y_0 = 1 -> (1.25 - 1)^2 = 0.0625; mean over the two rows: (1.783386 + 0.0625) / 2 = 0.922943
    assert agent.critic_loss(0, _batch([0.0, 1.0])).item() == pytest.approx(0.922943, abs=1e-5)
    # agent 1 learns its own reward r_1 = 2: y_1 = 2 + 0.9 * 1.761594 = 3.585435; (1.25 - 3.585435)^2 = 5.454256
    assert agent.critic_loss(1, _batch([0.0])).item() == pytest.approx(5.454256, abs=1e-5)


def test_actor_loss_and_its_gradient_by_hand():
    agent = _fixed_learner(action_reg=1e-3)
    batch = _batch([0.0])
    # a_0 = tanh(f_0(o_0)) = tanh(0.5) = 0.462117; agent 1's action stays the batch's 0.2
    # Q_0 = 0.5 + 0.25 + 0.462117 + 0.2 = 1.412117;  L = -1.412117 + 1e-3 * 0.5^2 = -1.411867
    loss = agent.actor_loss(0, batch)
    assert loss.item() == pytest.approx(-1.411867, abs=1e-5)
    loss.backward()
    # dL/d(last bias of actor 0) = -dQ/da_0 * (1 - tanh(0.5)^2) + 2e-3 * 0.5 = -(1 - 0.213552) + 0.001 = -0.785448
    assert agent.actors[0].mlp.net[-1].bias.grad.item() == pytest.approx(-0.785448, abs=1e-5)
    assert all(p.grad is None for p in agent.actors[1].parameters())  # only agent i's actor is moved


def test_independent_critic_sees_only_its_own_agent():
    agent = _fixed_learner(learner=ContinuousIDDPG)
    assert agent.critics[0].mlp.in_dim == 1 + 1  # [o_i, a_i]: O + A, not N*(O+A)
    with torch.no_grad():
        for name, p in agent.critics.named_parameters():
            p.fill_(1.0 if name.endswith("weight") else 0.0)
    # Q_0 = o_0 + tanh(o_0) = 0.5 + 0.462117 = 0.962117: agent 1 is invisible; L = -0.962117 + 0.00025
    assert agent.actor_loss(0, _batch([0.0])).item() == pytest.approx(-0.961867, abs=1e-5)


def test_independent_ddpg_starts_from_maddpgs_actors_and_builds_each_critic_once():
    maddpg, iddpg = ContinuousMADDPG(3, 4, 2, seed=5), ContinuousIDDPG(3, 4, 2, seed=5)
    for p, q in zip(maddpg.actors.parameters(), iddpg.actors.parameters()):
        assert torch.equal(p, q)
    assert [c.mlp.in_dim for c in iddpg.critics] == [4 + 2] * 3  # O + A, built so: nothing was replaced
    assert [c.mlp.in_dim for c in iddpg.target_critics] == [4 + 2] * 3
    optimised = {id(p) for opt in iddpg.critic_optimizers for group in opt.param_groups for p in group["params"]}
    assert optimised == {id(p) for p in iddpg.critics.parameters()}  # the optimisers move these very critics


def test_act_is_the_tanh_policy_plus_clipped_noise():
    agent = ContinuousMADDPG(3, 4, 2, seed=0)
    obs = np.random.default_rng(0).normal(size=(5, 3, 4)).astype(np.float32)  # (K=5, N=3, O=4)
    mu = agent.act(obs)  # noise 0: the policy itself
    assert mu.shape == (5, 3, 2) and mu.dtype == np.float32
    expected = torch.tanh(agent.logits(torch.as_tensor(obs))).detach().numpy()  # (5, 3, 2)
    np.testing.assert_allclose(mu, expected, atol=1e-6)
    noisy = agent.act(obs, noise=10.0)
    assert noisy.min() >= -1 and noisy.max() <= 1 and np.isin(noisy, [-1.0, 1.0]).mean() > 0.8  # clipped
    again = ContinuousMADDPG(3, 4, 2, seed=0)
    state = again.generator.get_state()
    again.act(obs)  # the policy itself draws no noise: evaluating never shifts the exploration stream
    assert torch.equal(again.generator.get_state(), state)
    np.testing.assert_array_equal(again.act(obs, noise=10.0), noisy)  # the learner's generator: same seed, same
    for bad in (-0.1, float("nan"), True):
        with pytest.raises(ValueError, match="noise must be a non-negative number"):
            agent.act(obs, noise=bad)
    with pytest.raises(ValueError, match=r"obs: expected shape \(B, 3, 4\), got \(5, 2, 4\)"):
        agent.act(obs[:, :2])


def test_noise_schedule_by_hand():
    c = ContinuousMADDPGConfig(noise_start=0.5, noise_end=0.05, noise_fraction=0.7)
    # linear from 0.5 to 0.05 over the first 70% of training, then flat
    assert c.noise_at(0.0) == pytest.approx(0.5)
    assert c.noise_at(0.35) == pytest.approx(0.5 + (0.05 - 0.5) * 0.5)  # halfway: 0.275
    assert c.noise_at(0.7) == pytest.approx(0.05) and c.noise_at(1.0) == pytest.approx(0.05)
    assert ContinuousMADDPGConfig(noise_fraction=0.0).noise_at(0.0) == pytest.approx(0.05)  # no decay phase


@pytest.mark.parametrize("field, value, message", [
    ("actor_lr", -1e-3, "actor_lr must be a positive number"),
    ("critic_lr", float("nan"), "critic_lr must be a positive number"),
    ("gamma", 1.5, r"gamma must be a number in \[0, 1\]"),
    ("noise_start", -0.1, "noise_start must be a non-negative number"),
    ("batch_size", 0, "batch_size must be a positive int"),
    ("n_step", 3, "n_step must be 1 for continuous MADDPG"),
    ("warmup_steps", -1, "warmup_steps must be a non-negative int"),
    # the default replay holds 200,000 transitions: a warm-up of one more would never let an update start
    ("warmup_steps", 200_001, r"warmup_steps must be at most buffer_size \(200,000\), got 200,001"),
    ("buffer_size", 1_999, r"warmup_steps must be at most buffer_size \(1,999\), got 2,000"),  # the default warm-up
])
def test_bad_hyperparameters_raise(field, value, message):
    with pytest.raises(ValueError, match=message):
        ContinuousMADDPGConfig(**{field: value}).validate()


def test_vec_env_steps_particle_copies_with_forces():
    venv = make_vec_env("simple_spread_v3", n_envs=2, seed=0)
    assert venv.continuous and (venv.n_agents, venv.obs_dim, venv.action_dim) == (3, 18, 2)
    obs = venv.reset()
    assert obs.shape == (2, 3, 18)
    for t in range(1, 26):
        obs, rewards, dones, info = venv.step(np.zeros((2, 3, 2), dtype=np.float32))
        assert rewards.shape == (2, 3) and info["collisions"].shape == (2,)
        assert info["episode_done"].tolist() == [t == 25] * 2  # the 25-step limit, in every copy
    assert not info["terminated"].any() and info["truncated"].all()  # a truncation, not a terminal state
    assert not np.allclose(obs, info["final_obs"])  # obs is already the next episode's start
    with pytest.raises(ValueError, match=r"actions: expected shape \(2, 3, 2\)"):
        venv.step(np.zeros((2, 3), dtype=np.float32))
    with pytest.raises(ValueError, match=r"actions must be in \[-1, 1\]"):
        venv.step(np.full((2, 3, 2), 2.0, dtype=np.float32))


def test_run_episode_keeps_forces_and_the_papers_metrics():
    env = make_env("simple_spread_v3", seed=0)
    episode = run_episode(env, lambda obs: np.full((3, 2), 0.5, dtype=np.float32))
    assert episode.actions.shape == (25, 3, 2) and episode.actions.dtype == np.float32
    assert episode.metrics["landmark_distance"].shape == (25,) and episode.metrics["collisions"].shape == (25,)
    assert episode.metrics["agent_collisions"].shape == (25, 3)


def test_train_continuous_is_deterministic_and_checks_its_env():
    config = ContinuousMADDPGConfig(n_envs=2, batch_size=32, warmup_steps=32, hidden=16)
    runs = [train("maddpg_continuous", episodes=4, config=config, seed=5, eval_every=2, eval_episodes=1, progress=False)
            for _ in range(2)]
    assert runs[0].updates > 0 and len(runs[0].episode_returns) == 4 and len(runs[0].evaluations) == 2
    assert runs[0].episode_returns == runs[1].episode_returns and runs[0].evaluations == runs[1].evaluations
    with pytest.raises(ValueError, match="acts with continuous forces on the particle envs"):
        train("maddpg_continuous", "Switch2-v0", episodes=1, progress=False)
    with pytest.raises(ValueError, match="needs a particle env"):
        evaluate_particle(lambda obs: np.zeros(2, dtype=np.int64), "Switch2-v0", episodes=1)


def test_evaluation_compares_policies_on_the_same_start_states():
    still = evaluate_particle(lambda obs: np.zeros((3, 2), dtype=np.float32), episodes=3)
    assert still == evaluate_particle(lambda obs: np.zeros((3, 2), dtype=np.float32), episodes=3)
    # standing still: the reward is -0.5 * landmark distance - 0.5 * own collisions for each of the 3 agents,
    # so the team return is -1.5 * (sum over steps of the distance) - 0.5 * (each agent's collisions, summed)
    assert still.team_return <= -1.5 * 25 * still.landmark_distance + 1e-3


def test_team_reward_must_be_a_bool():
    with pytest.raises(ValueError, match="team_reward must be True or False"):
        ContinuousMADDPGConfig(team_reward="yes").validate()

def _forces_batch(B=8, N=3, O=4, A=2) -> dict[str, np.ndarray]:
    """A replay batch of forces in [-1, 1], as ReplayBuffer.sample gives it (numpy)."""
    rng = np.random.default_rng(0)
    return {"obs": rng.normal(size=(B, N, O)).astype(np.float32), "actions": rng.uniform(-1, 1, (B, N, A)),
            "rewards": rng.normal(size=(B, N)), "next_obs": rng.normal(size=(B, N, O)), "dones": np.zeros((B, N))}


def _nan_at(key, index):
    def change(batch):
        array = batch[key].copy()
        array[index] = np.nan
        return batch | {key: array}
    return change


BAD_FORCE_BATCHES = {
    "a missing key": (lambda b: {k: v for k, v in b.items() if k != "dones"}, r"batch is missing \['dones'\]"),
    "action indices": (lambda b: b | {"actions": np.zeros((8, 3), dtype=np.int64)},
                       r"batch\['actions'\]: expected shape \(B=8, N=3, A=2\) \(3 dims\), got \(8, 3\) \(2 dims\)"),
    "wrong A": (lambda b: b | {"actions": np.zeros((8, 3, 5))},
                r"batch\['actions'\]: expected shape \(B=8, N=3, A=2\), got \(8, 3, 5\)"),
    "NaN force": (_nan_at("actions", (5, 2, 1)), r"batch\['actions'\] must be finite, got 1 NaN and 0 infinite of 48 "
                                                 r"entries, the first at index \(5, 2, 1\)"),
    "NaN reward": (_nan_at("rewards", (0, 0)), r"batch\['rewards'\] must be finite, got 1 NaN"),
    "rewards (B,)": (lambda b: b | {"rewards": b["rewards"].sum(1)},
                     r"batch\['rewards'\]: expected shape \(B=8, N=3\) \(2 dims\), got \(8,\) \(1 dims\)"),
    "dones of -1": (lambda b: b | {"dones": -np.ones((8, 3))}, r"batch\['dones'\] must be 0 or 1 in every entry"),
}


@pytest.mark.parametrize("case", BAD_FORCE_BATCHES)
@pytest.mark.parametrize("learner", [ContinuousMADDPG, ContinuousIDDPG])
def test_update_refuses_a_bad_batch_and_takes_forces_that_are_not_one_hot(learner, case):
    agent = learner(3, 4, 2, ContinuousMADDPGConfig(hidden=8), seed=0)
    before = {key: value.clone() for key, value in agent.actors.state_dict().items()}
    change, message = BAD_FORCE_BATCHES[case]
    with pytest.raises(ValueError, match=message):
        agent.update(change(_forces_batch()))
    assert agent.updates == 0 and all(torch.equal(before[k], v) for k, v in agent.actors.state_dict().items())
    agent.update(_forces_batch())  # float64 forces in [-1, 1], not one-hot: accepted
    assert agent.updates == 1


def test_an_actor_with_nan_weights_cannot_act_or_be_evaluated():
    agent = ContinuousMADDPG(3, 18, 2, seed=0)
    with torch.no_grad():
        agent.actors[0].mlp.net[2].bias[1] = np.inf
    # relu(inf) reaches the last layer and the tanh would make +-1 of it: the check looks before the tanh
    with pytest.raises(ValueError, match=r"^the actors' outputs are not finite although the observations are: the "
                                         r"weights \['0.mlp.net.2.bias'\] hold NaN or infinity"):
        agent.act(np.zeros((2, 3, 18), dtype=np.float32), noise=0.1)
    with pytest.raises(ValueError, match=r"the actors' outputs are not finite"):
        evaluate_particle(agent.greedy_policy(), "simple_spread_v3", episodes=1)
