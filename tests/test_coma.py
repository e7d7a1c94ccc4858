import math

import numpy as np
import pytest
import torch

from marl_edu.data.rollout import collect_episodes
from marl_edu.envs.make import make_vec_env
from marl_edu.learners.coma import COMA, COMAConfig, build_critic_input, coma_advantage, counterfactual_baseline
from marl_edu.training.evaluation import greedy_return
from marl_edu.training.loops import train
from batches import entry_set, episode_batch, replaced


# 2 agents, 3 actions, S = 2, O = 1
STATE = torch.tensor([[0.1, 0.2]])                          # (B=1, S=2)
OBS = torch.tensor([[[0.3], [0.4]]])                        # (1, N=2, O=1)
ACTIONS = torch.tensor([[[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]])  # (1, 2, A=3): agent 0 took 1, agent 1 took 2


def test_critic_input_rows_by_hand():
    x = build_critic_input(STATE, OBS, ACTIONS)
    assert x.shape == (1, 2, 2 + 1 + 2 * 3 + 2)  # S + O + N*A + N = 11
    # row 0: state, o_0, [agent 0's block zeroed], agent 1's action, id 0
    assert x[0, 0].tolist() == pytest.approx([0.1, 0.2, 0.3, 0, 0, 0, 0, 0, 1, 1, 0])
    # row 1: state, o_1, agent 0's action, [agent 1's block zeroed], id 1
    assert x[0, 1].tolist() == pytest.approx([0.1, 0.2, 0.4, 0, 1, 0, 0, 0, 0, 0, 1])


def test_row_a_does_not_change_with_agent_a_action():
    changed = ACTIONS.clone()
    changed[0, 0] = torch.tensor([1.0, 0.0, 0.0])  # agent 0 now took action 0
    before, after = build_critic_input(STATE, OBS, ACTIONS), build_critic_input(STATE, OBS, changed)
    assert torch.equal(before[:, 0], after[:, 0])  # agent 0's own row: unchanged
    assert not torch.equal(before[:, 1], after[:, 1])  # agent 1's row sees agent 0's new action


def test_baseline_and_advantage_by_hand():
    q = torch.tensor([[1.0, 2.0, 4.0], [0.0, 3.0, 0.0]])  # (N=2, A=3): Q(s, (a_-i, k)) per agent i
    pi = torch.tensor([[0.5, 0.25, 0.25], [0.2, 0.6, 0.2]])  # (2, 3)
    # agent 0: Qbar = 0.5 * 1 + 0.25 * 2 + 0.25 * 4 = 2.0;  agent 1: Qbar = 0.6 * 3 = 1.8
    assert counterfactual_baseline(q, pi).tolist() == pytest.approx([2.0, 1.8])
    # agent 0 took 2: Adv = 4 - 2 = 2.0;  agent 1 took 0: Adv = 0 - 1.8 = -1.8
    assert coma_advantage(q, pi, torch.tensor([2, 0])).tolist() == pytest.approx([2.0, -1.8])


def test_bad_inputs():
    q, pi = torch.zeros(2, 3), torch.full((2, 3), 1 / 3)
    with pytest.raises(ValueError, match="actions must be in \\[0, 2\\], got \\[0, 3\\]"):
        coma_advantage(q, pi, torch.tensor([0, 3]))
    with pytest.raises(ValueError, match="actions must be an int tensor of shape \\(2,\\)"):
        coma_advantage(q, pi, torch.tensor([0.0, 1.0]))
    with pytest.raises(ValueError, match="pass softmax\\(logits\\), not the logits"):
        counterfactual_baseline(q, torch.tensor([[2.0, -1.0, 0.0], [0.0, 0.0, 1.0]]))
    with pytest.raises(ValueError, match="pi must have q's shape"):
        counterfactual_baseline(q, pi[:, :2])
    with pytest.raises(ValueError, match="actions_onehot"):
        build_critic_input(STATE, OBS, ACTIONS[:, :1])
    with pytest.raises(ValueError, match="obs"):
        build_critic_input(STATE, OBS.repeat(2, 1, 1), ACTIONS)  # B = 2 against the state's B = 1
    with pytest.raises(ValueError, match="state"):
        build_critic_input(STATE.long(), OBS, ACTIONS)


def test_update_changes_the_networks_and_keeps_the_target_until_its_turn():
    venv = make_vec_env("Switch2-v0", 2, seed=0)
    agent = COMA(2, 2, 5, COMAConfig(hidden=8, n_envs=2, target_update_every=2), seed=0)
    target_before = [p.clone() for p in agent.target_critic.parameters()]
    actor_before = [p.clone() for p in agent.actor.parameters()]
    batch, _, _ = collect_episodes(agent, venv, epsilon=0.5)
    agent.entropy_coef = 0.01
    stats = agent.update(batch)  # batch['epsilon'] = 0.5, what collect_episodes played
    assert np.isfinite(stats["critic_loss"]) and np.isfinite(stats["actor_loss"])
    assert any(not torch.equal(a, b) for a, b in zip(actor_before, agent.actor.parameters()))
    assert all(torch.equal(a, b) for a, b in zip(target_before, agent.target_critic.parameters()))
    agent.update(batch)  # the 2nd update copies the critic into the target
    assert all(torch.equal(a, b) for a, b in zip(agent.critic.parameters(), agent.target_critic.parameters()))


def test_training_is_deterministic_and_feed_forward_works():
    for recurrent in (True, False):
        config = COMAConfig(hidden=8, n_envs=4, recurrent=recurrent)
        runs = [train("coma", "Switch2-v0", 8, config, seed=2, eval_every=4, progress=False) for _ in range(2)]
        assert runs[0].episode_returns == runs[1].episode_returns and runs[0].evaluations == runs[1].evaluations
        assert np.isfinite(greedy_return(runs[0].agent, "Switch2-v0").team_return)


def test_bad_config_and_arguments():
    with pytest.raises(ValueError, match="lam must be a number in \\[0, 1\\], got 2"):
        COMAConfig(lam=2).validate()
    with pytest.raises(ValueError, match="recurrent must be True or False"):
        COMAConfig(recurrent="yes").validate()
    with pytest.raises(ValueError, match="episodes must be a positive int"):
        train("coma", "Switch2-v0", 0)


def test_coma_policy_checkpoint_round_trip(tmp_path):
    from marl_edu.training.checkpoints import load_policy, save_policy

    run = train("coma", "Switch2-v0", 4, COMAConfig(hidden=8, n_envs=4), seed=1, progress=False)
    path = save_policy(run.agent, "Switch2-v0", tmp_path / "coma.pt")
    loaded = load_policy(path, algo="coma", env_id="Switch2-v0")
    assert loaded.config == run.agent.config
    replayed, original = greedy_return(loaded, "Switch2-v0"), greedy_return(run.agent, "Switch2-v0")
    assert replayed.actions.tolist() == original.actions.tolist()
    with pytest.raises(ValueError, match="is a coma checkpoint, expected maddpg"):
        load_policy(path, algo="maddpg")


def test_actor_input_by_hand():
    # 2 agents, 3 actions, obs dim 2. Agent 0 has not acted yet (-1), agent 1 last took action 2.
    obs = torch.tensor([[[0.1, 0.2], [0.3, 0.4]]])  # (B=1, N=2, O=2)
    last = torch.tensor([[-1, 2]])  # (B, N)
    gru = COMA(2, 2, 3, COMAConfig(hidden=4), seed=0)
    # row i = [o_i (2), one_hot(a_{i,t-1}) (3, all zero before the first step), one_hot(i) (2)]
    assert torch.allclose(gru.actor_input(obs, last), torch.tensor([[0.1, 0.2, 0, 0, 0, 1, 0],
                                                                     [0.3, 0.4, 0, 0, 1, 0, 1.]]))
    # a feed-forward actor sees the current observation and its id only: [o_i, one_hot(i)]
    ff = COMA(2, 2, 3, COMAConfig(hidden=4, recurrent=False), seed=0)
    assert torch.allclose(ff.actor_input(obs, last), torch.tensor([[0.1, 0.2, 1, 0], [0.3, 0.4, 0, 1.]]))


def test_greedy_policy_feeds_back_its_own_last_action():
    agent = COMA(2, 2, 5, COMAConfig(hidden=8), seed=3)
    obs = np.array([[0.0, 0.17], [0.0, 0.83]], dtype=np.float32)  # (N, O) the same observation twice
    policy = agent.greedy_policy()
    first, second = policy(obs), policy(obs)  # (N,), (N,)
    with torch.no_grad():  # the same two steps by hand: no last action, then the first step's actions
        obs_t = torch.as_tensor(obs)[None]  # (1, N, O)
        p0, h = agent.policy_step(obs_t, torch.full((1, 2), -1), agent.actor.initial_hidden(2), 0.0)
        p1, _ = agent.policy_step(obs_t, p0.argmax(-1), h, 0.0)  # (1, N, A)
    assert first.tolist() == p0.argmax(-1)[0].tolist() and second.tolist() == p1.argmax(-1)[0].tolist()


def test_critic_targets_team_and_per_agent_rewards_by_hand():
    # One episode of 3 steps that ends with everyone home (terminal), lam = 1: Monte Carlo returns,
    # so the target critic's values never enter. gamma = 0.5. Per-agent rewards (T=3, N=2):
    #   step 0: [-0.1, -0.1]   step 1: [5.0, -0.1] (agent 0 home)   step 2: [0.0, 5.0] (agent 1 home)
    # team:    r = [-0.2, 4.9, 5.0]: G2 = 5.0, G1 = 4.9 + 0.5 * 5.0 = 7.4, G0 = -0.2 + 0.5 * 7.4 = 3.5
    # agent 0: r = [-0.1, 5.0, 0.0]: G2 = 0.0, G1 = 5.0,                   G0 = -0.1 + 0.5 * 5.0 = 2.4
    # agent 1: r = [-0.1, -0.1, 5.0]: G2 = 5.0, G1 = -0.1 + 2.5 = 2.4,      G0 = -0.1 + 0.5 * 2.4 = 1.1
    batch = {"obs": torch.rand(1, 4, 2, 2), "actions": torch.zeros(1, 4, 2, dtype=torch.long),
             "rewards": torch.tensor([[[-0.1, -0.1], [5.0, -0.1], [0.0, 5.0]]]),  # (B=1, T=3, N=2)
             "dones": torch.tensor([[0.0, 0.0, 1.0]])}  # (B, T)
    team_learner = COMA(2, 2, 5, COMAConfig(hidden=8, gamma=0.5, lam=1.0), seed=0)
    rows = team_learner.critic_rows(batch["obs"], batch["actions"])  # (B*(T+1), N, D)
    team = team_learner.critic_targets(rows, batch)  # (B, T, N)
    assert torch.allclose(team[0], torch.tensor([[3.5, 3.5], [7.4, 7.4], [5.0, 5.0]]))
    own_learner = COMA(2, 2, 5, COMAConfig(hidden=8, gamma=0.5, lam=1.0, team_reward=False), seed=0)
    own = own_learner.critic_targets(rows, batch)  # (B, T, N); the rows do not depend on the networks
    assert torch.allclose(own[0], torch.tensor([[2.4, 1.1], [5.0, 2.4], [0.0, 5.0]]))


@pytest.mark.parametrize("recurrent", [True, False])
def test_fused_unroll_replays_the_same_policy_and_makes_nearly_the_same_update(recurrent):
    from marl_edu.envs.make import make_vec_env
    from marl_edu.data.rollout import collect_episodes

    plain, fused = (COMA(2, 2, 5, COMAConfig(recurrent=recurrent, fused_unroll=f), seed=4) for f in (False, True))
    batch, _, _ = collect_episodes(plain, make_vec_env("Switch2-v0", 4, 0), 0.1)
    T = batch["rewards"].shape[1]
    pis = [learner.replay_policy(batch["obs"][:, :T], batch["actions"][:, :T], 0.1) for learner in (plain, fused)]
    assert pis[0].shape == (4, T, 2, 5) and torch.allclose(pis[0], pis[1], atol=1e-6)  # the same probabilities
    for learner in (plain, fused):
        learner.entropy_coef = 0.05
        learner.update(batch)
    for p, q in zip(plain.actor.parameters(), fused.actor.parameters()):
        assert torch.allclose(p, q, rtol=1e-4, atol=1e-6)  # one step apart only in the last bits


def _episodes(B, T):  # B episodes of T steps, every tensor cut or grown to match
    return lambda batch: episode_batch(B=B, T=T)


# bad on-policy batches (B=2, T=3, N=2, O=2, A=5) and what the update's ValueError must say
BAD_EPISODE_BATCHES = {
    "float actions": (lambda b: b | {"actions": b["actions"].float()},
                      r"batch\['actions'\]: expected torch.int64 elements \(action indices in \[0, A\)\), got "
                      r"torch.float32"),
    "int32 actions": (lambda b: b | {"actions": b["actions"].int()}, r"batch\['actions'\]: expected torch.int64"),
    "team rewards (B, T)": (replaced("rewards", torch.zeros(2, 3)),
                            r"batch\['rewards'\]: expected shape \(B=2, T=3, N=2\) \(3 dims\), got \(2, 3\) \(2 dims\)"),
    "rewards of T+1 steps": (replaced("rewards", torch.zeros(2, 4, 2)),
                             r"batch\['rewards'\]: expected shape \(B=2, T=3, N=2\), got \(2, 4, 2\): axis 1 \(T\)"),
    "a missing key": (lambda b: {k: v for k, v in b.items() if k != "agent_mask"},
                      r"batch is missing \['agent_mask'\]: an on-policy batch holds obs, actions, rewards"),
    "not a dict": (lambda b: list(b.values()), r"batch must be a dict of tensors \(collect_episodes's\), got list"),
    "action A": (entry_set("actions", (1, 2, 0), 5), r"batch\['actions'\] must be in \[0, 4\], got \[\[\[3, 0\], .*\[5, 2\]"),
    "action -1": (entry_set("actions", (0, 0, 1), -1), r"batch\['actions'\] must be in \[0, 4\], got \[\[\[3, -1\]"),
    "T = 0": (_episodes(B=2, T=0), r"batch\['obs'\]: expected B >= 1 episodes of T >= 1 steps .* got B = 2, T\+1 = 1"),
    "B = 0": (_episodes(B=0, T=3), r"batch\['obs'\]: expected B >= 1 episodes .* got B = 0, T\+1 = 4"),
    "NaN obs": (entry_set("obs", (1, 3, 0, 1), math.nan), r"batch\['obs'\] must be finite, got 1 NaN and 0 infinite of 32 "
                                                    r"entries, the first at index \(1, 3, 0, 1\)"),
    "NaN reward": (entry_set("rewards", (0, 2, 1), math.nan), r"batch\['rewards'\] must be finite, got 1 NaN"),
    "infinite reward": (entry_set("rewards", (0, 0, 0), -math.inf), r"batch\['rewards'\] must be finite, got 0 NaN and 1 "
                                                              r"infinite"),
    "epsilon 1.5": (replaced("epsilon", 1.5), r"batch\['epsilon'\] must be a number in \[0, 1\], got 1.5"),
    "epsilon NaN": (replaced("epsilon", math.nan), r"batch\['epsilon'\] must be a number in \[0, 1\], got nan"),
    "agent_mask with 2s": (replaced("agent_mask", torch.full((2, 3, 2), 2.0)),
                           r"batch\['agent_mask'\] must be 0 or 1 in every entry, got 2.0 at index \(0, 0, 0\) "
                           r"\(12 of 12 entries are neither\)"),
    "step_mask with a 2": (entry_set("step_mask", (1, 1), 2.0), r"batch\['step_mask'\] must be 0 or 1 in every entry, "
                                                          r"got 2.0 at index \(1, 1\)"),
    "dones of 0.5": (entry_set("dones", (0, 2), 0.5), r"batch\['dones'\] must be 0 or 1 in every entry, got 0.5"),
    "no real step": (replaced("step_mask", torch.zeros(2, 3)), r"batch\['step_mask'\]: expected at least one real step"),
    "wrong N": (replaced("obs", torch.zeros(2, 4, 3, 2)),
                r"batch\['obs'\]: expected shape \(B, T\+1, N=2, O=2\), got \(2, 4, 3, 2\): axis 2 \(N\) is 3 but N=2"),
    "wrong O": (replaced("obs", torch.zeros(2, 4, 2, 3)),
                r"batch\['obs'\]: expected shape \(B, T\+1, N=2, O=2\), got \(2, 4, 2, 3\): axis 3 \(O\) is 3 but O=2"),
    "actions of another B": (replaced("actions", torch.zeros(3, 4, 2, dtype=torch.long)),
                             r"batch\['actions'\]: expected shape \(B=2, T\+1=4, N=2\), got \(3, 4, 2\)"),
    "numpy obs": (lambda b: b | {"obs": b["obs"].numpy()},
                  r"batch\['obs'\]: expected a torch tensor \(collect_episodes makes them\), got ndarray"),
    "float64 obs": (lambda b: b | {"obs": b["obs"].double()},
                    r"batch\['obs'\]: expected torch.float32 elements, got torch.float64"),
}


@pytest.mark.parametrize("case", BAD_EPISODE_BATCHES)
@pytest.mark.parametrize("learner_class", ["COMA", "CentralV", "IACV"])
def test_update_refuses_a_bad_batch_before_any_torch_work(learner_class, case):
    from marl_edu.learners import baselines
    from marl_edu.learners import coma

    learner = getattr(coma, learner_class, None) or getattr(baselines, learner_class)
    agent = learner(2, 2, 5, COMAConfig(hidden=8, n_envs=2), seed=0)
    before = {key: value.clone() for key, value in agent.actor.state_dict().items()}
    change, message = BAD_EPISODE_BATCHES[case]
    with pytest.raises(ValueError, match=message):
        agent.update(change(episode_batch()))
    assert agent.updates == 0 and all(torch.equal(before[k], v) for k, v in agent.actor.state_dict().items())
    agent.update(episode_batch())  # the unchanged batch is accepted
    assert agent.updates == 1


@pytest.mark.parametrize("field, value, message", [
    ("critic_lr", 1e30, r"^critic loss is (nan|inf) at update \d+: a learning rate or entropy coefficient too large\? "
                        r"\(lr=1e\+30\); no step was taken$"),
    ("critic_lr", 1e308, r"^critic loss is (nan|inf) at update 1: .* \(lr=1e\+308\)"),
    ("actor_lr", 1e300, r"^actor loss: the optimiser's step failed \(value cannot be converted to type float without "
                        r"overflow\) at update 1: a learning rate or entropy coefficient too large\? \(lr=1e\+300\)$"),
    ("entropy_start", 1e308, r"^actor loss is -inf at update 1: a learning rate or entropy coefficient too large\? "
                             r"\(lr=0.002\)"),
])
def test_training_with_a_huge_learning_rate_or_entropy_stops_with_a_value_error(field, value, message, monkeypatch):
    from marl_edu.base.validate import LIMITS

    with pytest.raises(ValueError, match=f"{field} must be a (positive|non-negative) number at most"):
        COMAConfig(**{field: value}).validate()  # the config's bounds refuse it first
    for limit in ("learning_rate", "coefficient"):  # a learner who lifts them still gets a clear stop, not NaN weights
        monkeypatch.setitem(LIMITS, limit, math.inf)
    config = COMAConfig(hidden=8, n_envs=4, **{field: value})
    with pytest.raises(ValueError, match=message):
        train("coma", "Switch2-v0", 40, config, seed=0, eval_every=40, progress=False)


def test_a_policy_with_nan_weights_cannot_act():
    agent = COMA(2, 2, 5, COMAConfig(hidden=8), seed=0)
    with torch.no_grad():
        agent.actor.head.bias[2] = math.nan
    with pytest.raises(ValueError, match=r"^the policy's probabilities are not finite although the observations are: "
                                         r"the weights \['head.bias'\] hold NaN or infinity"):
        agent.greedy_policy()(np.zeros((2, 2), dtype=np.float32))
    with pytest.raises(ValueError, match="the weights \\['head.bias'\\] hold NaN"):
        collect_episodes(agent, make_vec_env("Switch2-v0", 2, seed=0), epsilon=0.0)
    with pytest.raises(ValueError, match=r"^probs must be probabilities \(B, N, A\): finite, non-negative, each row "
                                         r"with a positive sum; torch.multinomial says: "):
        agent.sample(torch.tensor([[[0.5, math.nan, 0.5, 0.0, 0.0]]]))


def test_critic_input_takes_numpy_arrays_too():
    x = build_critic_input(STATE.numpy(), OBS.numpy(), ACTIONS.numpy())  # a batch of numpy arrays
    assert isinstance(x, torch.Tensor) and torch.equal(x, build_critic_input(STATE, OBS, ACTIONS))
    with pytest.raises(ValueError, match=r"actions_onehot: expected float elements, got dtype torch.int64"):
        build_critic_input(STATE.numpy(), OBS.numpy(), ACTIONS.long().numpy())
