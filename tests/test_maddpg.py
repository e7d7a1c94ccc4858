import numpy as np
import pytest
import torch

from marl_edu.learners.maddpg import MADDPG, MADDPGConfig, flatten_for_critic, gumbel_softmax
from batches import entry_set, replay_batch


def test_gumbel_hard_is_one_hot_forward_with_a_soft_gradient():
    logits = torch.tensor([[0.0, 1.0, 2.0], [3.0, 0.0, 0.0]], requires_grad=True)  # (B=2, A=3)
    y = gumbel_softmax(logits, temperature=1.0, hard=True, generator=torch.Generator().manual_seed(0))
    assert ((y == 0) | (y == 1)).all() and y.sum(dim=1).tolist() == [1.0, 1.0]  # one-hot rows
    (y * torch.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert logits.grad.abs().sum() > 0  # the gradient is the soft sample's, not zero


def test_gumbel_samples_follow_the_softmax():
    # logits log([0.2, 0.3, 0.5]) -> hard samples land on each action with those probabilities
    logits = torch.log(torch.tensor([0.2, 0.3, 0.5])).expand(20_000, 3)
    y = gumbel_softmax(logits, hard=True, generator=torch.Generator().manual_seed(1))
    np.testing.assert_allclose(y.mean(dim=0).numpy(), [0.2, 0.3, 0.5], atol=0.015)


def test_gumbel_soft_and_bad_inputs():
    y = gumbel_softmax(torch.zeros(4, 5), temperature=0.5, hard=False, generator=torch.Generator().manual_seed(0))
    assert torch.allclose(y.sum(dim=1), torch.ones(4)) and (y < 1).all()  # probability rows, not one-hot
    with pytest.raises(ValueError, match="temperature must be a positive number, got 0"):
        gumbel_softmax(torch.zeros(2, 3), temperature=0)
    with pytest.raises(ValueError, match="logits must be a float tensor"):
        gumbel_softmax(torch.zeros(2, 3, dtype=torch.long))


def _fixed_learner(gamma=0.9, logits_reg=1e-3, actor_gradient="gumbel") -> MADDPG:
    """N=2, O=1, A=2, one hidden unit everywhere, every weight 1 and bias 0: for inputs >= 0 each
    network returns the sum of its inputs (relu(relu(sum x)))."""
    config = MADDPGConfig(hidden=1, gamma=gamma, n_step=1, logits_reg=logits_reg, actor_gradient=actor_gradient)
    agent = MADDPG(n_agents=2, obs_dim=1, n_actions=2, config=config, seed=0)
    with torch.no_grad():
        for module in (agent.actors, agent.critics, agent.target_actors, agent.target_critics):
            for name, p in module.named_parameters():
                p.fill_(1.0 if name.endswith("weight") else 0.0)
    return agent


def _batch(dones: float) -> dict[str, torch.Tensor]:
    return {
        "obs": torch.tensor([[[0.5], [0.25]]]),  # (B=1, N=2, O=1)
        "actions": torch.tensor([[[1.0, 0.0], [0.0, 1.0]]]),  # (1, 2, 2) one-hot
        "rewards": torch.tensor([[1.0, 1.0]]),  # (1, 2) team reward for both critics
        "next_obs": torch.tensor([[[1.0], [0.0]]]),  # (1, 2, 1)
        "dones": torch.tensor([[dones, dones]]),  # (1, 2)
    }


def test_critic_loss_by_hand():
    agent = _fixed_learner(gamma=0.9)
    # Q(x) = sum of x = [0.5, 0.25 | 1, 0 | 0, 1] -> 2.75
    # Q'(x') = 1.0 + 0.0 + (one-hot next actions: 1 + 1, whichever the target actors sample) = 3.0
    # y = r + gamma (1 - d) Q' = 1 + 0.9 * 3.0 = 3.7;  loss = (2.75 - 3.7)^2 = 0.9025
    assert agent.critic_loss(0, _batch(dones=0.0)).item() == pytest.approx(0.9025)
    # terminal: y = 1.0; loss = (2.75 - 1.0)^2 = 3.0625
    assert agent.critic_loss(1, _batch(dones=1.0)).item() == pytest.approx(3.0625)


def test_actor_loss_by_hand_and_only_agent_i_gets_a_gradient():
    agent = _fixed_learner(logits_reg=1e-3)
    # agent 0's logits: relu(relu(0.5)) = 0.5 for both actions -> [0.5, 0.5], mean(logits^2) = 0.25
    # Q with agent 0's action re-sampled (still one-hot): 0.5 + 0.25 + 1 + 1 = 2.75
    # loss = -2.75 + 1e-3 * 0.25 = -2.74975
    loss = agent.actor_loss(0, _batch(dones=0.0))
    assert loss.item() == pytest.approx(-2.74975)
    loss.backward()
    assert all(p.grad is not None for p in agent.actors[0].parameters())
    assert all(p.grad is None for p in agent.actors[1].parameters())  # agent 1's action came from the batch


def test_expected_actor_loss_and_its_gradient_by_hand():
    agent = _fixed_learner(logits_reg=1e-3, actor_gradient="expected")
    with torch.no_grad():
        agent.critics[0].mlp.net[0].weight[0, 3] = 3.0  # critic 0 input [o0, o1, a0_0, a0_1, a1_0, a1_1]: a0_1 x 3
    batch = _batch(dones=0.0)
    # agent 1's batch action is one-hot(1): input 5 is 1.
    # Q(agent 0 takes 0) = 0.5 + 0.25 + 1 + 0 + 0 + 1 = 2.75;  Q(agent 0 takes 1) = 0.5 + 0.25 + 0 + 3 + 0 + 1 = 4.75
    assert agent.q_of_every_own_action(0, batch).tolist() == [[2.75, 4.75]]
    # logits [0.5, 0.5] -> pi = [0.5, 0.5]; E Q = 3.75; loss = -3.75 + 1e-3 * 0.25 = -3.74975
    loss = agent.actor_loss(0, batch)
    assert loss.item() == pytest.approx(-3.74975)
    loss.backward()
    # d loss / d logit_k = -pi_k (Q_k - E Q) + 1e-3 * 2 * logit_k / 2 = [-0.5 * -1, -0.5 * 1] + 0.0005
    # the output bias adds straight to the logits, so its gradient is exactly that: [0.5005, -0.4995]
    assert agent.actors[0].mlp.net[-1].bias.grad.tolist() == pytest.approx([0.5005, -0.4995])
    assert all(p.grad is None for p in agent.critics[0].parameters())  # the critic is a fixed judge here


def test_bad_actor_gradient_is_refused():
    with pytest.raises(ValueError, match="actor_gradient must be 'expected' or 'gumbel', got 'exact'"):
        MADDPGConfig(actor_gradient="exact").validate()


def test_target_gets_no_gradient_and_update_moves_targets_softly():
    agent = MADDPG(2, 3, 5, MADDPGConfig(tau=0.5), seed=0)
    before = [p.clone() for p in agent.target_critics.parameters()]
    rng = np.random.default_rng(0)
    batch = {"obs": rng.random((8, 2, 3), dtype=np.float32), "next_obs": rng.random((8, 2, 3), dtype=np.float32),
             "actions": np.eye(5, dtype=np.float32)[rng.integers(0, 5, (8, 2))],
             "rewards": rng.random((8, 2), dtype=np.float32), "dones": np.zeros((8, 2), dtype=np.float32)}
    agent.update(batch)
    assert all(not p.requires_grad for p in agent.target_critics.parameters())
    # with tau = 0.5 the target moved halfway towards the updated critic
    for b, t, s in zip(before, agent.target_critics.parameters(), agent.critics.parameters()):
        assert torch.allclose(t, 0.5 * b + 0.5 * s, atol=1e-6)


def test_act_shapes_determinism_and_bad_inputs():
    obs = np.zeros((4, 2, 3), dtype=np.float32)  # (K=4, N=2, O=3)
    a1 = MADDPG(2, 3, 5, seed=1).act(obs, epsilon=0.3)
    a2 = MADDPG(2, 3, 5, seed=1).act(obs, epsilon=0.3)
    assert a1.shape == (4, 2) and (a1 == a2).all()  # same seed, same actions
    with pytest.raises(ValueError, match=r"epsilon must be a number in \[0, 1\]"):
        MADDPG(2, 3, 5).act(obs, epsilon=2.0)
    with pytest.raises(ValueError, match=r"obs: expected shape \(B, 2, 3\)"):
        MADDPG(2, 3, 5).act(np.zeros((4, 3, 3), dtype=np.float32))
    with pytest.raises(ValueError, match=r"gamma must be a number in \[0, 1\], got 1.5"):
        MADDPG(2, 3, 5, MADDPGConfig(gamma=1.5))
    with pytest.raises(ValueError, match="batch_size must be a positive int, got 0"):
        MADDPGConfig(batch_size=0).validate()


def test_config_refuses_a_warmup_or_batch_larger_than_the_replay():
    # updates start once the replay holds max(warmup_steps, batch_size): more than it keeps would never train
    with pytest.raises(ValueError, match=r"^warmup_steps must be at most buffer_size \(10,000\), got 10,001"):
        MADDPGConfig(warmup_steps=10_001).validate()  # the default replay of 10,000
    with pytest.raises(ValueError, match=r"^batch_size must be at most buffer_size \(256\), got 512"):
        MADDPGConfig(buffer_size=256, warmup_steps=0).validate()  # the default batch of 512
    assert MADDPGConfig(buffer_size=512, warmup_steps=512).validate().buffer_size == 512  # equal is enough


def test_flatten_for_critic_by_hand():
    # one transition (B=1), N=2 agents, O=2, A=2:
    # o_1 = [1, 2], o_2 = [3, 4], a_1 = [1, 0], a_2 = [0, 1]  ->  x = [1, 2, 3, 4, 1, 0, 0, 1]
    obs = torch.tensor([[[1.0, 2.0], [3.0, 4.0]]])  # (1, 2, 2)
    actions = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]])  # (1, 2, 2)
    assert flatten_for_critic(obs, actions).tolist() == [[1, 2, 3, 4, 1, 0, 0, 1]]


def test_rows_stay_whole_transitions():
    obs = torch.arange(3 * 2 * 2, dtype=torch.float32).reshape(3, 2, 2)  # row b holds 4b .. 4b+3
    x = flatten_for_critic(obs, torch.zeros(3, 2, 5))
    assert x.shape == (3, 2 * (2 + 5))  # (B, N*(O+A)) = (3, 14)
    assert x[1, :4].tolist() == [4, 5, 6, 7]  # transition 1's observations only


def test_bad_inputs():
    with pytest.raises(ValueError, match=r"actions: expected shape \(B=3, N=2, A\)"):
        flatten_for_critic(torch.zeros(3, 2, 2), torch.zeros(3, 3, 5))
    with pytest.raises(ValueError, match=r"call .float\(\) on them"):
        flatten_for_critic(torch.zeros(3, 2, 2), torch.zeros(3, 2, 5, dtype=torch.long))
    with pytest.raises(ValueError, match="obs: expected float elements"):
        flatten_for_critic(torch.zeros(3, 2, 2, dtype=torch.long), torch.zeros(3, 2, 5))
    with pytest.raises(ValueError, match=r"obs: expected shape \(B, N, O\)"):
        flatten_for_critic(torch.zeros(6, 2), torch.zeros(3, 2, 5))


# bad replay batches (B=8, N=2, O=3, A=5) and what MADDPG's ValueError must say
BAD_MADDPG_BATCHES = {
    "action indices": (lambda b: b | {"actions": b["actions"].argmax(-1)},
                       r"batch\['actions'\]: expected shape \(B=8, N=2, A=5\) \(3 dims\), got \(8, 2\) \(2 dims\); "
                       r"store one-hot actions: shapes.one_hot\(actions, 5\)"),
    "int one-hot actions": (lambda b: b | {"actions": b["actions"].astype(np.int64)},
                            r"batch\['actions'\]: expected float elements, got dtype int64"),
    "an out-of-range action": (lambda b: b | {"actions": np.eye(6, dtype=np.float32)[np.full((8, 2), 5)]},
                               r"batch\['actions'\]: expected shape \(B=8, N=2, A=5\), got \(8, 2, 6\)"),
    "soft actions": (entry_set("actions", (0, 1), 0.2), r"batch\['actions'\] must be 0 or 1 in every entry, got 0.2"),
    "wrong reward shape": (lambda b: b | {"rewards": b["rewards"][:, :1]},
                           r"batch\['rewards'\]: expected shape \(B=8, N=2\), got \(8, 1\)"),
    "a missing key": (lambda b: {k: v for k, v in b.items() if k != "next_obs"}, r"batch is missing \['next_obs'\]"),
    "B = 0": (lambda b: {k: v[:0] for k, v in b.items()}, r"batch\['obs'\]: expected B >= 1 transitions, got B = 0"),
    "NaN obs": (entry_set("obs", (3, 1, 2), np.nan), r"batch\['obs'\] must be finite, got 1 NaN and 0 infinite of 48 "
                                                r"entries, the first at index \(3, 1, 2\)"),
    "NaN reward": (entry_set("rewards", (7, 0), np.nan), r"batch\['rewards'\] must be finite, got 1 NaN"),
    "infinite next_obs": (entry_set("next_obs", (0, 0, 0), np.inf), r"batch\['next_obs'\] must be finite, got 0 NaN and 1"),
    "dones of 2": (entry_set("dones", (2, 1), 2.0), r"batch\['dones'\] must be 0 or 1 in every entry, got 2.0"),
    "wrong N": (lambda b: b | {"obs": np.zeros((8, 3, 3), dtype=np.float32)},
                r"batch\['obs'\]: expected shape \(B, N=2, O=3\), got \(8, 3, 3\)"),
    "wrong O": (lambda b: b | {"next_obs": np.zeros((8, 2, 4), dtype=np.float32)},
                r"batch\['next_obs'\]: expected shape \(B=8, N=2, O=3\), got \(8, 2, 4\)"),
    "an unknown key": (lambda b: b | {"returns": b["rewards"]}, r"batch has unexpected keys \['returns'\]"),
}


@pytest.mark.parametrize("case", BAD_MADDPG_BATCHES)
@pytest.mark.parametrize("learner_class", ["MADDPG", "IDDPG"])
def test_update_refuses_a_bad_batch_before_any_torch_work(learner_class, case):
    from marl_edu.learners import baselines
    from marl_edu.learners import maddpg

    learner = getattr(maddpg, learner_class, None) or getattr(baselines, learner_class)
    agent = learner(2, 3, 5, MADDPGConfig(hidden=8), seed=0)
    before = {key: value.clone() for key, value in agent.critics.state_dict().items()}
    change, message = BAD_MADDPG_BATCHES[case]
    with pytest.raises(ValueError, match=message):
        agent.update(change(replay_batch()))
    assert agent.updates == 0 and all(torch.equal(before[k], v) for k, v in agent.critics.state_dict().items())
    agent.update(replay_batch())  # the unchanged batch is accepted, as numpy arrays or as tensors
    agent.update({key: torch.as_tensor(value) for key, value in replay_batch().items()})
    assert agent.updates == 2


def test_training_with_a_huge_learning_rate_stops_with_a_value_error(monkeypatch):
    from marl_edu.training.loops import train
    from marl_edu.base.validate import LIMITS

    with pytest.raises(ValueError, match="actor_lr must be a positive number at most 1, got 1e"):
        MADDPGConfig(actor_lr=1e30).validate()  # the config's bound refuses it first
    monkeypatch.setitem(LIMITS, "learning_rate", float("inf"))  # a learner who lifts it still gets a clear stop
    config = MADDPGConfig(actor_lr=1e30, critic_lr=1e30, warmup_steps=0, batch_size=32, n_envs=4, hidden=16)
    with pytest.raises(ValueError, match=r"^agent \d's (critic|actor) loss is (nan|inf|-inf) at update \d+: a learning "
                                         r"rate or entropy coefficient too large\? \(lr=1e\+30\); no step was taken$"):
        train("maddpg", "Switch2-v0", 100, config, seed=0, eval_every=100, progress=False)


def test_an_actor_with_nan_weights_cannot_act():
    agent = MADDPG(2, 3, 5, seed=0)
    with torch.no_grad():
        agent.actors[1].mlp.net[0].weight[0, 0] = np.nan
    obs = np.ones((4, 2, 3), dtype=np.float32)
    for greedy in (True, False):
        with pytest.raises(ValueError, match=r"^the actors' logits are not finite although the observations are: the "
                                             r"weights \['1.mlp.net.0.weight'\] hold NaN or infinity"):
            agent.act(obs, greedy=greedy)


def test_flatten_for_critic_takes_a_replay_batchs_numpy_arrays():
    from marl_edu.learners.maddpg import own_critic_input

    batch = replay_batch(B=4)  # numpy, as ReplayBuffer.sample gives it
    x = flatten_for_critic(batch["obs"], batch["actions"])
    assert isinstance(x, torch.Tensor) and x.shape == (4, 2 * (3 + 5))
    assert torch.equal(x, flatten_for_critic(torch.as_tensor(batch["obs"]), torch.as_tensor(batch["actions"])))
    # agent 1's own part: its 3 observation entries, then its 5 action entries
    np.testing.assert_array_equal(own_critic_input(1, batch["obs"], batch["actions"]).numpy(),
                                  np.concatenate([batch["obs"][:, 1], batch["actions"][:, 1]], axis=1))
    with pytest.raises(ValueError, match=r"actions: expected float elements, got dtype torch.int64"):
        own_critic_input(0, batch["obs"], batch["actions"].astype(np.int64))
    with pytest.raises(ValueError, match=r"i must be an agent in \[0, 1\], got 2"):
        own_critic_input(2, batch["obs"], batch["actions"])


def test_a_loss_given_numpy_arrays_says_how_to_convert_them():
    agent = MADDPG(2, 3, 5, MADDPGConfig(hidden=8), seed=0)
    with pytest.raises(ValueError, match=r"x: expected a torch tensor of shape \(B, 3\), got ndarray; "
                                         r"torch.as_tensor\(x\) converts a numpy array"):
        agent.actor_loss(0, replay_batch())  # update converts a ReplayBuffer batch; the losses take tensors
