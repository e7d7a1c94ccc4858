"""Cooperative navigation with discrete actions (``"simple_spread_v3_discrete"``): mpe2's ``simple_spread_v3`` built
with ``continuous_actions=False``, the task EPyMARL's benchmark runs its discrete learners (COMA, VDN, QMIX, MAPPO, ...)
on. Three agents must cover three landmarks without bumping into each other; each picks one of five actions a step,

    0 NOOP, 1 LEFT, 2 RIGHT, 3 DOWN, 4 UP

(mpe2 pushes the agent with a unit force that way, or not at all), observes 18 numbers (its velocity and position,
the landmarks' and the other agents' positions relative to it, and two communication slots that stay 0), and gets
mpe2's reward ``0.5 * (- sum over landmarks of the distance to the nearest agent) + 0.5 * (-1 per collision it is in)``
(``local_ratio=0.5``, mpe2's default). The team reward is the sum of the agents' rewards, as on every env of the
course. An episode lasts 25 steps (mpe2's ``max_cycles``) and always ends by the time limit: truncated, never
terminated, so targets bootstrap through its end.

Why the id: mpe2 names the task ``simple_spread_v3`` whatever its action space, and the course's ``simple_spread_v3``
is the force version MADDPG learns; ``_discrete`` appended keeps mpe2's name (and version) readable in the id and says
the one thing that differs. An id of its own (rather than an option) keeps "an id says what a learner acts on" true
everywhere: ``envs.make.family(env_id).actions`` is ``"discrete"`` here and ``"forces"`` there.
"""

from __future__ import annotations

import difflib
from typing import Any

import numpy as np

from marl_edu.envs.family import EVAL_EPISODES, FINAL_EVAL_EPISODES, EnvFamily, check_int_actions
from marl_edu.envs.particle import PARTICLE_ENVS, MpeEnv

SPREAD_DISCRETE_ID = "simple_spread_v3_discrete"
SCENARIO = "simple_spread_v3"  # the mpe2 module it is built from, with PARTICLE_ENVS's arguments (mpe2's defaults)
ACTION_MEANINGS = ["NOOP", "LEFT", "RIGHT", "DOWN", "UP"]  # mpe2's discrete actions, in its order


def is_spread_discrete(env_id) -> bool:
    """Whether ``env_id`` is ``"simple_spread_v3_discrete"`` or a misspelling of it (an mpe2-like id asking for
    discrete actions), whose error names the id."""
    return isinstance(env_id, str) and env_id.startswith("simple_") and "discrete" in env_id.lower()


def resolve_spread_discrete_id(env_id: str) -> str:
    """``"simple_spread_v3_discrete"`` itself; anything else raises ValueError naming it."""
    if env_id != SPREAD_DISCRETE_ID:
        close = difflib.get_close_matches(str(env_id), [SPREAD_DISCRETE_ID], n=1, cutoff=0.5)
        hint = f"did you mean {close[0]!r}?" if close else f"the one id with discrete actions is {SPREAD_DISCRETE_ID!r}"
        raise ValueError(f"unknown particle environment with discrete actions {env_id!r}; {hint}")
    return env_id


class SpreadDiscreteEnv(MpeEnv):
    """Cooperative navigation with discrete actions, numpy arrays in and out, checked at the boundary.

    ``reset()`` -> obs float32 ``(N, O)`` = ``(3, 18)``; ``step(int actions (N,) in 0..4)`` -> ``(obs (N, O), rewards
    float32 (N,), dones bool (N,), info)`` with ``terminated`` (always False), ``truncated`` (True at step 25),
    ``step``, and the MADDPG paper's figures as ``ParticleEnv`` gives them: ``landmark_distance``,
    ``agent_collisions`` ``(N,)`` and ``collisions``. Seeding as ``ParticleEnv``: the first ``reset()`` seeds mpe2's
    generator with ``seed``, later ones continue its stream (it draws the start positions).

    Attributes: env_id, seed, n_agents (N = 3), obs_dim (O = 18), n_actions (A = 5), action_meanings, max_steps (25).
    """

    def __init__(self, env_id: str = SPREAD_DISCRETE_ID, seed: int = 0):
        env_id = resolve_spread_discrete_id(env_id)
        super().__init__(env_id, seed, SCENARIO, PARTICLE_ENVS[SCENARIO], continuous_actions=False)
        self.n_actions, self.action_meanings = len(ACTION_MEANINGS), list(ACTION_MEANINGS)

    def __repr__(self) -> str:
        return (f"SpreadDiscreteEnv({self.env_id!r}, seed={self.seed}: N={self.n_agents} agents, O={self.obs_dim} "
                f"obs dims, A={self.n_actions} actions, max_steps={self.max_steps})")

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict]:
        """Apply int actions ``(N,)`` in ``0..4``. Returns ``(obs (N, O), rewards (N,), dones (N,), info)``."""
        self._check_can_step()
        actions = np.asarray(actions)
        check_int_actions(actions, self.n_agents, self.n_actions, self.action_meanings)
        return self._advance(actions)

    def _advance(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict]:
        """``step`` after its checks (``VecEnv`` checks all K copies' actions at once, then calls this)."""
        return self._step_mpe(actions.tolist())  # (N,) one int per agent, as mpe2 takes them


SPREAD_DISCRETE = EnvFamily(
    name="cooperative navigation (discrete)", backend="mpe2", example=SPREAD_DISCRETE_ID,
    recognises=is_spread_discrete, resolve=resolve_spread_discrete_id, ids=lambda: [SPREAD_DISCRETE_ID],
    env=SpreadDiscreteEnv, actions="discrete",
    deterministic=False,  # the start positions are random
    eval_episodes=EVAL_EPISODES, final_eval_episodes=FINAL_EVAL_EPISODES, eval_seed=0,
    optimum=None,
    render="mpe2's own picture of the agents and landmarks (pygame, no window)",
    gif_scale=0.25, gif_fps=8,  # a quarter of 700 x 700, 8 steps a second (25-step episodes)
)
