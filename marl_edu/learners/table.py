"""The one table of the course's learners, read by everything above it: the training loops, policy files, the
runs module, the command line, the benchmarks and the widgets. A layer above asks the table, never a learner's name
or class: what it trains with, what it acts with, what its policy is.

Each row says, for a learner's name (the name its policy files and runs are known by):

- ``learner``: the class, built as ``learner(N, O, A, config, seed=..., device=...)``;
- ``config``: its config dataclass; the command line's options for it are that dataclass's fields whose metadata
  has a ``"help"`` (``course.cli.config_options``), and ``config_with`` sets any field from ``"field=value"`` text;
- ``loop``: how it trains (``LOOPS`` says what each kind means: the actions its learners take and what their updates
  learn from): ``"on_policy"`` (K whole episodes with the current policy, used once), ``"off_policy"`` (a replay
  buffer of transitions on the discrete envs), ``"episode_replay"`` (K whole episodes played epsilon-greedily, kept
  in a replay of episodes for recurrent agents), ``"continuous"`` (a replay buffer on the particle envs, forces in
  [-1, 1]) or ``"continuous_on_policy"`` (K whole particle-env episodes with the current Gaussian policy, used for
  one PPO update); ``training.loops.train`` picks its data path by the row's ``replay``;
- ``policy``: its ``Policy``: the attribute holding the networks a policy file keeps, how a policy file rebuilds
  them, whether they are recurrent and whether each agent plays one of several sub-policies;
- ``episodes`` and ``eval_every``: its default budget (the committed results') and how often it is evaluated (a
  discrete learner: one greedy episode on Switch; a continuous one: 10 noise-free episodes);
- ``about``: one line for the command line's help.

``check_env`` says which envs a learner takes (and ``DEFAULT_ENV`` its default), ``check_fits`` whether a policy fits
an env.

Adding a learner is one row here, its module (class and config) and its tests (ARCHITECTURE.md, "Adding a learner").
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import typing
from dataclasses import dataclass
from typing import Callable

from torch import nn

from marl_edu.envs.make import FAMILIES, family, make_env
from marl_edu.learners.baselines import IACV, IDDPG, CentralQV, CentralV
from marl_edu.learners.coma import COMA, COMAConfig
from marl_edu.learners.continuous import ContinuousIDDPG, ContinuousMADDPG, ContinuousMADDPGConfig
from marl_edu.learners.ensembles import EnsembleConfig, EnsembleMADDPG
from marl_edu.learners.inference import InferenceConfig, InferringMADDPG
from marl_edu.learners.maddpg import MADDPG, MADDPGConfig
from marl_edu.learners.ppo import IPPO, MAPPO, PPOConfig
from marl_edu.learners.ppo_continuous import ContinuousIPPO, ContinuousMAPPO, ContinuousPPOConfig, GaussianActor
from marl_edu.learners.value_decomposition import IQL, QMIX, VDN, ValueDecompositionConfig
from marl_edu.pieces.nets import Actor, RecurrentActor

# the loop kinds, and what each means for the layers above: the actions its learners take ("discrete" actions on the
# ma-gym envs, or "forces" in [-1, 1] on the particle envs) and what their updates learn from ("transitions" or
# "episodes" kept in a replay, or None: each batch of whole episodes of the current policy, used once)
LOOPS = {"on_policy": ("discrete", None), "off_policy": ("discrete", "transitions"),
         "episode_replay": ("discrete", "episodes"), "continuous": ("forces", "transitions"),
         "continuous_on_policy": ("forces", None)}


# -- the policies: what a policy file keeps of a learner, and how it rebuilds it -------------------------------------

def n_actors(N: int, O: int, A: int, config) -> nn.ModuleList:
    """N actors, MLPs with two hidden layers on each agent's own observation O to its A logits (or forces): MADDPG's
    and IDDPG's, discrete or continuous."""
    return nn.ModuleList([Actor(O, A, (config.hidden, config.hidden)) for _ in range(N)])


def subpolicy_actors(N: int, O: int, A: int, config) -> nn.ModuleList:
    """N*M actors as ``n_actors``'s, M = ``config.n_subpolicies`` per agent, agent i's sub-policy m at i*M + m."""
    return nn.ModuleList([Actor(O, A, (config.hidden, config.hidden)) for _ in range(N * config.n_subpolicies)])


def shared_recurrent_network(N: int, O: int, A: int, config) -> RecurrentActor:
    """One network shared by the agents, a GRU over ``[o_{i,t}, one_hot(a_{i,t-1}), one_hot(i)]`` (feed-forward on
    ``[o_{i,t}, one_hot(i)]`` with ``config.recurrent`` False) to A outputs: COMA's actor, PPO's, IQL's agent network."""
    return RecurrentActor(O + (A if config.recurrent else 0) + N, A, config.hidden, config.recurrent)


def shared_gaussian_actor(N: int, O: int, A: int, config) -> GaussianActor:
    """One Gaussian actor shared by the agents on ``[o_{i,t}, one_hot(i)]``: continuous PPO's."""
    return GaussianActor(O + N, A, config.hidden, config.log_std_start)


@dataclass(frozen=True)
class Policy:
    """A learner's policy as its policy files keep it (``training.checkpoints``).

    - ``attribute``: the learner's attribute holding the policy's networks; a policy file stores their state dict
      under this name (``{"actors": ...}``) and a loaded learner gets the stored weights there;
    - ``network``: ``network(N, O, A, config)`` builds those networks as the learner does (a policy file's tensors are
      checked against their shapes, built on the meta device, before the learner is);
    - ``recurrent``: a GRU over the agent's history (unless its config's ``recurrent`` is False);
    - ``subpolicies``: each agent plays one of ``config.n_subpolicies`` sub-policies, drawn once per episode;
    - ``what``: whose weights they are, for messages.
    """

    attribute: str
    network: Callable
    recurrent: bool
    what: str
    subpolicies: bool = False


ACTORS = Policy("actors", n_actors, False, "actors'")
SUBPOLICY_ACTORS = Policy("actors", subpolicy_actors, False, "actors'", subpolicies=True)
SHARED_ACTOR = Policy("actor", shared_recurrent_network, True, "shared actor's")
AGENT_NETWORK = Policy("q_net", shared_recurrent_network, True, "shared agent network's")  # greedy on its Q-values
GAUSSIAN_ACTOR = Policy("actor", shared_gaussian_actor, False, "shared actor's")


@dataclass(frozen=True)
class Entry:
    """One row of ``LEARNERS``."""

    learner: type
    config: type
    loop: str
    policy: Policy
    episodes: int
    eval_every: int
    about: str

    @property
    def actions(self) -> str:
        """``"discrete"`` (actions on the ma-gym envs) or ``"forces"`` (in [-1, 1], on the particle envs)."""
        return LOOPS[self.loop][0]

    @property
    def continuous(self) -> bool:
        """Whether the learner acts with forces on the particle envs."""
        return self.actions == "forces"

    @property
    def replay(self) -> str | None:
        """What its updates learn from: ``"transitions"`` or ``"episodes"`` kept in a replay (none before the replay
        holds a batch), or None: each batch of whole episodes of the current policy, used once."""
        return LOOPS[self.loop][1]


LEARNERS: dict[str, Entry] = {
    "maddpg": Entry(MADDPG, MADDPGConfig, "off_policy", ACTORS, 1500, 50,
                    "MADDPG: one centralised critic per agent on every observation and action, from a replay buffer"),
    "iddpg": Entry(IDDPG, MADDPGConfig, "off_policy", ACTORS, 1500, 50,
                   "independent DDPG: MADDPG whose critics see their own agent only"),
    "coma": Entry(COMA, COMAConfig, "on_policy", SHARED_ACTOR, 6000, 200,
                  "COMA: a centralised Q critic and the counterfactual baseline, from whole episodes"),
    "central_qv": Entry(CentralQV, COMAConfig, "on_policy", SHARED_ACTOR, 6000, 200,
                        "central-QV: COMA's Q critic less a learned V(s), no counterfactual baseline"),
    "central_v": Entry(CentralV, COMAConfig, "on_policy", SHARED_ACTOR, 6000, 200,
                       "central-V: a centralised V(s) critic"),
    "iac": Entry(IACV, COMAConfig, "on_policy", SHARED_ACTOR, 6000, 200,
                 "IAC-V: each agent's V on its own observation"),
    "mappo": Entry(MAPPO, PPOConfig, "on_policy", SHARED_ACTOR, 6000, 200,
                   "MAPPO: PPO's clipped objective with a centralised V(s) critic, from whole episodes"),
    "ippo": Entry(IPPO, PPOConfig, "on_policy", SHARED_ACTOR, 6000, 200,
                  "independent PPO: PPO's clipped objective with each agent's V on its own history"),
    "iql": Entry(IQL, ValueDecompositionConfig, "episode_replay", AGENT_NETWORK, 3000, 50,
                 "independent Q-learning: each agent's recurrent Q on its own, from the team reward"),
    "vdn": Entry(VDN, ValueDecompositionConfig, "episode_replay", AGENT_NETWORK, 3000, 50,
                 "VDN: the team's Q as the sum of the agents' recurrent Qs"),
    "qmix": Entry(QMIX, ValueDecompositionConfig, "episode_replay", AGENT_NETWORK, 3000, 50,
                  "QMIX: the agents' Qs mixed monotonically, the mixer's weights from hypernetworks on the state"),
    "maddpg_continuous": Entry(ContinuousMADDPG, ContinuousMADDPGConfig, "continuous", ACTORS, 4000, 200,
                               "MADDPG with continuous forces on the particle envs"),
    "iddpg_continuous": Entry(ContinuousIDDPG, ContinuousMADDPGConfig, "continuous", ACTORS, 4000, 200,
                              "independent DDPG with continuous forces"),
    "maddpg_inferred": Entry(InferringMADDPG, InferenceConfig, "continuous", ACTORS, 4000, 200,
                             "MADDPG inferring the other agents' policies from their actions"),
    "maddpg_ensemble": Entry(EnsembleMADDPG, EnsembleConfig, "continuous", SUBPOLICY_ACTORS, 4000, 200,
                             "MADDPG with an ensemble of sub-policies per agent"),
    "mappo_continuous": Entry(ContinuousMAPPO, ContinuousPPOConfig, "continuous_on_policy", GAUSSIAN_ACTOR, 4000, 200,
                              "MAPPO with Gaussian forces on the particle envs: PPO's clipped objective, a centralised "
                              "V(s)"),
    "ippo_continuous": Entry(ContinuousIPPO, ContinuousPPOConfig, "continuous_on_policy", GAUSSIAN_ACTOR, 4000, 200,
                             "independent PPO with Gaussian forces: each agent's V on its own observation"),
}

# views of the table, by the loop that trains them
ON_POLICY = tuple(name for name, entry in LEARNERS.items() if entry.loop == "on_policy")
ALGORITHMS = {name: entry.learner for name, entry in LEARNERS.items() if not entry.continuous}  # discrete
CONTINUOUS_ALGORITHMS = {name: entry.learner for name, entry in LEARNERS.items() if entry.continuous}


def entry(algo: str) -> Entry:
    """The row of learner ``algo``; ValueError naming the known learners for any other name."""
    if not isinstance(algo, str) or algo not in LEARNERS:
        raise ValueError(f"unknown algo {algo!r}; choose one of {', '.join(LEARNERS)}")
    return LEARNERS[algo]


def config_class(algo: str) -> type:
    """Learner ``algo``'s config dataclass (``COMAConfig`` for COMA and its baselines, ``PPOConfig`` for PPO, ...)."""
    return entry(algo).config


def algo_name_of_class(learner: type) -> str:
    """The name a learner class is known by in ``LEARNERS``."""
    for name, row in LEARNERS.items():
        if learner is row.learner:
            return name
    raise ValueError(f"not one of the learners {sorted(LEARNERS)}: {getattr(learner, '__name__', learner)}")


def recorded_config(algo: str, recorded: dict) -> dict:
    """A config of learner ``algo`` recorded as a dict of its fields (a run's record, a checkpoint's header), with the
    fields it lacks at their defaults. A field added to a config later keeps the old behaviour at its default
    (``PPOConfig.target_kl``: 0, never stops), so a run recorded before it existed compares equal to the same run
    recorded after, and is kept or resumed, not trained again."""
    return {**dataclasses.asdict(config_class(algo)()), **recorded}


def algo_name(agent) -> str:
    """The name a learner is known by in ``LEARNERS`` (and in its policy files and runs)."""
    return algo_name_of_class(type(agent))


def check_fits(agent, env) -> None:
    """Raise ValueError unless ``agent``'s policy can play ``env``: the same N agents, O observation dims and A
    actions (discrete) or action dims (forces), naming the sizes that differ.

    Args:
        agent: a learner (``n_agents``, ``obs_dim``, ``n_actions``), e.g. one ``load_policy`` returned.
        env: an environment of ``envs.make_env`` or ``make_vec_env`` (``env_id``, ``n_agents``, ``obs_dim``, and
            ``n_actions`` or, for forces, ``action_dim``), or an env id (made with ``make_env``).
    """
    if isinstance(env, str):
        env = make_env(env)
    for size in ("n_agents", "obs_dim"):
        if not hasattr(agent, size) or not hasattr(env, size):
            raise ValueError(f"check_fits(agent, env) takes a learner and an environment (make_env's) or env id, got "
                             f"{type(agent).__name__} and {type(env).__name__}")
    continuous = hasattr(env, "action_dim")
    mine = {"N": agent.n_agents, "O": agent.obs_dim, "A": agent.n_actions}
    theirs = {"N": env.n_agents, "O": env.obs_dim, "A": env.action_dim if continuous else env.n_actions}
    differ = [size for size in mine if mine[size] != theirs[size]]
    if differ:
        env_id = getattr(env, "env_id", type(env).__name__)
        verb = "differs" if len(differ) == 1 else "differ"
        raise ValueError(f"the policy does not fit {env_id} ({' and '.join(differ)} {verb}): it was built for "
                         f"N={mine['N']} agents, O={mine['O']} obs dims, A={mine['A']} "
                         f"{'action dims' if continuous else 'actions'}, and {env_id} has N={theirs['N']}, "
                         f"O={theirs['O']}, A={theirs['A']}")


# the env a learner trains on when none is named (the command line's --env)
DEFAULT_ENV = {"discrete": "Switch2-v0", "continuous": "simple_spread_v3"}


def check_env(algo: str, env: str | None) -> str:
    """The env ``algo`` trains (or a policy of it plays) on: ``env`` resolved (``"ma_gym:Switch2-v0"`` ->
    ``"Switch2-v0"``, ``"lbforaging:Foraging-8x8-2p-3f-v3"`` -> ``"Foraging-8x8-2p-3f-v3"``), or ``DEFAULT_ENV`` if
    None. ValueError for an unknown id (naming the close ones), an env with forces for a discrete learner, or an env
    with discrete actions for a continuous one."""
    continuous = entry(algo).continuous
    if env is None:
        return DEFAULT_ENV["continuous" if continuous else "discrete"]
    found = family(env)  # ValueError for an unknown id
    if continuous and found.actions != "forces":
        force_ids = [env_id for f in FAMILIES if f.actions == "forces" for env_id in f.ids()]
        raise ValueError(f"{algo} acts with continuous forces on the particle envs ({', '.join(force_ids)}), "
                         f"not on {env}")
    if found.actions == "forces" and not continuous:
        discrete = [f.example for f in FAMILIES if f.backend == "mpe2" and f.actions == "discrete"]
        raise ValueError(f"{algo} acts with discrete actions on the ma-gym envs; {env} is a particle env with "
                         f"continuous forces (its learners: {', '.join(CONTINUOUS_ALGORITHMS)}; cooperative navigation "
                         f"with discrete actions: {', '.join(discrete)})")
    return found.resolve(env)


# -- a config from text: the one parser of "field=value" settings (the command line's and the benchmarks' --set) ----

def _parse_setting(name: str, kind: type, text: str):
    """``text`` read as a value of the config field ``name`` of type ``kind`` (int, float, bool or str); ValueError
    naming the field and what it takes."""
    if kind is bool:
        if text not in ("True", "False", "true", "false"):
            raise ValueError(f"{name} takes True or False, got {text!r}")
        return text in ("True", "true")
    if kind is str:
        return text
    if kind not in (int, float):
        raise ValueError(f"{name} (a {getattr(kind, '__name__', kind)}) cannot be set from text")
    if kind is int:
        with contextlib.suppress(ValueError):
            return int(text)
    try:
        number = float(text)
    except ValueError:
        number = math.nan
    if kind is float and math.isfinite(number):
        return number
    if kind is float:
        raise ValueError(f"{name} takes a finite number, got {text!r}")
    if math.isfinite(number) and number.is_integer():  # an int written as a float: 1e3, 64.0
        return int(number)
    raise ValueError(f"{name} takes an int (a whole number), got {text!r}")


def config_with(config_class: type, settings: list[str]):
    """A config of ``config_class`` (a learner's config dataclass, e.g. ``table.config_class("coma")``) with its
    defaults changed by ``settings``, validated: ``config_with(COMAConfig, ["actor_lr=3e-3", "recurrent=False"])``.

    Args:
        config_class: a dataclass with a ``validate()`` method.
        settings: a list of ``"field=value"`` strings, each value read by the field's type from the dataclass: an
            int (``64``; also ``1e3`` or ``64.0``, whole numbers written as floats), a finite float, ``True`` or
            ``False`` (``true``, ``false``), or a str taken as it is. A field set twice takes its last value.

    Raises ValueError naming the setting and the field for a setting without ``=``, an unknown field (listing the
    fields there are), a value its field's type cannot read (NaN or infinity for a float, 2.5 or 1e400 for an int,
    ``maybe`` for a bool) and, from ``validate``, a value out of the field's range.
    """
    if not (isinstance(config_class, type) and dataclasses.is_dataclass(config_class)):
        raise ValueError(f"config_with takes a config dataclass, got {config_class!r}")
    if isinstance(settings, str) or not isinstance(settings, (list, tuple)):
        raise ValueError(f"settings must be a list of 'field=value' strings, got {settings!r}")
    kinds = typing.get_type_hints(config_class)
    fields = [field.name for field in dataclasses.fields(config_class) if field.init]
    changes = {}
    for setting in settings:
        if not isinstance(setting, str):
            raise ValueError(f"settings must be 'field=value' strings, got {setting!r}")
        name, sep, text = setting.partition("=")
        name = name.strip()
        if not sep:
            raise ValueError(f"{setting!r} is not field=value")
        if name not in fields:
            raise ValueError(f"{setting!r}: {config_class.__name__} has no field {name!r}; its fields: "
                             f"{', '.join(fields)}")
        try:
            changes[name] = _parse_setting(name, kinds[name], text.strip())
        except ValueError as error:
            raise ValueError(f"{setting!r}: {error}") from None
    return config_class(**changes).validate()
