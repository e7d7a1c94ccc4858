"""IPPO and MAPPO (marl_edu.learners.ppo): GAE and the clipped surrogate against values worked out by hand, bad inputs, and the
learners' update, values and determinism."""

from __future__ import annotations

import math

import pytest
import torch

from marl_edu.data.rollout import collect_episodes
from marl_edu.envs.make import make_vec_env
from marl_edu.learners.ppo import (IPPO, MAPPO, PPOConfig, approx_kl, clipped_surrogate_loss, gae_advantages,
                                   ppo_update)
from marl_edu.pieces.targets import td_lambda_targets


def _gae_case():
    """One episode (B = 1) of T = 3 steps, N = 2 agents, the team reward r = (1, 0, 2) in both rows."""
    rewards = torch.tensor([[[1.0, 1.0], [0.0, 0.0], [2.0, 2.0]]])  # (1, 3, 2)
    values = torch.tensor([[[0.5, 0.0], [1.0, 0.0], [0.0, 0.0], [4.0, 0.0]]])  # (1, 4, 2): agent 0's V, agent 1's 0
    return rewards, values


def test_gae_by_hand_with_a_time_limit_end_that_bootstraps():
    # gamma = 0.9, lambda = 0.5, so gamma lambda = 0.45; no terminal step: the last step bootstraps from V_3 = 4.
    # agent 0: delta_2 = 2 + 0.9 * 4.0 - 0.0 = 5.6;  delta_1 = 0 + 0.9 * 0.0 - 1.0 = -1.0;
    #          delta_0 = 1 + 0.9 * 1.0 - 0.5 = 1.4
    #          Adv_2 = 5.6;  Adv_1 = -1.0 + 0.45 * 5.6 = 1.52;  Adv_0 = 1.4 + 0.45 * 1.52 = 2.084
    # agent 1 (V = 0): delta = r = (1, 0, 2);  Adv_2 = 2;  Adv_1 = 0 + 0.45 * 2 = 0.9;  Adv_0 = 1 + 0.45 * 0.9 = 1.405
    rewards, values = _gae_case()
    dones = torch.zeros(1, 3)
    adv = gae_advantages(rewards, values, dones, gamma=0.9, lam=0.5)
    assert adv.shape == (1, 3, 2)
    assert torch.allclose(adv[0, :, 0], torch.tensor([2.084, 1.52, 5.6]))
    assert torch.allclose(adv[0, :, 1], torch.tensor([1.405, 0.9, 2.0]))


def test_gae_by_hand_with_a_terminal_step_and_padding_after_it():
    # dones = (0, 1, 1): the episode ends at step 1 (d_1 = 1), step 2 is padding (d_2 = 1).
    # agent 0: delta_1 = 0 + 0 - 1.0 = -1.0 (no bootstrap);  Adv_1 = -1.0 (the recursion is cut: nothing from step 2)
    #          Adv_0 = (1 + 0.9 * 1.0 - 0.5) + 0.45 * (-1.0) = 1.4 - 0.45 = 0.95
    rewards, values = _gae_case()
    adv = gae_advantages(rewards, values, torch.tensor([[0.0, 1.0, 1.0]]), gamma=0.9, lam=0.5)
    assert torch.allclose(adv[0, :2, 0], torch.tensor([0.95, -1.0]))
    assert torch.allclose(adv[0, :2, 1], torch.tensor([1.0, 0.0]))  # agent 1: Adv_1 = r_1 = 0, Adv_0 = 1 + 0.45 * 0


def test_gae_is_the_td_lambda_target_less_v():
    # GAE(lambda) telescopes into the lambda-return of notebook 06 (td_lambda_targets with next values V_{t+1})
    # minus V_t: the critic's target G = Adv + V is that lambda-return.
    g = torch.Generator().manual_seed(0)
    rewards, values = torch.randn(4, 6, 3, generator=g), torch.randn(4, 7, 3, generator=g)
    dones = torch.zeros(4, 6)
    dones[1, 2:] = 1.0  # an episode that ended at step 2, padded after
    adv = gae_advantages(rewards, values, dones, gamma=0.95, lam=0.7)
    lam_return = td_lambda_targets(rewards.transpose(1, 2), dones.unsqueeze(1).expand(4, 3, 6),
                                   values[:, 1:].transpose(1, 2), 0.95, 0.7).transpose(1, 2)  # (4, 6, 3)
    assert torch.allclose(adv + values[:, :-1], lam_return, atol=1e-5)


@pytest.mark.parametrize("change, message", [
    (lambda r, v, d: (r, v[:, :-1], d), "values"),  # (B, T, N) instead of (B, T+1, N)
    (lambda r, v, d: (r.long(), v, d), "rewards"),
    (lambda r, v, d: (r, v.clone().fill_(math.nan), d), "values"),
    (lambda r, v, d: (r, v, d + 0.5), "dones"),
    (lambda r, v, d: (r, v, d[:, :2]), "dones"),
])
def test_gae_names_a_bad_input(change, message):
    rewards, values = _gae_case()
    with pytest.raises(ValueError, match=message):
        gae_advantages(*change(rewards, values, torch.zeros(1, 3)), gamma=0.9, lam=0.5)


@pytest.mark.parametrize("gamma, lam, name", [(1.5, 0.5, "gamma"), (0.9, -0.1, "lam"), (0.9, math.nan, "lam")])
def test_gae_names_an_out_of_range_hyperparameter(gamma, lam, name):
    rewards, values = _gae_case()
    with pytest.raises(ValueError, match=name):
        gae_advantages(rewards, values, torch.zeros(1, 3), gamma, lam)


def _clip_case():
    """Three steps of two agents: ratios, advantages and the mask (agent 1 has arrived before step 2)."""
    ratio = torch.tensor([[[1.5, 0.7], [0.5, 1.3], [1.1, 1.0]]])  # (1, 3, 2)
    advantage = torch.tensor([[[2.0, -2.0], [1.0, -1.0], [-1.0, 3.0]]])  # (1, 3, 2)
    mask = torch.tensor([[[1.0, 1.0], [1.0, 1.0], [1.0, 0.0]]])  # (1, 3, 2)
    old_log_prob = torch.log(torch.full((1, 3, 2), 0.4))
    log_prob = (old_log_prob + torch.log(ratio)).requires_grad_()  # log pi_theta = log pi_old + log rho
    return log_prob, old_log_prob, advantage, mask


def test_clipped_surrogate_by_hand_on_three_steps_of_two_agents():
    # c = 0.2: rho clipped to [0.8, 1.2]; per step min(rho Adv, clip(rho) Adv):
    #   agent 0, t=0: rho 1.5, Adv  2: min(3.0, 1.2 *  2 =  2.4) =  2.4  (clipped: no gradient)
    #   agent 0, t=1: rho 0.5, Adv  1: min(0.5, 0.8 *  1 =  0.8) =  0.5
    #   agent 0, t=2: rho 1.1, Adv -1: min(-1.1, 1.1 * -1 = -1.1) = -1.1
    #   agent 1, t=0: rho 0.7, Adv -2: min(-1.4, 0.8 * -2 = -1.6) = -1.6  (clipped: no gradient)
    #   agent 1, t=1: rho 1.3, Adv -1: min(-1.3, 1.2 * -1 = -1.2) = -1.3  (the unclipped, pessimistic one)
    #   agent 1, t=2: masked out (arrived)
    # loss = -(2.4 + 0.5 - 1.1 - 1.6 - 1.3) / 5 = -(-1.1) / 5 = 0.22
    log_prob, old_log_prob, advantage, mask = _clip_case()
    loss = clipped_surrogate_loss(log_prob, old_log_prob, advantage, mask, clip=0.2)
    assert loss.item() == pytest.approx(0.22, abs=1e-6)
    loss.backward()
    # d loss / d log pi = -(rho Adv) / 5 where the unclipped term is the min, 0 where the clipped one is (or masked):
    #   agent 0: (0, -0.5 / 5, 1.1 / 5) = (0, -0.1, 0.22);  agent 1: (0, 1.3 / 5, 0) = (0, 0.26, 0)
    expected = torch.tensor([[[0.0, 0.0], [-0.1, 0.26], [0.22, 0.0]]])
    assert torch.allclose(log_prob.grad, expected, atol=1e-6)


def test_a_ratio_of_one_is_the_plain_policy_gradient_loss():
    # At the first minibatch of the first epoch pi_theta = pi_old: rho = 1 everywhere, nothing is clipped, and the
    # loss is -mean Adv over the masked steps: -(2 - 2 + 1 - 1 - 1) / 5 = 0.2
    _, old_log_prob, advantage, mask = _clip_case()
    loss = clipped_surrogate_loss(old_log_prob.clone(), old_log_prob, advantage, mask, clip=0.2)
    assert loss.item() == pytest.approx(0.2, abs=1e-6)


@pytest.mark.parametrize("clip", [0.0, 1.0, 1.5, -0.2, math.nan, "0.2"])
def test_a_clip_outside_zero_one_is_named(clip):
    log_prob, old_log_prob, advantage, mask = _clip_case()
    with pytest.raises(ValueError, match="clip"):
        clipped_surrogate_loss(log_prob, old_log_prob, advantage, mask, clip)


def test_the_clipped_loss_names_a_wrong_shape():
    log_prob, old_log_prob, advantage, mask = _clip_case()
    with pytest.raises(ValueError, match="advantage"):
        clipped_surrogate_loss(log_prob, old_log_prob, advantage[:, :2], mask, 0.2)


@pytest.mark.parametrize("field, value", [("clip", 1.0), ("epochs", 0), ("minibatches", 17), ("lam", 1.2),
                                          ("actor_lr", -1e-3), ("normalise_advantages", 1), ("entropy_start", -0.1)])
def test_the_config_names_a_bad_value(field, value):
    with pytest.raises(ValueError, match=field):
        PPOConfig(**{field: value}).validate()


def test_mappo_takes_the_team_reward_only_and_ippo_either():
    with pytest.raises(ValueError, match="MAPPO learns the team reward only"):
        MAPPO(2, 2, 5, PPOConfig(team_reward=False))
    assert IPPO(2, 2, 5, PPOConfig(team_reward=False)).config.team_reward is False


def _batch(learner, seed=0, n_envs=4):
    venv = make_vec_env("Switch2-v0", n_envs, seed)
    batch, _, _ = collect_episodes(learner, venv, epsilon=0.0)
    return batch


def test_mappo_values_are_one_v_of_the_state_in_every_row_and_ippo_values_are_each_agents_own():
    config = PPOConfig(hidden=16, n_envs=4)
    mappo, ippo = MAPPO(2, 2, 5, config, seed=1), IPPO(2, 2, 5, config, seed=1)
    batch = _batch(mappo)
    obs, actions = batch["obs"], batch["actions"]  # (B, T+1, N, O), (B, T+1, N)
    v = mappo.values(obs, actions)  # (B, T+1, N)
    assert v.shape == actions.shape and torch.equal(v[..., 0], v[..., 1])
    B, T1, N, O = obs.shape
    state = obs.reshape(B, T1, N * O)  # (B, T+1, S)
    assert torch.allclose(v[..., 0], mappo.critic(state.reshape(B * T1, N * O)).reshape(B, T1))
    # IPPO's GRU value, replayed in one unroll, against its step-by-step forward over the same inputs
    vi = ippo.values(obs, actions)  # (B, T+1, N)
    h = ippo.critic.initial_hidden(B * N)
    last = torch.full((B, N), -1)
    for t in range(T1):
        x = ippo.actor_input(obs[:, t], last)  # (B*N, O+A+N): the actor's input, the critic's own weights
        out, h = ippo.critic(x, h)  # (B*N, 1)
        assert torch.allclose(vi[:, t], out.reshape(B, N), atol=1e-5)
        last = actions[:, t]


@pytest.mark.parametrize("learner", [MAPPO, IPPO])
def test_an_update_moves_both_networks_and_is_the_same_for_a_seed(learner):
    config = PPOConfig(hidden=16, n_envs=4, normalise_advantages=True)
    agents = [learner(2, 2, 5, config, seed=3) for _ in range(2)]
    before = {k: v.clone() for k, v in agents[0].actor.state_dict().items()}
    critic_before = {k: v.clone() for k, v in agents[0].critic.state_dict().items()}
    stats = [agent.update(_batch(agent, seed=5)) for agent in agents]
    assert stats[0] == stats[1] and set(stats[0]) == {"critic_loss", "actor_loss", "entropy", "actor_steps"}
    assert stats[0]["actor_steps"] == config.epochs * config.minibatches  # (no target_kl: every step)
    assert all(math.isfinite(value) for value in stats[0].values())
    assert any(not torch.equal(before[k], v) for k, v in agents[0].actor.state_dict().items())
    assert any(not torch.equal(critic_before[k], v) for k, v in agents[0].critic.state_dict().items())
    for key, value in agents[0].state_dict()["actor"].items():
        assert torch.equal(value, agents[1].state_dict()["actor"][key])
    assert agents[0].updates == 1


def test_an_update_names_a_bad_batch():
    agent = MAPPO(2, 2, 5, PPOConfig(hidden=16, n_envs=4))
    batch = _batch(agent)
    batch["rewards"] = batch["rewards"].clone().fill_(math.nan)
    with pytest.raises(ValueError, match="rewards"):
        agent.update(batch)


def test_advantages_are_normalised_over_the_acting_steps_by_hand():
    # acting steps hold 1.0, 0.5, -0.5, 2.0 (mask 1); two padded entries hold 9.0 and -9.0 (mask 0).
    # mean = (1.0 + 0.5 - 0.5 + 2.0) / 4 = 0.75; deviations 0.25, -0.25, -1.25, 1.25;
    # variance = (0.0625 + 0.0625 + 1.5625 + 1.5625) / 4 = 0.8125, std = 0.901388;
    # normalised: 0.25 / 0.901388 = 0.277350, -0.277350, -1.386750, 1.386750
    from marl_edu.learners.ppo import normalised_advantages

    advantage = torch.tensor([[[1.0, 0.5], [-0.5, 2.0], [9.0, -9.0]]])  # (1, 3, 2)
    mask = torch.tensor([[[1.0, 1.0], [1.0, 1.0], [0.0, 0.0]]])
    out = normalised_advantages(advantage, mask)
    assert torch.allclose(out[0, :2].flatten(), torch.tensor([0.277350, -0.277350, -1.386750, 1.386750]), atol=1e-5)
    assert (out * mask).sum().abs() < 1e-6  # the masked mean is 0: the check the pitfall of notebook 13 uses
    # over every entry (the pitfall) the padding moves the mean to (1.0 + 0.5 - 0.5 + 2.0 + 9.0 - 9.0) / 6 = 0.5
    # and the step holding 0.5 becomes 0 instead of -0.28
    wrong = (advantage - advantage.mean()) / advantage.std()
    assert wrong[0, 0, 1].abs() < 1e-6 and out[0, 0, 1] < -0.27


@pytest.mark.parametrize("change, message", [
    (lambda a, m: (a[:, :2], m), "mask"),
    (lambda a, m: (a.clone().fill_(math.nan), m), "advantage"),
    (lambda a, m: (a, m * 0.5), "mask"),
    (lambda a, m: (a.long(), m), "advantage"),
])
def test_normalised_advantages_name_a_bad_input(change, message):
    from marl_edu.learners.ppo import normalised_advantages

    with pytest.raises(ValueError, match=message):
        normalised_advantages(*change(torch.ones(1, 3, 2), torch.ones(1, 3, 2)))


def _one_step_learner():
    """A learner ppo_update can train, with one weight in its actor (theta: log pi = theta) and one in its critic
    (w: V = w at every index), stepped by plain SGD at lr 0.1, so an update can be followed by hand."""
    from types import SimpleNamespace

    actor, critic = torch.nn.Module(), torch.nn.Module()
    actor.theta, critic.w = torch.nn.Parameter(torch.tensor(0.0)), torch.nn.Parameter(torch.tensor(0.5))
    config = SimpleNamespace(gamma=0.9, lam=0.95, clip=0.2, epochs=1, minibatches=1, normalise_advantages=False,
                             grad_clip=10.0, team_reward=True, target_kl=0.0)
    return SimpleNamespace(config=config, generator=torch.Generator().manual_seed(0), device=torch.device("cpu"),
                           actor=actor, critic=critic, updates=0,
                           actor_optimizer=torch.optim.SGD(actor.parameters(), lr=0.1),
                           critic_optimizer=torch.optim.SGD(critic.parameters(), lr=0.1))


@pytest.mark.parametrize("per_step", [True, False])  # H per step (categorical) or one 0-d H (the Gaussian)
def test_ppo_update_by_hand(per_step):
    learner = _one_step_learner()
    theta, w = learner.actor.theta, learner.critic.w

    def policy(idx):  # log pi = theta at the one step of the one episode, H = 2
        entropy = (theta * 0.0 + 2.0).expand(1, 1, 1) if per_step else theta * 0.0 + 2.0
        return theta.expand(1, 1, 1), entropy

    ones = torch.ones(1, 1, 1)  # (B, T, N) = (1, 1, 1)
    stats = ppo_update(learner, policy, lambda idx: w.expand(1, 2, 1), torch.ones(1, 1, 1), torch.ones(1, 1), ones,
                       ones, entropy_coef=0.1)
    # V_old = 0.5; a terminal step: delta = r - V = 1 - 0.5 = 0.5 = Adv; the return G = Adv + V_old = 1.0
    # actor: rho = exp(theta - theta_old) = 1, surrogate min(1 * 0.5, clip(1, 0.8, 1.2) * 0.5) = 0.5, beta H = 0.1 * 2
    assert stats["actor_loss"] == pytest.approx(-0.5 - 0.2) and stats["entropy"] == 2.0
    # d loss / d theta = -rho Adv = -0.5: theta <- 0 - 0.1 * (-0.5) = 0.05
    assert theta.item() == pytest.approx(0.05)
    # critic: (w - G)^2 = (0.5 - 1)^2 = 0.25, d / dw = 2 (w - G) = -1: w <- 0.5 - 0.1 * (-1) = 0.6
    assert stats["critic_loss"] == pytest.approx(0.25) and w.item() == pytest.approx(0.6)
    assert learner.updates == 1


def test_the_approximate_kl_by_hand():
    # k3 = (rho - 1) - log rho per acting step, rho = pi / pi_old: rho = 0.5 / 0.25 = 2 -> (2 - 1) - ln 2 = 0.306853;
    # rho = 1 -> 0; the third step is nobody's (mask 0): the mean over the two acting steps is 0.306853 / 2
    log_prob = torch.log(torch.tensor([0.5, 0.25, 0.5])).view(1, 3, 1)  # (B, T, N) = (1, 3, 1)
    old_log_prob = torch.log(torch.tensor([0.25, 0.25, 0.1])).view(1, 3, 1)  # (1, 3, 1)
    mask = torch.tensor([1.0, 1.0, 0.0]).view(1, 3, 1)  # (1, 3, 1)
    assert approx_kl(log_prob, old_log_prob, mask).item() == pytest.approx((1.0 - math.log(2.0)) / 2, abs=1e-6)
    assert approx_kl(old_log_prob, old_log_prob, mask).item() == 0.0  # the policy the batch was played with
    with pytest.raises(ValueError, match=r"^old_log_prob: expected shape \(1, 3, 1\)"):
        approx_kl(log_prob, old_log_prob.view(1, 1, 3), mask)


@pytest.mark.parametrize("target_kl, actor_steps", [(0.0, 3), (0.001, 2), (0.0005, 1)])
def test_a_target_kl_stops_the_update_s_actor_steps_and_not_the_critic_s(target_kl, actor_steps):
    learner = _one_step_learner()
    learner.config.epochs, learner.config.target_kl = 3, target_kl
    theta, w = learner.actor.theta, learner.critic.w
    with torch.no_grad():
        theta.fill_(-1.0)  # log pi_old = -1

    def policy(idx):  # log pi = theta at the one step of the one episode (a new tensor, as a network's), H = 2
        return (theta * 1.0).expand(1, 1, 1), (theta * 0.0 + 2.0).expand(1, 1, 1)

    ones = torch.ones(1, 1, 1)
    stats = ppo_update(learner, policy, lambda idx: w.expand(1, 2, 1), ones, torch.ones(1, 1), ones, ones, 0.1)
    # Adv = 1 - 0.5 = 0.5 and each actor step adds 0.1 rho Adv to theta (rho inside the clip range [0.8, 1.2]):
    # epoch 1: rho = 1, KL 0 -> theta = -1 + 0.05 = -0.95
    # epoch 2: log rho = 0.05, KL = e^0.05 - 1 - 0.05 = 0.001271: over 1.5 x 0.0005 = 0.00075, under 1.5 x 0.001
    #   -> with 0.001 a step: theta = -0.95 + 0.1 * e^0.05 * 0.5 = -0.897436
    # epoch 3: log rho = 0.102564, KL = e^0.102564 - 1 - 0.102564 = 0.005444: over 0.0015 -> stopped
    thetas = {1: -0.95, 2: -0.95 + 0.05 * math.exp(0.05)}
    thetas[3] = thetas[2] + 0.05 * math.exp(thetas[2] + 1.0)
    assert stats["actor_steps"] == actor_steps and theta.item() == pytest.approx(thetas[actor_steps], abs=1e-6)
    # the loss and entropy of the last minibatch the actor was evaluated on (the one that stopped it, if one did):
    # -rho Adv - beta H, rho = e^(theta + 1) there: epoch 3's at theta_2 (3 steps: stepped; 2: stopped), or epoch 2's at
    # theta_1 (1 step: stopped there, epoch 3 never evaluated)
    rho = math.exp(thetas[min(actor_steps, 2)] + 1.0)
    assert stats["actor_loss"] == pytest.approx(-rho * 0.5 - 0.1 * 2.0, abs=1e-6) and stats["entropy"] == 2.0
    # the critic takes its three steps whatever the actor does: w <- w - 0.1 * 2 (w - 1): 0.5 -> 0.6 -> 0.68 -> 0.744
    assert w.item() == pytest.approx(0.744, abs=1e-6) and learner.updates == 1


def test_a_first_minibatch_already_past_the_target_kl_leaves_the_actor_where_it_was():
    # pi_old from the whole batch and a minibatch's pi can differ in the last bits (batches of other sizes round
    # otherwise): here by 1e-3 in log pi, so the KL e^0.001 - 1 - 0.001 = 5.0e-7 is over 1.5 x 1e-7 from the start
    learner = _one_step_learner()
    learner.config.epochs, learner.config.target_kl = 2, 1e-7
    theta, w = learner.actor.theta, learner.critic.w
    with torch.no_grad():
        theta.fill_(-1.0)

    def policy(idx):  # (1, 1, 1) each: log pi (1e-3 over pi_old's in a minibatch) and H = 2
        shift = 0.0 if isinstance(idx, slice) else 1e-3
        return (theta + shift).expand(1, 1, 1), (theta * 0.0 + 2.0).expand(1, 1, 1)

    ones = torch.ones(1, 1, 1)  # (B, T, N) = (1, 1, 1)
    stats = ppo_update(learner, policy, lambda idx: w.expand(1, 2, 1), ones, torch.ones(1, 1), ones, ones, 0.1)
    assert stats["actor_steps"] == 0 and theta.item() == -1.0  # no actor step at all
    assert stats["actor_loss"] == pytest.approx(-math.exp(1e-3) * 0.5 - 0.2, abs=1e-6)  # evaluated, not stepped
    assert w.item() == pytest.approx(0.68, abs=1e-6)  # the critic's two steps: 0.5 -> 0.6 -> 0.68


def test_the_approximate_kl_of_a_minibatch_where_nobody_acts_is_zero():
    log_prob, old_log_prob = torch.zeros(1, 2, 1), torch.full((1, 2, 1), -1.0)  # (B, T, N) each
    assert approx_kl(log_prob, old_log_prob, torch.zeros(1, 2, 1)).item() == 0.0  # nobody acts: no evidence


def test_ppo_update_bad_inputs():
    learner = _one_step_learner()
    policy, values = (lambda idx: (learner.actor.theta.expand(1, 1, 1), learner.actor.theta * 0.0),
                      lambda idx: learner.critic.w.expand(1, 2, 1))
    ones = torch.ones(1, 1, 1)
    with pytest.raises(ValueError, match=r"^rewards: expected shape \(B, T, N\)"):
        ppo_update(learner, policy, values, torch.ones(1, 1), torch.ones(1, 1), ones, ones, 0.1)
    with pytest.raises(ValueError, match=r"^critic_mask: expected shape \(1, 1, 1\)"):
        ppo_update(learner, policy, values, ones, torch.ones(1, 1), ones, torch.ones(1, 1), 0.1)
    with pytest.raises(ValueError, match=r"^actor_mask must be 0 or 1 in every entry, got 0.5"):
        ppo_update(learner, policy, values, ones, torch.ones(1, 1), ones * 0.5, ones, 0.1)
    assert learner.updates == 0 and learner.actor.theta.item() == 0.0  # refused before any step


@pytest.mark.parametrize("field, value, message", [
    ("actor_lr", 0.0, r"^actor_lr must be a positive number"), ("critic_lr", -1.0, r"^critic_lr must be a positive"),
    ("grad_clip", 0.0, r"^grad_clip must be a positive"), ("clip", 1.0, r"^clip must be in \(0, 1\)"),
    ("gamma", 1.5, r"^gamma must be a number in \[0, 1\]"), ("lam", -0.1, r"^lam must be a number in \[0, 1\]"),
    ("hidden", 0, r"^hidden must be"), ("n_envs", 2.5, r"^n_envs must be"), ("epochs", 0, r"^epochs must be"),
    ("minibatches", 17, r"^minibatches must be"),  # more groups than the 16 episodes of a batch
    ("normalise_advantages", 1, r"^normalise_advantages must be True or False"),
    ("team_reward", "yes", r"^team_reward must be True or False"),
    ("target_kl", -0.01, r"^target_kl must be a non-negative number"), ("target_kl", math.nan, r"^target_kl must be"),
])
def test_both_ppo_configs_check_their_shared_fields_alike(field, value, message):
    from marl_edu.learners.ppo_continuous import ContinuousPPOConfig

    for config_class in (PPOConfig, ContinuousPPOConfig):
        with pytest.raises(ValueError, match=message):
            config_class(**{field: value}).validate()


@pytest.mark.parametrize("name, value, message", [
    ("log_prob", math.nan, r"^log_prob must be finite, got 1 NaN and 0 infinite of 6 entries, the first at index "
                           r"\(0, 1, 0\)$"),
    ("old_log_prob", -math.inf, r"^old_log_prob must be finite, got 0 NaN and 1 infinite"),
    ("advantage", math.inf, r"^advantage must be finite, got 0 NaN and 1 infinite"),
    ("log_prob", 5.0, r"^log_prob must be log-probabilities, at most 0, got 5 at index \(0, 1, 0\)"),
    ("old_log_prob", 0.5, r"^old_log_prob must be log-probabilities, at most 0, got 0.5 at index \(0, 1, 0\)"),
    ("mask", 2.0, r"^mask must be 0 or 1 in every entry, got 2.0 at index \(0, 1, 0\)"),
    ("mask", -1.0, r"^mask must be 0 or 1 in every entry, got -1.0 at index \(0, 1, 0\)"),
])
def test_the_clipped_loss_names_a_non_finite_or_impossible_input(name, value, message):
    inputs = dict(zip(("log_prob", "old_log_prob", "advantage", "mask"), _clip_case()))
    inputs[name] = inputs[name].detach().clone()
    inputs[name][0, 1, 0] = value
    with pytest.raises(ValueError, match=message):
        clipped_surrogate_loss(**inputs, clip=0.2)


def test_a_log_density_may_be_positive():
    # a Gaussian's log-density is not a log-probability: density=True takes log pi > 0. Both shifted by +5, the
    # ratios and so the loss are the hand-worked 0.22 of the three steps above
    log_prob, old_log_prob, advantage, mask = _clip_case()
    loss = clipped_surrogate_loss(log_prob + 5.0, old_log_prob + 5.0, advantage, mask, clip=0.2, density=True)
    assert loss.item() == pytest.approx(0.22, abs=1e-6)
    with pytest.raises(ValueError, match="density must be True or False"):
        clipped_surrogate_loss(log_prob, old_log_prob, advantage, mask, clip=0.2, density=1)


def test_normalised_advantages_without_a_spread_are_only_centred():
    from marl_edu.learners.ppo import normalised_advantages

    advantage = torch.tensor([[[1.0, 0.5], [-0.5, 2.0], [9.0, -9.0]]])  # (1, 3, 2), as in the by-hand case above
    # no acting step: the masked mean is 0 and there is no spread: the advantages come back as they are (not * 1e8)
    assert torch.equal(normalised_advantages(advantage, torch.zeros(1, 3, 2)), advantage)
    # one acting step, holding 1.0: mean 1.0, std 0, so centred only: 1.0 - 1.0 = 0 there, every other entry less 1.0
    one = torch.zeros(1, 3, 2)
    one[0, 0, 0] = 1.0
    assert normalised_advantages(advantage, one).flatten().tolist() == [0.0, -0.5, -1.5, 1.0, 8.0, -10.0]
    # two acting steps alike (0.5 and 0.5, the others masked): std 0 again, centred only: 0.5 - 0.5 = 0 at both
    alike = torch.tensor([[[0.5, 0.5], [3.0, 4.0], [5.0, 6.0]]])
    two = torch.tensor([[[1.0, 1.0], [0.0, 0.0], [0.0, 0.0]]])
    assert normalised_advantages(alike, two).flatten().tolist() == [0.0, 0.0, 2.5, 3.5, 4.5, 5.5]


def test_gae_names_an_episode_without_a_step_and_an_overflow():
    with pytest.raises(ValueError, match=r"^rewards: expected T >= 1 steps, got shape \(1, 0, 2\)"):
        gae_advantages(torch.zeros(1, 0, 2), torch.zeros(1, 1, 2), torch.zeros(1, 0), gamma=0.9, lam=0.5)
    # finite rewards of 3e38 (float32 holds up to 3.4e38): delta_2 = 3e38 + 0.99 * 3e38 overflows to inf
    with pytest.raises(ValueError, match=r"^the advantages of these rewards and values must be finite, got 0 NaN and "
                                         r"\d+ infinite .*: rewards or values too large for float32"):
        gae_advantages(torch.full((1, 3, 2), 3e38), torch.full((1, 4, 2), 3e38), torch.zeros(1, 3), 0.99, 0.95)
