"""ma-gym's Switch (``Switch2-v0`` .. ``Switch4-v3``, with the Switch3 ids ``envs.magym`` registers) as a family:
ma-gym's env for one copy, ``BatchedSwitch`` for K copies stepped as arrays, and the exact optimum of
``envs.planning``. Its episodes depend on the actions alone, so one greedy episode is a greedy policy's exact return.
"""

from __future__ import annotations

from marl_edu.envs.batched_switch import BatchedSwitch
from marl_edu.envs.family import EnvFamily
from marl_edu.envs.magym import MultiAgentEnv, is_switch, resolve_env_id, switch_ids
from marl_edu.envs.planning import optimal_team_return


def known_optimum(env_id: str) -> float:
    """The exact optimal team return of a Switch id (``envs.planning``'s dynamic programming, cached there)."""
    return optimal_team_return(resolve_env_id(env_id))


SWITCH = EnvFamily(
    name="Switch", backend="ma-gym", example="Switch2-v0",
    recognises=is_switch, resolve=resolve_env_id, ids=switch_ids, env=MultiAgentEnv, actions="discrete",
    deterministic=True,  # no randomness but the policy's
    eval_episodes=1, final_eval_episodes=1, eval_seed=0,
    optimum=known_optimum,
    render="ma-gym's own grid picture",
    gif_scale=2, gif_fps=4,  # each cell's pixels doubled, 4 steps a second
    batched=BatchedSwitch,
)
