import numpy as np
import pytest

from marl_edu.learners.maddpg import MADDPGConfig
from marl_edu.training import loops
from marl_edu.training.loops import train


def test_training_is_deterministic_for_a_seed():
    config = MADDPGConfig(n_envs=4, warmup_steps=64, batch_size=32, hidden=16)
    runs = [train("maddpg", "Switch2-v2", episodes=8, config=config, seed=3, eval_every=4, progress=False)
            for _ in range(2)]
    assert runs[0].episode_returns == runs[1].episode_returns and len(runs[0].episode_returns) >= 8
    assert runs[0].evaluations == runs[1].evaluations and runs[0].updates > 0


def test_bad_arguments():
    with pytest.raises(ValueError, match="episodes must be a positive int, got -1"):
        train("maddpg", "Switch2-v2", episodes=-1)
    with pytest.raises(ValueError, match="unknown ma-gym environment"):
        train("maddpg", "Switch9-v2", episodes=1)
    for learner in ("maddpg", "coma", "vdn", "maddpg_continuous", "mappo_continuous"):  # every loop kind evaluates
        with pytest.raises(ValueError, match="eval_every must be a positive int, got 0"):  # every eval_every >= 1
            train(learner, episodes=1, eval_every=0)
    with pytest.raises(ValueError, match="unknown algo 'madpg'"):
        train("madpg", "Switch2-v2", episodes=1)
    with pytest.raises(ValueError, match="maddpg acts with discrete actions on the ma-gym envs"):
        train("maddpg", "simple_spread_v3", episodes=1)


def test_no_epsilon_decay_phase_is_allowed():
    config = MADDPGConfig(n_envs=2, warmup_steps=32, batch_size=16, hidden=8, epsilon_fraction=0.0)
    assert len(train("maddpg", "Switch2-v2", episodes=2, config=config, progress=False).episode_returns) >= 2


@pytest.mark.parametrize("algo", ["maddpg", "coma"])
def test_training_is_the_same_on_either_env_backend(algo):
    # the batched Switch steps the same transitions as ma-gym, so a seed trains to the same returns and weights
    import torch

    from marl_edu.learners.coma import COMAConfig
    from marl_edu.learners.maddpg import MADDPGConfig
    config = MADDPGConfig(n_envs=4, warmup_steps=100, batch_size=32) if algo == "maddpg" else COMAConfig(n_envs=4)
    runs = [train(algo, "Switch2-v2", 24, config, seed=3, eval_every=12, progress=False, env_backend=backend)
            for backend in ("ma-gym", "batched")]
    assert runs[0].episode_returns == runs[1].episode_returns and runs[0].evaluations == runs[1].evaluations
    assert runs[0].updates == runs[1].updates > 0
    nets = [run.agent.actors if algo == "maddpg" else run.agent.actor for run in runs]
    assert all(torch.equal(p, q) for p, q in zip(nets[0].parameters(), nets[1].parameters()))


def test_a_policy_played_on_an_env_of_other_sizes_is_a_value_error():
    from marl_edu.learners.coma import COMA
    from marl_edu.learners.maddpg import MADDPG
    from marl_edu.training.evaluation import greedy_return, sampled_returns

    for agent in (COMA(2, 2, 5), MADDPG(2, 2, 5)):  # built for Switch2-v0: N=2, O=2, A=5
        with pytest.raises(ValueError, match=r"the policy does not fit Switch4-v0 \(N differs\)"):
            greedy_return(agent, "Switch4-v0")
        with pytest.raises(ValueError, match=r"the policy does not fit Switch2-v2 \(O differs\)"):
            sampled_returns(agent, "Switch2-v2", n_episodes=1)


def test_a_greedy_evaluation_is_one_episode_on_switch_and_a_mean_where_episodes_are_random():
    import numpy as np

    from marl_edu.learners.coma import COMA
    from marl_edu.envs.magym import is_switch
    from marl_edu.envs.make import make_env
    from marl_edu.data.rollout import run_episode
    from marl_edu.training.evaluation import GREEDY_EPISODES, greedy_return, greedy_team_return

    assert is_switch("Switch3-v0") and is_switch("ma_gym:Switch2-v2")
    assert not is_switch("PredatorPrey7x7-v0") and not is_switch("simple_spread_v3")
    switch = COMA(2, 2, 5, seed=0)
    assert greedy_team_return(switch, "Switch2-v0") == greedy_return(switch, "Switch2-v0").team_return
    # PredatorPrey's prey move at random: the mean of GREEDY_EPISODES successive episodes of one env seeded 0
    agent = COMA(4, 28, 5, seed=0)
    env = make_env("PredatorPrey7x7-v0", seed=0)
    by_hand = np.mean([run_episode(env, agent.greedy_policy()).team_return for _ in range(GREEDY_EPISODES)])
    assert greedy_team_return(agent, "PredatorPrey7x7-v0") == pytest.approx(by_hand)
    assert greedy_team_return(agent, "PredatorPrey7x7-v0", 3) == greedy_team_return(agent, "PredatorPrey7x7-v0", 3)
    with pytest.raises(ValueError, match="episodes"):
        greedy_team_return(agent, "PredatorPrey7x7-v0", 0)


# one small run of each loop kind (learners.Entry.loop): (learner, env, episodes, eval_every, config overrides)
SMALL = {
    "off_policy": ("maddpg", "Switch2-v2", 12, 4, dict(n_envs=4, warmup_steps=32, batch_size=16, hidden=8)),
    "on_policy": ("mappo", "Switch2-v0", 20, 8, dict(n_envs=8, hidden=8)),
    "episode_replay": ("vdn", "Switch2-v0", 12, 4, dict(n_envs=4, batch_episodes=4, hidden=8)),
    "continuous": ("maddpg_ensemble", "simple_spread_v3", 6, 2, dict(n_envs=2, warmup_steps=16, batch_size=8,
                                                                     hidden=8)),
    "continuous_on_policy": ("mappo_continuous", "simple_spread_v3", 6, 2, dict(n_envs=4, hidden=8)),
}


def small_run(kind: str, **kwargs):
    from marl_edu.learners.table import config_class

    learner, env_id, episodes, eval_every, overrides = SMALL[kind]
    return train(learner, env_id, episodes, config_class(learner)(**overrides), seed=1, eval_every=eval_every,
                 progress=False, eval_episodes=1, **kwargs)


def test_every_loop_kind_of_the_table_has_a_small_run():
    from marl_edu.learners.table import LOOPS

    assert set(SMALL) == set(LOOPS)


@pytest.mark.parametrize("kind", SMALL)
def test_every_loop_kind_stops_at_stop_at_and_calls_the_update_hook(kind):
    import torch

    whole = small_run(kind)
    batches = []

    def update(agent, batch):  # the learner's own update, each batch counted
        batches.append(batch)
        return agent.update(batch)

    hooked = small_run(kind, update=update)
    assert len(batches) == hooked.updates == whole.updates > 0  # every batch went through the hook, and only once
    assert hooked.episode_returns == whole.episode_returns and hooked.evaluations == whole.evaluations
    nets = [[p for module in vars(run.agent).values() if isinstance(module, torch.nn.Module)
             for p in module.parameters()] for run in (whole, hooked)]
    assert all(torch.equal(p, q) for p, q in zip(*nets, strict=True))
    # stop_at below any return: the run stops at its first evaluation, after eval_every episodes (K a collection)
    stopped = small_run(kind, stop_at=-1e9)
    assert stopped.evaluations == whole.evaluations[:1]
    assert stopped.episode_returns == whole.episode_returns[:len(stopped.episode_returns)]
    assert len(stopped.episode_returns) < len(whole.episode_returns)


class Bar:
    """Stands in for tqdm: records what the loop's progress bar was told."""

    bars = []

    def __init__(self, iterable=None, total=None, initial=0, desc="", disable=False, leave=True):
        self.iterable, self.total, self.n, self.postfix = iterable, total, initial, {}
        if iterable is None:  # (an evaluation's loop over its episodes is not the training's bar)
            Bar.bars.append(self)

    def __iter__(self):
        return iter(self.iterable)

    def update(self, n):
        self.n += n

    def set_postfix(self, **shown):
        self.postfix = shown

    def close(self):
        pass


# what each kind's bar shows beside the evaluation: only what its learner explores with (MAPPO's epsilon is 0 by
# default: no eps; a Gaussian policy: nothing)
SHOWN = {"off_policy": {"eps"}, "on_policy": {"beta"}, "episode_replay": {"eps"}, "continuous": {"noise"},
         "continuous_on_policy": set()}


@pytest.mark.parametrize("kind", SMALL)
def test_the_progress_bar_counts_what_the_loop_runs_and_shows_the_learners_own_fields(kind, monkeypatch):
    monkeypatch.setattr(loops, "tqdm", Bar)
    Bar.bars.clear()
    run = small_run(kind)
    (bar,) = Bar.bars
    assert bar.n == bar.total == len(run.episode_returns)  # MAPPO: 20 episodes asked, 3 batches of 8 run, 24/24
    assert set(bar.postfix) == {"eval", "sampled"} | SHOWN[kind] and run.sampled_evaluations  # every kind samples
    assert bar.postfix["eval"] == f"{run.evaluations[-1][1]:.1f}"


def test_the_bar_of_a_whole_batch_run_is_rounded_up_to_whole_batches(monkeypatch):
    monkeypatch.setattr(loops, "tqdm", Bar)
    Bar.bars.clear()
    run = small_run("on_policy")
    assert Bar.bars[0].total == 24 and len(run.episode_returns) == 24  # ceil(20 / 8) = 3 batches of K = 8


# -- greedy and sampled evaluation side by side ---------------------------------------------------------------------

def _all_zero(network):
    import torch

    with torch.no_grad():
        for parameter in network.parameters():
            parameter.zero_()
    return network


def test_a_tie_deadlocks_greedy_evaluation_and_not_the_sampled_policy():
    # every weight zero: every agent's logits tie at 0 over Switch's 5 actions. Greedy's argmax of a tie is the first
    # action, DOWN, at every step: both agents press into their room's wall for all 50 steps, nobody home,
    # 2 agents x 50 steps x -0.1 = -10.0 exactly. The sampled policy draws uniformly and leaves the wall: above
    # -10.0 on these seeded episodes, the same every time.
    from marl_edu.learners.coma import COMA
    from marl_edu.training.evaluation import greedy_team_return, sampled_as, sampled_returns, sampled_team_return

    agent = COMA(2, 2, 5, seed=0)
    _all_zero(agent.actor)
    assert greedy_team_return(agent, "Switch2-v0") == pytest.approx(-10.0)
    sampled = sampled_returns(agent, "Switch2-v0", n_episodes=10, seed=0)  # (10,)
    assert sampled.shape == (10,) and sampled.min() >= -10.0 - 1e-5 and sampled.mean() > -10.0 + 0.05
    # each episode: nobody home (-10.0) or one agent home (its +5 less its steps, the other's 50 x -0.1: -5 to -0.6)
    assert all(abs(r + 10.0) < 1e-5 or -5.0 <= r <= -0.6 + 1e-5 for r in sampled)
    assert sampled_team_return(agent, "Switch2-v0") == pytest.approx(sampled.mean())  # eval_seed 0, 10 episodes
    assert sampled_team_return(agent, "Switch2-v0", 4) == sampled_team_return(agent, "Switch2-v0", 4)  # seeded
    assert sampled_as(agent) == "actions drawn from the policy"


def test_a_value_based_learner_is_evaluated_epsilon_greedily_with_the_textbooks_epsilon():
    # IQL with every weight zero: the Q-values tie, greedy picks DOWN (action 0). Sampled is epsilon-greedy with
    # 0.05: DOWN with probability 0.95 + 0.05 / 5 = 0.96, each other action 0.01. Over 2 agents x 1,000 steps the
    # other actions are expected 2,000 x 0.04 = 80 times (sd sqrt(2,000 x 0.04 x 0.96) = 8.8); greedy never plays them.
    import numpy as np

    from marl_edu.learners.value_decomposition import IQL
    from marl_edu.training.evaluation import SAMPLED_EPSILON, own_generator, sampled_as, sampled_policy

    agent = _all_zero_q(IQL(2, 2, 5, seed=0))
    assert SAMPLED_EPSILON == 0.05 and sampled_as(agent) == "epsilon-greedy, epsilon 0.05"
    obs = np.zeros((2, 2), dtype=np.float32)
    greedy, sampled = agent.greedy_policy(), None
    with own_generator(agent, 0):
        sampled = sampled_policy(agent)
        actions = np.array([sampled(obs) for _ in range(1000)])  # (1000, 2)
    assert all((greedy(obs) == 0).all() for _ in range(20))
    assert 80 - 4 * 8.8 < (actions != 0).sum() < 80 + 4 * 8.8


def _all_zero_q(agent):
    _all_zero(agent.q_net)
    return agent


def test_a_sampled_evaluation_leaves_the_learners_own_generator_alone():
    from marl_edu.learners.coma import COMA
    from marl_edu.training.evaluation import sampled_returns

    agent = COMA(2, 2, 5, seed=0)
    before = agent.generator.get_state()
    sampled_returns(agent, "Switch2-v0", n_episodes=3, seed=5)
    assert agent.generator.get_state().equal(before)
    with pytest.raises(ValueError, match="epsilon must be a number in \\[0, 1\\], got 2"):
        __import__("marl_edu.learners.value_decomposition", fromlist=["IQL"]).IQL(2, 2, 5).sampled_policy(epsilon=2)


@pytest.mark.parametrize("kind", ["off_policy", "on_policy", "episode_replay", "continuous_on_policy"])
def test_the_sampled_evaluations_change_no_number_of_training(kind):  # ("continuous", the ensemble's: fingerprints.py)
    # the same seed with and without the sampled evaluation: the same episodes, greedy evaluations and weights
    import torch

    sampled = 1 if kind.startswith("continuous") else 2  # (random starts: at most the greedy evaluation's 1 episode)
    plain, both = small_run(kind, sampled_episodes=0), small_run(kind, sampled_episodes=sampled)
    assert plain.episode_returns == both.episode_returns and plain.evaluations == both.evaluations
    assert plain.sampled_evaluations == [] and [e for e, _ in both.sampled_evaluations] == [
        e for e, _ in both.evaluations]
    for p, q in zip(plain.agent.__dict__.values(), both.agent.__dict__.values()):
        if isinstance(p, torch.nn.Module):
            assert all(torch.equal(a, b) for a, b in zip(p.state_dict().values(), q.state_dict().values()))


def test_bad_sampled_episodes_are_named():
    with pytest.raises(ValueError, match="sampled_episodes must be a non-negative int, got -1"):
        small_run("on_policy", sampled_episodes=-1)
    # where episodes start at random a sampled evaluation plays the greedy one's episodes: no more of them than it
    with pytest.raises(ValueError, match="sampled_episodes must be at most eval_episodes \\(1\\) on "
                                         "simple_spread_v3, whose episodes start at random.*got 2"):
        small_run("continuous_on_policy", sampled_episodes=2)
    assert len(small_run("on_policy", sampled_episodes=3).sampled_evaluations) > 0  # (Switch: every start alike)


def _zero_forces(algo: str):
    """A continuous learner (N=3, O=18, A=2: simple_spread_v3's sizes) whose every actor outputs 0 before its tanh (or
    as its Gaussian's mean): its noise-free policy stands still, force (0, 0) for every agent."""
    import torch

    from marl_edu.learners.table import entry

    agent = entry(algo).learner(3, 18, 2, seed=0)
    ppo = isinstance(getattr(agent, "actor", None), torch.nn.Module)  # (an ensemble's actor(i, m) is a method)
    _all_zero(agent.actor.mean if ppo else agent.actors)
    if ppo:  # sigma = exp(log 0.5) = 0.5
        with torch.no_grad():
            agent.actor.log_std.fill_(float(np.log(0.5)))
    return agent


@pytest.mark.parametrize("algo, sigma", [("maddpg_continuous", 0.05), ("maddpg_ensemble", 0.05),
                                         ("mappo_continuous", 0.5)])
def test_a_continuous_learners_sampled_forces_are_its_noise_by_hand(algo, sigma):
    # every actor outputs 0, so mu = tanh(0) = 0 (PPO: the mean is 0) and the sampled force is clip(0 + sigma * eps,
    # -1, 1) with eps the generator's standard normals: MADDPG's kin add their last exploration noise, noise_end =
    # 0.05; PPO draws from its Gaussian, sigma 0.5. An ensemble first draws the episode's sub-policies (1, N) from the
    # same generator, then the noise. The noise-free policy plays (0, 0).
    import torch

    from marl_edu.training.evaluation import own_generator, sampled_policy

    agent = _zero_forces(algo)
    obs = np.zeros((3, 18), dtype=np.float32)
    noise_free = agent.policy(np.zeros(3, dtype=np.int64)) if algo == "maddpg_ensemble" else agent.greedy_policy()
    assert (noise_free(obs) == 0).all()
    with own_generator(agent, 7):
        forces = sampled_policy(agent)(obs)  # (3, 2)
    by_hand = torch.Generator().manual_seed(7)
    if algo == "maddpg_ensemble":
        torch.randint(0, agent.n_subpolicies, (1, 3), generator=by_hand)  # the sub-policies' draw
    eps = torch.randn((1, 3, 2), generator=by_hand)[0].numpy()  # (3, 2)
    assert forces.shape == (3, 2) and np.allclose(forces, np.clip(sigma * eps, -1.0, 1.0), atol=1e-7)


def test_a_continuous_learners_noise_free_and_sampled_scores_differ_by_construction():
    # every actor outputs 0: the noise-free policy stands still, so its score is exactly the standing-still policy's
    # on the same start states; the sampled one adds noise_end = 0.05 noise to every force on the same episodes, so
    # it moves and scores otherwise (with noise_end = 0 the two are equal, their gap's standard error 0). Both
    # seeded: the same figures twice, the learner's own generator untouched.
    from marl_edu.runs.seed import particle_figures
    from marl_edu.training.evaluation import evaluate_particle, sampled_as

    agent = _zero_forces("maddpg_continuous")
    before = agent.generator.get_state()
    figures = particle_figures(agent, "simple_spread_v3", episodes=2)
    still = evaluate_particle(lambda obs: np.zeros((obs.shape[0], 2), np.float32), "simple_spread_v3", episodes=2)
    assert figures["team_return"] == still.team_return
    assert figures["sampled"] != pytest.approx(still.team_return, abs=1e-6)  # the noise moved the agents
    assert figures["sampled_starts"] == "greedy" and figures["sampled_gap_se"] > 0
    agent.config.noise_end = 0.0  # no noise: the sampled figure is standing still's on the same episodes
    quiet = particle_figures(agent, "simple_spread_v3", episodes=2)
    assert quiet["sampled"] == pytest.approx(still.team_return, abs=1e-5) and quiet["sampled_gap_se"] < 1e-5
    agent.config.noise_end = 0.05
    assert particle_figures(agent, "simple_spread_v3", episodes=2) == figures
    assert agent.generator.get_state().equal(before)
    assert sampled_as(agent) == "Gaussian noise, sigma 0.05"
    assert sampled_as("maddpg_ensemble") == "every agent's sub-policy drawn per episode, Gaussian noise, sigma 0.05"
    assert sampled_as("ippo_continuous") == "forces drawn from the Gaussian policy"


def test_an_env_step_budget_ends_with_the_first_collection_that_reaches_it():
    from marl_edu.learners.value_decomposition import ValueDecompositionConfig

    # VDN on Switch2-v0 collects K = 2 whole episodes at a time; an untrained team reaches no switch, so every episode
    # runs to the 50-step limit: 2 x 50 = 100 env steps a collection, deterministic for the seed
    config = ValueDecompositionConfig(n_envs=2)  # (no update: fewer episodes than a batch of 16)
    exact = train("vdn", "Switch2-v0", config=config, env_steps=100, eval_every=1, progress=False, sampled_episodes=0)
    assert (exact.env_steps, len(exact.episode_returns)) == (100, 2)  # 100 >= 100 after the first collection
    over = train("vdn", "Switch2-v0", config=config, env_steps=101, eval_every=1, progress=False, sampled_episodes=0)
    assert (over.env_steps, len(over.episode_returns)) == (200, 4)  # 100 < 101: one more collection, 200
    assert [episode for episode, _ in over.evaluations] == [2, 4]  # the last collection's evaluation is made
    # MADDPG on simple_spread_v3 steps its K = 4 copies one step at a time (4 env steps); its episodes last 25 steps:
    # after 25 steps of each copy, 100 env steps, 4 episodes ended; 101 needs one more step of the 4: 104, no episode
    from marl_edu.learners.continuous import ContinuousMADDPGConfig

    run = train("maddpg_continuous", "simple_spread_v3", config=ContinuousMADDPGConfig(n_envs=4), env_steps=101,
                eval_every=50, progress=False, sampled_episodes=0)
    assert (run.env_steps, len(run.episode_returns), run.updates) == (104, 4, 0)


def test_an_env_step_budget_runs_the_exploration_schedule_over_env_steps(monkeypatch):
    seen = []
    real = loops.exploration
    monkeypatch.setattr(loops, "exploration", lambda *args: seen.append(args[2:]) or real(*args))
    from marl_edu.learners.value_decomposition import ValueDecompositionConfig

    train("vdn", "Switch2-v0", config=ValueDecompositionConfig(n_envs=2), env_steps=250, eval_every=10,
          progress=False, sampled_episodes=0)
    assert seen == [(0, 250), (100, 250), (200, 250)]  # (env steps done, budget) before each 100-step collection


def test_a_budget_of_episodes_and_env_steps_at_once_or_a_bad_one_is_named():
    with pytest.raises(ValueError, match="give a budget of episodes or of env_steps, not both"):
        train("vdn", "Switch2-v0", episodes=10, env_steps=100, progress=False)
    for bad in (0, -5, 2.5, True):
        with pytest.raises(ValueError, match="env_steps must be a positive int"):
            train("vdn", "Switch2-v0", env_steps=bad, progress=False)


def _drawing_nothing(algo: str, env_id: str, monkeypatch):
    """An untrained learner of ``algo`` sized for ``env_id`` whose sampled policy draws nothing, so that it plays its
    greedy (noise-free) actions: MADDPG with forces at noise_end = 0; epsilon 0 for a learner that acts on Q-values;
    MAPPO's and discrete MADDPG's logits scaled up, their probabilities one-hot on the argmax. Sampled evaluations
    play 2 env copies at a time (chunks)."""
    import torch

    from marl_edu.envs.make import make_env
    from marl_edu.learners.table import LEARNERS
    from marl_edu.training import evaluation

    env = make_env(env_id, seed=0)
    actions = env.action_dim if algo == "maddpg_continuous" else env.n_actions  # A: force entries or actions
    agent = LEARNERS[algo].learner(env.n_agents, env.obs_dim, actions, seed=3)
    monkeypatch.setattr(evaluation, "SAMPLED_COPIES", 2)
    monkeypatch.setattr(evaluation, "SAMPLED_EPSILON", 0.0)  # (IQL's, VDN's sampled policy: the argmax)
    if algo == "maddpg_continuous":
        agent.config.noise_end = 0.0
    elif algo in ("mappo", "maddpg"):
        heads = [agent.actor.head] if algo == "mappo" else [actor.mlp.net[-1] for actor in agent.actors]
        with torch.no_grad():
            for head in heads:  # (the logits' layer)
                head.weight.mul_(1e4)
                head.bias.mul_(1e4)
    return agent


@pytest.mark.parametrize("algo, env_id", [("maddpg_continuous", "simple_spread_v3"), ("iql", "PredatorPrey7x7-v0"),
                                          ("vdn", "Foraging-8x8-2p-3f-v3"), ("mappo", "simple_spread_v3_discrete"),
                                          ("maddpg", "PredatorPrey7x7-v0")])
def test_the_sampled_figure_plays_the_greedy_figures_episodes(algo, env_id, monkeypatch):
    # with sampling that draws nothing (MADDPG's noise_end = 0; epsilon 0 for a learner that acts on Q-values; MAPPO's
    # and discrete MADDPG's probabilities made one-hot on the greedy action), the sampled returns on the greedy
    # evaluation's Starts ARE the greedy returns, episode by episode, chunks included (2 copies at a time: episodes
    # 0-1, 2-3, 4). On PredatorPrey where episode k starts depends on the prey's random moves in the episodes before
    # it, so on the policy that played them; the copies start there all the same
    from marl_edu.data.rollout import run_episode
    from marl_edu.envs.make import VecEnv, family, make_env
    from marl_edu.training.evaluation import greedy_episodes, greedy_team_return, paired_returns, sampled_returns

    agent = _drawing_nothing(algo, env_id, monkeypatch)
    env = make_env(env_id, seed=family(env_id).eval_seed)
    greedy, starts = greedy_episodes(agent, env_id, 5)  # (5,) episodes in a row, one env seeded eval_seed
    assert greedy.shape == (5,) and greedy.mean() == greedy_team_return(agent, env_id, 5)
    assert (starts.env_id, len(starts.states), starts.states[0]) == (env.env_id, 5, None)
    sampled = sampled_returns(agent, env_id, 5, seed=9, starts=starts)  # (5,)
    assert sampled.tolist() == pytest.approx(greedy.tolist(), abs=1e-5)
    # the copies start where the greedy episodes did, each its own (an untrained learner's returns may all be alike)
    firsts = [run_episode(env, agent.greedy_policy()).obs[0] for _ in range(5)]  # (N, O) each
    assert len({first.tobytes() for first in firsts}) == 5
    copies = VecEnv(env_id, 5, starts.seed, starts.states).reset()  # (5, N, O)
    assert all(np.array_equal(copies[k], firsts[k]) for k in range(5))
    # played chunk by chunk (2 at a time), both at once: the same figures
    both = paired_returns(agent, env_id, 5, seed=9)  # (5,), (5,)
    assert both[0].tolist() == greedy.tolist() and both[1].tolist() == sampled.tolist()
    for bad, named in ((3, "starts must be the Starts of 3 episodes of .*, got 5 episodes"),):
        with pytest.raises(ValueError, match=named):
            sampled_returns(agent, env_id, bad, seed=9, starts=starts)


def test_starts_of_another_env_or_of_the_wrong_kind_are_refused():
    from marl_edu.envs.make import VecEnv
    from marl_edu.learners.value_decomposition import IQL
    from marl_edu.training.evaluation import greedy_episodes, sampled_returns

    agent = IQL(4, 28, 5, seed=0)  # PredatorPrey7x7-v0's sizes
    _, starts = greedy_episodes(agent, "PredatorPrey7x7-v0", 2)
    with pytest.raises(ValueError, match="starts must be the Starts of 2 episodes of PredatorPrey5x5-v0 .*got 2 "
                                         "episodes of PredatorPrey7x7-v0"):
        sampled_returns(IQL(2, 28, 5, seed=0), "PredatorPrey5x5-v0", 2, starts=starts)
    with pytest.raises(ValueError, match="got list"):
        sampled_returns(agent, "PredatorPrey7x7-v0", 2, starts=starts.states)
    with pytest.raises(ValueError, match="states must be a list of one saved state \\(or None\\) per copy, 3; got 2 "
                                         "states"):
        VecEnv("PredatorPrey7x7-v0", 3, 0, starts.states)
    with pytest.raises(ValueError, match="states\\[1\\]: the saved state is not a PredatorPrey7x7-v0 env's"):
        VecEnv("PredatorPrey7x7-v0", 2, 0, [None, {"step_count": 3}])


def test_a_paired_gap_by_hand():
    from marl_edu.training.evaluation import paired_gap

    # sampled (1, 2, 4) against greedy (0, 2, 1) on the same 3 episodes: differences (1, 0, 3), mean 4/3; deviations
    # (-1/3, -4/3, 5/3), squares (1 + 16 + 25) / 9 = 42/9, over E - 1 = 2: variance 7/3; se = sqrt(7/3) / sqrt(3)
    # = sqrt(7/9) = 0.8819
    gap = paired_gap(np.array([1.0, 2.0, 4.0]), np.array([0.0, 2.0, 1.0]))
    assert gap.gap == pytest.approx(4 / 3) and gap.se == pytest.approx(np.sqrt(7 / 9))
    assert np.isnan(paired_gap(np.array([3.0]), np.array([1.0])).se) and paired_gap([3.0], [1.0]).gap == 2.0
    for sampled, greedy, named in (([1.0, 2.0], [1.0], "sampled \\(2,\\) and greedy \\(1,\\)"),
                                   ([], [], "E >= 1"), ([[1.0]], [[1.0]], "two \\(E,\\) arrays"),
                                   ([1.0, np.nan], [1.0, 2.0], "not finite")):
        with pytest.raises(ValueError, match=named):
            paired_gap(sampled, greedy)


def test_a_run_on_random_starts_records_sampled_figures_on_its_greedy_episodes(monkeypatch):
    # IQL on PredatorPrey with epsilon 0 in its sampled policy: every periodic sampled evaluation and the final
    # sampled figure play the greedy ones' episodes with the same (greedy) actions, so they are equal, and the final
    # gap's standard error is 0; the record says what its sampled figures played
    from marl_edu.learners.value_decomposition import ValueDecompositionConfig
    from marl_edu.runs.seed import run_seed
    from marl_edu.training import evaluation

    monkeypatch.setattr(evaluation, "SAMPLED_EPSILON", 0.0)
    config = ValueDecompositionConfig(n_envs=2, batch_episodes=2, hidden=8)
    run, figures = run_seed("iql", "PredatorPrey7x7-v0", 4, config, seed=1, eval_every=2, final_episodes=3)
    assert [e for e, _ in run.sampled_evaluations] == [e for e, _ in run.evaluations] == [2, 4]
    assert [v for _, v in run.sampled_evaluations] == pytest.approx([v for _, v in run.evaluations], abs=1e-5)
    assert figures["sampled"] == pytest.approx(figures["greedy"], abs=1e-5)
    assert (figures["sampled_starts"], figures["sampled_gap_se"]) == ("greedy", pytest.approx(0.0, abs=1e-6))
    assert list(figures)[:5] == ["seed", "greedy", "sampled", "sampled_starts", "sampled_gap_se"]
    _, on_switch = run_seed("iql", "Switch2-v0", 4, config, seed=1, eval_every=2, final_episodes=3)
    assert "sampled_starts" not in on_switch  # (every Switch episode starts alike: nothing to pair)
    # one final episode has no standard error: the record leaves it out (it never holds a NaN)
    from marl_edu.runs.seed import final_figures
    assert list(final_figures(run.agent, "PredatorPrey7x7-v0", 1)) == ["greedy", "sampled", "sampled_starts"]


def test_the_sampled_evaluations_change_no_number_of_training_where_episodes_start_at_random():
    # as on Switch (above): IQL on PredatorPrey with and without its sampled evaluations, which now start env copies
    # in the greedy evaluation's states: the same episodes, greedy evaluations and weights
    import torch

    from marl_edu.learners.value_decomposition import ValueDecompositionConfig

    def run(sampled):
        config = ValueDecompositionConfig(n_envs=2, batch_episodes=2, hidden=8)
        return train("iql", "PredatorPrey7x7-v0", 6, config, seed=2, eval_every=2, progress=False, eval_episodes=3,
                     sampled_episodes=sampled)

    plain, both = run(0), run(3)
    assert plain.episode_returns == both.episode_returns and plain.evaluations == both.evaluations
    assert len(both.sampled_evaluations) == len(both.evaluations) == 3 and plain.updates == both.updates > 0
    for p, q in zip(plain.agent.__dict__.values(), both.agent.__dict__.values()):
        if isinstance(p, torch.nn.Module):
            assert all(torch.equal(a, b) for a, b in zip(p.state_dict().values(), q.state_dict().values()))

