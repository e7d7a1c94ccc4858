"""The MADDPG capstone (notebook 22): check each part a learner writes, assemble them, train them on Switch2-v2.

The learner writes six functions; each is checked against the library's own MADDPG on fixed seeds:

    maddpg_critic_loss(agent, i, batch)        -> 0-d    (Q_i(x) - y_i)^2 averaged, y_i = r_i + gamma^n (1 - d) Q'_i(x')
    maddpg_actor_loss(agent, i, batch)         -> 0-d    -E_b sum_k pi_i(k | o_i) Q_i(x, a_{-i}, k) + c_reg mean(logits^2)
    soft_update(target, source, tau)           in place  theta' <- tau theta + (1 - tau) theta'
    maddpg_update(agent, batch, critic_loss, actor_loss, soft_update)
                                               in place  every critic, then every actor, then the targets
    n_step_window(pending, gamma, next_obs, terminal, flush)
                                               -> list   the (o, a, R, o', d) the newest step of one copy completes
    maddpg_training_loop(env_id, episodes, config, seed, update, eval_every)
                                               -> dict   collect, store n-step transitions, sample, update, evaluate

``REFERENCE`` holds the library's version of each part with the same signature. Each ``check_<part>(fn)`` prints
one verdict (PASSED, FAILED with a hint naming the slip when it recognises one, or NOT DONE YET) and never raises; it
refuses an answer that calls the library's own implementation of its part (the names above each checker: the loop's
include ``n_step_transitions``, so the learner's loop calls the learner's own window of part 5).
Assembling, training and drawing follow the API both capstones share (``marl_edu.course.capstones``): ``assemble`` runs
every check quietly and hands training the learner's part where it passed and the reference elsewhere; ``whose``;
``train_yours`` trains with them (the learner's loop if it passed, else ``loops.train`` of MADDPG itself, with the
learner's update passed in); ``reference_run``, ``random_return`` and ``plot_against_reference`` draw the run against
the committed one.
"""

from __future__ import annotations

import functools
import inspect
import time
from collections import deque
from typing import Callable

import matplotlib.pyplot as plt
import numpy as np
import torch

from marl_edu.base.threads import on_one_thread
from marl_edu.course import capstones
from marl_edu.course.capstones import random_return  # noqa: F401  (part of the capstones' API: notebook 22 draws it)
from marl_edu.course.checks import NOT_DONE_NONE, call
from marl_edu.data.buffers import n_step_transitions
from marl_edu.learners.maddpg import MADDPG, MADDPGConfig, flatten_for_critic, gumbel_softmax
from marl_edu.learners.table import algo_name_of_class
from marl_edu.pieces.nets import gradient_step
from marl_edu.pieces.targets import hard_update, soft_update
from marl_edu.training.loops import TrainResult, train

TOLERANCE = 1e-5  # largest absolute difference accepted between the learner's numbers and the reference's
ENV_ID = "Switch2-v2"  # Switch2 with the observation MADDPG needs (notebook 05, section 1, says why)
hint = capstones.hint  # the staged hints of every part, hint(name, stage): notebook 22 offers them
show_solution = capstones.show_solution  # the last resort after them, importing the answers only when called
PARTS = ("maddpg_critic_loss", "maddpg_actor_loss", "soft_update", "maddpg_update", "n_step_window",
         "maddpg_training_loop")


# ----------------------------------------------------------------------------------------------
# The library's own parts, in the signatures the learner writes
# ----------------------------------------------------------------------------------------------

def _reference_update(agent: MADDPG, batch: dict, critic_loss: Callable, actor_loss: Callable,
                      soft_update: Callable) -> None:
    """``MADDPG.update`` with its two losses and its soft update passed in: the same steps in the same order
    (``_update`` below, without a slip). With marl_edu's parts it gives ``agent.update(batch)``'s parameters to the
    bit (the training loop then calls ``agent.update`` itself: ``capstones.learner_update``)."""
    _update(agent, batch, critic_loss, actor_loss, soft_update)


def _reference_training_loop(env_id: str, episodes: int, config: MADDPGConfig, seed: int, update: Callable | None,
                             eval_every: int) -> dict:
    """``loops.train`` of MADDPG itself with ``update(agent, batch)`` passed in (None: ``MADDPG.update``), its results as
    the loop part's dict (agent, buffer, episode_returns, evaluations). With the same update the course's answer to
    the loop gives the same buffer, returns, evaluations and networks, to the bit (measured over 300 episodes of the
    default config, and 200 of the check's)."""
    result = train(MADDPG, env_id, episodes, config, seed, eval_every, progress=False, update=update)
    return {"agent": result.agent, "buffer": result.buffer, "episode_returns": result.episode_returns,
            "evaluations": result.evaluations}


REFERENCE: dict[str, Callable] = {
    "maddpg_critic_loss": lambda agent, i, batch: agent.critic_loss(i, batch),
    "maddpg_actor_loss": lambda agent, i, batch: agent.actor_loss(i, batch),
    "soft_update": soft_update,
    "maddpg_update": _reference_update,
    "n_step_window": n_step_transitions,
    "maddpg_training_loop": _reference_training_loop,
}
# the update(agent, batch) a training loop calls, from the reference parts: MADDPG.update's parameters to the bit
REFERENCE_UPDATE = functools.partial(_reference_update, critic_loss=REFERENCE["maddpg_critic_loss"],
                                     actor_loss=REFERENCE["maddpg_actor_loss"], soft_update=REFERENCE["soft_update"])


# ----------------------------------------------------------------------------------------------
# Fixed cases
# ----------------------------------------------------------------------------------------------

def _agent(N: int = 2, O: int = 2, A: int = 5, seed: int = 0, tau: float = 0.005) -> MADDPG:
    """A small MADDPG learner whose actors and critics have moved away from their targets (a fresh learner's targets
    are exact copies, which would hide a target network used in the wrong place). Two built with the same arguments
    are identical: weights, targets and generator."""
    agent = MADDPG(N, O, A, MADDPGConfig(hidden=16, tau=tau), seed=seed)
    noise = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in [*agent.actors.parameters(), *agent.critics.parameters()]:
            p.add_(0.2 * torch.randn(p.shape, generator=noise))
    return agent


def _batch(B: int, N: int, O: int, A: int, seed: int, as_tensors: bool = True, own_rewards: bool = False) -> dict:
    """A replay batch like ``ReplayBuffer.sample``'s: one-hot actions, a team reward in every column, some dones.
    ``own_rewards``: each agent's column holds its own n-step return instead (the rest of the batch unchanged), so a
    loss that reads another column than agent i's, or the columns' mean, is told apart from r_i."""
    rng = np.random.default_rng(seed)
    obs = rng.uniform(0, 1, (B, N, O)).astype(np.float32)  # (B, N, O)
    actions = np.eye(A, dtype=np.float32)[rng.integers(0, A, (B, N))]  # (B, N, A)
    team = rng.choice([-0.3, -0.2, 4.8, 9.8], size=B).astype(np.float32)  # (B,) n-step team returns
    done = (rng.uniform(size=B) < 0.3).astype(np.float32)  # (B,) the team's episode truly ended
    batch = {"obs": obs, "actions": actions, "rewards": np.repeat(team[:, None], N, 1),
             "next_obs": rng.uniform(0, 1, (B, N, O)).astype(np.float32), "dones": np.repeat(done[:, None], N, 1)}
    if own_rewards:  # drawn from a generator of their own, so obs, actions, next_obs and dones stay the team case's
        own = np.random.default_rng([seed, 1]).choice([-0.3, -0.2, 4.8, 4.9], size=(B, N))  # (B, N)
        batch["rewards"] = own.astype(np.float32)
    if as_tensors:
        return {key: torch.as_tensor(value) for key, value in batch.items()}
    return batch


def _parameters(agent: MADDPG) -> dict[str, torch.Tensor]:
    """Every network's parameters, named: actors, critics and both kinds of targets."""
    return {f"{key}.{name}": value.detach().clone() for key in ("actors", "critics", "target_actors", "target_critics")
            for name, value in getattr(agent, key).state_dict().items()}


def _largest_difference(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> tuple[float, str]:
    """The largest absolute difference between two sets of named tensors, and where it is."""
    worst = max(a, key=lambda k: (a[k] - b[k]).abs().max().item())
    return (a[worst] - b[worst]).abs().max().item(), worst


def _verdict_of_call(fn: Callable, case: str, *args):
    """(output, None), or (None, the verdict to print) when the learner's function raised."""
    out, error = call(fn, *args)
    if error:
        return None, error if error.startswith("NOT DONE") else f"FAILED on {case}: {error}"
    return out, None


def _loss_output(fn: Callable, case: str, *args) -> tuple[torch.Tensor | None, str | None]:
    """The learner's loss if it is a 0-d float tensor, else the verdict saying what came instead."""
    out, verdict = _verdict_of_call(fn, case, *args)
    if verdict:
        return None, verdict
    if out is None:
        return None, NOT_DONE_NONE
    if not isinstance(out, torch.Tensor):
        return None, f"FAILED on {case}: expected a 0-d torch.Tensor (the loss), got {type(out).__name__}"
    if out.dim() != 0:
        return None, (f"FAILED on {case}: expected one number (a 0-d tensor), got shape {tuple(out.shape)}.\n"
                      f"Hint: average over the batch with .mean(): the loss is one number.")
    if not torch.isfinite(out):
        return None, f"FAILED on {case}: your loss is {out.item()}"
    return out, None


def _first_match(out: float, variants: list[tuple[float, str]], fallback: str) -> str:
    for value, hint in variants:
        if abs(out - value) <= TOLERANCE:
            return hint
    return fallback


# ----------------------------------------------------------------------------------------------
# Part 1: the critic's loss
# ----------------------------------------------------------------------------------------------

def _critic_loss_variant(agent: MADDPG, i: int, batch: dict, next_actors: str = "target", next_critic: str = "target",
                         next_actions: str = "gumbel", discount: str = "gamma^n", not_done: bool = True,
                         column: bool = False, q_next_column: bool = False, next_obs: str = "next_obs",
                         reward: str = "column i") -> float:
    """The critic loss with one thing done differently (a known slip), as a number."""
    c = agent.config
    actors = agent.target_actors if next_actors == "target" else agent.actors
    critic_next = agent.target_critics[i] if next_critic == "target" else agent.critics[i]
    x_next = batch[next_obs]  # (B, N, O): x_{t+n}, or x_t where a slip bootstraps from the same observation
    with torch.no_grad():
        logits = torch.stack([actors[j](x_next[:, j]) for j in range(agent.n_agents)], dim=1)  # (B, N, A)
        if next_actions == "gumbel":
            a_next = gumbel_softmax(logits, c.temperature, hard=True, generator=agent.generator)  # (B, N, A)
        elif next_actions == "gumbel per agent":
            a_next = torch.stack([gumbel_softmax(logits[:, j], c.temperature, hard=True, generator=agent.generator)
                                  for j in range(agent.n_agents)], dim=1)  # (B, N, A)
        elif next_actions == "soft":  # the relaxed sample, not made one-hot
            a_next = gumbel_softmax(logits, c.temperature, hard=False, generator=agent.generator)  # (B, N, A)
        elif next_actions == "argmax":
            a_next = torch.nn.functional.one_hot(logits.argmax(-1), agent.n_actions).float()  # (B, N, A)
        else:  # the batch's own actions, taken at the previous step
            a_next = batch["actions"]
        q_next = critic_next(flatten_for_critic(x_next, a_next))  # (B,)
        if q_next_column:  # Q'_i(x') kept as the critic's (B, 1): r + gamma^n (1 - d) q' broadcasts to (B, B)
            q_next = q_next.unsqueeze(1)
        gamma = c.gamma ** c.n_step if discount == "gamma^n" else c.gamma
        d = batch["dones"][:, i] if not_done else torch.zeros_like(batch["dones"][:, i])
        r = {"column i": batch["rewards"][:, i], "column 0": batch["rewards"][:, 0],
             "column -1": batch["rewards"][:, -1], "mean": batch["rewards"].mean(1)}[reward]  # (B,)
        y = r + gamma * (1 - d) * q_next  # (B,)
        if column:  # y as (B, 1), e.g. from rewards[:, i:i+1]: q - y broadcasts to (B, B)
            y = y.unsqueeze(1)
        q = agent.critics[i](flatten_for_critic(batch["obs"], batch["actions"]))  # (B,)
        return ((q - y) ** 2).mean().item()


CRITIC_SLIPS = [
    ({"not_done": False}, "the target bootstraps after a terminal transition: multiply gamma^n Q'_i(x') by (1 - d_i)."),
    ({"discount": "gamma"}, "the rewards are 3-step returns, so the bootstrap is discounted by gamma^n "
                            "(agent.config.gamma ** agent.config.n_step), not gamma."),
    ({"next_actors": "online"}, "the next actions come from the TARGET actors mu'_j (agent.target_actors), not the "
                                "actors being trained."),
    ({"next_critic": "online"}, "Q'_i(x') is the TARGET critic's value (agent.target_critics[i]), not the critic's."),
    ({"next_actions": "batch"}, "x' needs the actions the target actors choose at o', not the batch's actions (those "
                                "were taken at o)."),
    ({"next_actions": "argmax"}, "the target actors' actions are a hard Gumbel-softmax SAMPLE of their policies "
                                 "(gumbel_softmax(logits, temperature, hard=True, generator=agent.generator)), not their "
                                 "argmax."),
    ({"next_actions": "soft"}, "the target actors' next actions are HARD one-hot samples (hard=True), as the "
                               "actions stored in the batch are: the soft relaxation is for the actor's gradient, and "
                               "the target needs no gradient."),
    ({"column": True}, "your target y_i has shape (B, 1) (rewards[:, i:i+1], dones[:, i:i+1], or a keepdim) "
                       "while Q_i(x) is (B,): q - y broadcasts to (B, B), every prediction against every label, "
                       "and its mean is one wrong number. Take column i as (B,), batch['rewards'][:, i], and check "
                       "that q and y have the same shape before subtracting."),
    ({"q_next_column": True}, "your Q'_i(x') has shape (B, 1) (the critic's output before a squeeze, or a keepdim) "
                              "while r_i is (B,): r + gamma^n (1 - d) q' broadcasts to (B, B), and so does the loss. "
                              "y_i must be (B,), like Q_i(x): check both shapes before subtracting."),
    ({"next_obs": "obs"}, "the target bootstraps from x_t, the observation the action was taken in: the target actors "
                          "and Q'_i read the NEXT observation, batch['next_obs'] (x_{t+n})."),
    *[({"reward": other}, "y_i reads agent i's OWN reward, column i of batch['rewards'] (batch['rewards'][:, i]): on "
                           "Switch2 every column holds the team's return, but in this case each agent's column holds "
                           "its own, as it would with own rewards.") for other in ("column 0", "column -1", "mean")],
    ({"next_actions": "gumbel per agent"}, "draw every agent's next action in ONE gumbel_softmax call on the stacked "
                                           "(B, N, A) logits, as the reference does, so both use the generator's "
                                           "numbers in the same order."),
]


# the library's own critic loss and what builds its target (the check compares with them, so yours never calls them)
@capstones.refuses_library_answers("maddpg_critic_loss", "marl_edu.learners.maddpg:MADDPG.critic_loss",
                                   "marl_edu.learners.maddpg:MADDPG.target_actions", "marl_edu.learners.maddpg:td_loss",
                                   "marl_edu.pieces.targets:td_target")
@on_one_thread
def check_maddpg_critic_loss(fn: Callable) -> None:
    """Check ``fn(agent, i, batch) -> 0-d loss`` against ``MADDPG.critic_loss`` (within TOLERANCE) on a 2-agent and a
    3-agent learner, every agent i, batches with terminal transitions (the last with each agent's own rewards, the
    others with the team's in every column); the learner's generator is rewound between the two so both draw the same
    Gumbel noise. Also checks the loss has a gradient into critic i and none elsewhere."""
    for N, O, A, B, own_rewards in ((2, 2, 5, 8, False), (3, 2, 5, 1, False), (3, 4, 3, 16, True)):
        agent = _agent(N, O, A, seed=N + B)
        batch = _batch(B, N, O, A, seed=B, own_rewards=own_rewards)
        for i in range(N):
            case = f"N={N}, B={B}{', own rewards' if own_rewards else ''}, agent i={i}"
            state = agent.generator.get_state()
            expected = agent.critic_loss(i, batch).item()
            after_reference = agent.generator.get_state()
            agent.generator.set_state(state)
            out, verdict = _loss_output(fn, case, agent, i, {k: v.clone() for k, v in batch.items()})
            if verdict:
                print(verdict)
                return
            after_yours = agent.generator.get_state()
            if abs(out.item() - expected) > TOLERANCE:
                variants = []
                for flags, hint in CRITIC_SLIPS:
                    agent.generator.set_state(state)
                    variants.append((_critic_loss_variant(agent, i, batch, **flags), hint))
                fallback = ("build x = flatten_for_critic(obs, actions) and x' = flatten_for_critic(next_obs, "
                            "next_actions), then y_i = r_i + gamma^n (1 - d_i) Q'_i(x') with the rewards and dones of "
                            "column i.")
                if torch.equal(after_yours, state):  # no number drawn from the learner's generator
                    fallback = ("your loss drew no Gumbel noise from agent.generator. torch.nn.functional."
                                "gumbel_softmax draws from torch's global random numbers, so its samples are not the "
                                "reference's (nor the same from run to run of a seeded learner): use marl_edu's "
                                "gumbel_softmax(logits, agent.config.temperature, hard=True, "
                                "generator=agent.generator), imported at the top, once on the (B, N, A) next logits.")
                hint = _first_match(out.item(), variants, fallback)
                print(f"FAILED on {case}: loss {out.item():.6f}, expected {expected:.6f} (within {TOLERANCE:g}).\n"
                      f"Hint: {hint}")
                return
            if not torch.equal(agent.generator.get_state(), after_reference):
                print(f"FAILED on {case}: the loss is right but you drew a different amount of Gumbel noise than the "
                      f"reference.\nHint: call gumbel_softmax once, on the (B, N, A) next logits, with "
                      f"generator=agent.generator; nowhere else.")
                return
            if not out.requires_grad:
                print(f"FAILED on {case}: your loss has no gradient.\nHint: only the target y_i is computed without "
                      f"gradient (torch.no_grad()); Q_i(x) must keep its graph so the critic can learn.")
                return
            for net in agent.critics:
                net.zero_grad(set_to_none=True)
            out.backward()
            moved = [j for j, net in enumerate(agent.critics) if any(p.grad is not None and p.grad.abs().sum() > 0
                                                                    for p in net.parameters())]
            if moved != [i]:
                print(f"FAILED on {case}: the loss sends gradients into critics {moved}, expected only critic {i}.\n"
                      f"Hint: agent i's loss uses agent.critics[i] for Q_i(x) and agent.target_critics[i] for "
                      f"Q'_i(x').")
                return
    print(f"PASSED: your critic loss equals MADDPG.critic_loss (within {TOLERANCE:g}) for every agent of 2- and "
          f"3-agent learners, with terminal transitions, B = 1 and own rewards.")


# ----------------------------------------------------------------------------------------------
# Part 2: the actor's loss
# ----------------------------------------------------------------------------------------------

def _actor_loss_variant(agent: MADDPG, i: int, batch: dict, reduce: str = "sum", sign: float = 1.0,
                        reg: str | None = "mean", taken_only: bool = False, over_batch: str = "mean",
                        softmax_dim: int = -1, critic: str = "online", own_block: str = "replaced") -> float:
    """Agent i's expected actor loss, or what a slip gives: the flags say which."""
    c = agent.config
    with torch.no_grad():
        logits = agent.actors[i](batch["obs"][:, i])  # (B, A)
        pi = torch.softmax(logits, dim=softmax_dim)  # (B, A); dim=0: over the batch, a slip
        if critic == "online" and own_block == "replaced":
            q_all = agent.q_of_every_own_action(i, batch)  # (B, A)
        else:  # the same candidates, with agent i's block added to or kept instead of replaced, or the target critic
            obs, actions = batch["obs"], batch["actions"]  # (B, N, O), (B, N, A)
            (B, N, O), A = obs.shape, agent.n_actions
            candidates = actions.unsqueeze(1).repeat(1, A, 1, 1)  # (B, A, N, A)
            own = torch.eye(A)  # (A, A): copy k gets one_hot(k)
            block = candidates[:, :, i]  # (B, A, A) the batch's own action in every copy
            candidates[:, :, i] = {"added": block + own, "kept": torch.maximum(block, own)}.get(own_block, own)
            x = agent.critic_input(i, obs.unsqueeze(1).expand(B, A, N, O).reshape(B * A, N, O),
                                   candidates.reshape(B * A, N, A))  # (B*A, D)
            net = agent.target_critics[i] if critic == "target" else agent.critics[i]
            q_all = net(x).reshape(B, A)  # (B, A)
        if taken_only:  # Q at the action in the batch, weighted by the policy's probability of it
            q_all = q_all * batch["actions"][:, i]
        expected = (pi * q_all).sum(1) if reduce == "sum" else (pi * q_all).mean(1)  # (B,)
        over_b = expected.mean() if over_batch == "mean" else expected.sum()  # the sum: B times the mean
        penalty = {"mean": (logits ** 2).mean(), "sum": (logits ** 2).sum(), None: 0.0}[reg]
        return (-sign * over_b + c.logits_reg * penalty).item()


ACTOR_SLIPS = [
    ({"reg": None}, "add the logits penalty c_reg * mean(logits_i^2) (agent.config.logits_reg), as the reference "
                    "does."),
    ({"reg": "sum"}, "the logits penalty is summed over the batch and the actions: it is the MEAN of logits_i^2 over "
                     "all B * A entries, times c_reg."),
    ({"softmax_dim": 0}, "pi_i is a softmax over the BATCH axis: each row's probabilities are a softmax over its A "
                         "actions, softmax(logits, dim=-1)."),
    ({"critic": "target"}, "the loss reads the TARGET critic: the actor climbs the critic being trained, "
                           "agent.critics[i] (the targets only build the critic's label)."),
    ({"own_block": "added"}, "agent i's action block must be REPLACED by one_hot(k) in copy k, not added to: the "
                             "batch's own action would stay in the critic's input beside k."),
    ({"own_block": "kept"}, "agent i's action block must be REPLACED by one_hot(k) in copy k: clear it first "
                            "(joint[:, i] = 0), or the batch's own action stays in the critic's input beside k."),
    ({"sign": -1.0}, "the optimiser MINIMISES the loss and the actor wants a HIGH Q: the loss is minus the expected "
                     "value."),
    ({"reduce": "mean"}, "the expectation over agent i's actions is a SUM over k of pi_i(k) Q_i(..., k), not a mean "
                         "(that divides by A)."),
    ({"over_batch": "sum"}, "the expected value is SUMMED over the batch, B times too large: the loss is its MEAN "
                            "over the B samples, -(1/B) sum_b sum_k pi_i(k | o_i) Q_i(...) (.mean() over the batch "
                            "after the sum over k)."),
    ({"taken_only": True}, "agent i's critic must be evaluated at EVERY own action k (the others' actions from the "
                           "batch), not only at the action in the batch."),
]


# the library's own actor loss and its values of every own action
@capstones.refuses_library_answers("maddpg_actor_loss", "marl_edu.learners.maddpg:MADDPG.actor_loss",
                                   "marl_edu.learners.maddpg:MADDPG.q_of_every_own_action")
@on_one_thread
def check_maddpg_actor_loss(fn: Callable) -> None:
    """Check ``fn(agent, i, batch) -> 0-d loss`` against ``MADDPG.actor_loss`` (the exact expectation over agent i's
    actions, ``actor_gradient="expected"``) within TOLERANCE, value and gradient on actor i's parameters."""
    for N, O, A, B in ((2, 2, 5, 8), (3, 2, 5, 1), (2, 3, 3, 16)):
        agent = _agent(N, O, A, seed=10 + N + B)
        batch = _batch(B, N, O, A, seed=20 + B)
        for i in range(N):
            case = f"N={N}, B={B}, agent i={i}"
            agent.actors.zero_grad(set_to_none=True)
            reference = agent.actor_loss(i, batch)
            reference.backward()
            expected_grads = [p.grad.clone() for p in agent.actors[i].parameters()]
            agent.actors.zero_grad(set_to_none=True)
            agent.critics.zero_grad(set_to_none=True)
            out, verdict = _loss_output(fn, case, agent, i, {k: v.clone() for k, v in batch.items()})
            if verdict:
                print(verdict)
                return
            if abs(out.item() - reference.item()) > TOLERANCE:
                variants = [(_actor_loss_variant(agent, i, batch, **flags), hint) for flags, hint in ACTOR_SLIPS]
                hint = _first_match(out.item(), variants, "if you sampled agent i's action (a Gumbel-softmax draw, "
                                    "as DDPG would use mu_i(o_i)), this part asks for the EXACT expectation instead: "
                                    "-(1/B) sum_b sum_k pi_i(k | o_i) Q_i(x, (a_-i, k)), Q_i at every own action k. "
                                    "Otherwise check each factor in turn: whose actor and whose observation give pi_i, "
                                    "which action block is replaced by each own action k, what carries no gradient, "
                                    "what is averaged over B, and the penalty on the logits.")
                print(f"FAILED on {case}: loss {out.item():.6f}, expected {reference.item():.6f} (within "
                      f"{TOLERANCE:g}).\nHint: {hint}")
                return
            if not out.requires_grad:
                print(f"FAILED on {case}: your loss has no gradient.\nHint: the actor's logits must be computed "
                      f"outside torch.no_grad(); only the critic's values are constants.")
                return
            out.backward()
            grads = [p.grad for p in agent.actors[i].parameters()]
            if any(g is None for g in grads) or max((g - e).abs().max().item()
                                                    for g, e in zip(grads, expected_grads)) > TOLERANCE:
                print(f"FAILED on {case}: the value is right but the gradient on actor {i}'s parameters is not.\n"
                      f"Hint: the gradient flows through pi_i = softmax(logits_i) and the penalty only.")
                return
            if any(p.grad is not None and p.grad.abs().sum() > 0 for p in agent.critics.parameters()):
                print(f"FAILED on {case}: the value and actor {i}'s gradient are right, but the loss also sends a "
                      f"gradient into the critics.\nHint: Q_i's values are constants for the actor's loss (the "
                      f"critic learns from its own loss only): compute them under torch.no_grad(), or detach them.")
                return
            if any(p.grad is not None and p.grad.abs().sum() > 0 for j, net in enumerate(agent.actors) if j != i
                   for p in net.parameters()):
                print(f"FAILED on {case}: the loss moves other agents' actors.\nHint: only actor {i} is in agent "
                      f"{i}'s loss; the others' actions come from the batch.")
                return
    print(f"PASSED: your actor loss and its gradient equal MADDPG.actor_loss's (within {TOLERANCE:g}) for every "
          f"agent of 2- and 3-agent learners, with B = 1.")


# ----------------------------------------------------------------------------------------------
# Part 3: the soft update
# ----------------------------------------------------------------------------------------------

def _names_nothing(fn: Callable) -> bool:
    """Whether ``fn``'s body names no function, attribute or global at all (``pass``, a docstring, ``return None``):
    an empty stub. A real attempt at the soft update names at least ``parameters``."""
    code = getattr(inspect.unwrap(fn), "__code__", None)
    return code is not None and not code.co_names


# the library's own soft update
@capstones.refuses_library_answers("soft_update", "marl_edu.pieces.targets:soft_update")
def check_soft_update(fn: Callable) -> None:
    """Check ``fn(target, source, tau)``: target's parameters become ``tau * source + (1 - tau) * target`` in place,
    for tau = 0.01, 0.3 (not 0.5, where tau and 1 - tau swapped cannot show), 1 and 0, and nothing happens to
    ``source``."""
    for tau in (0.01, 0.3, 1.0, 0.0):
        case = f"tau={tau}"
        torch.manual_seed(int(tau * 100) + 1)
        source = torch.nn.ModuleList([torch.nn.Linear(3, 4), torch.nn.Linear(4, 2)])
        target = torch.nn.ModuleList([torch.nn.Linear(3, 4), torch.nn.Linear(4, 2)])
        for p in target.parameters():
            p.requires_grad_(False)
        before = [p.clone() for p in target.parameters()]
        sources = [p.detach().clone() for p in source.parameters()]
        out, verdict = _verdict_of_call(fn, case, target, source, tau)
        if verdict:
            if "in-place operation" in verdict:
                verdict += "\nHint: write into the target's parameters inside `with torch.no_grad():`."
            print(verdict)
            return
        after = [p.detach() for p in target.parameters()]
        if any(not torch.equal(s, p.detach()) for s, p in zip(sources, source.parameters())):
            print(f"FAILED on {case}: the SOURCE network changed.\nHint: only the target moves: theta' <- tau theta + "
                  f"(1 - tau) theta'.")
            return
        if all(torch.equal(a, b) for a, b in zip(after, before)) and tau != 0.0:
            if out is None and _names_nothing(fn):  # a body of `pass`: an empty stub, not an attempt
                print(NOT_DONE_NONE.replace("returned None", "returned None and changed no parameter of the target"))
                return
            returned = "returned None" if out is None else f"returned {type(out).__name__}"
            print(f"FAILED on {case}: no parameter of the target changed in place; your function {returned}.\n"
                  f"Hint: write into the target's own tensors: p_target.copy_(...), or p_target.mul_(1 - tau)"
                  f".add_(tau * p_source), or p_target.data = ... . A line like `tp = tau * sp + (1 - tau) * tp` "
                  f"builds a new tensor and rebinds the loop's name to it, and returning new tensors or a new "
                  f"network leaves agent.target_* as they were.")
            return
        expected = [tau * s + (1 - tau) * b for s, b in zip(sources, before)]
        worst = max((a - e).abs().max().item() for a, e in zip(after, expected))
        if worst > TOLERANCE:
            swapped = [(1 - tau) * s + tau * b for s, b in zip(sources, before)]
            if max((a - e).abs().max().item() for a, e in zip(after, swapped)) <= TOLERANCE:
                hint = "tau and 1 - tau are swapped: the target takes a SMALL step (tau) towards the source."
            elif max((a - s).abs().max().item() for a, s in zip(after, sources)) <= TOLERANCE:
                hint = "that is a hard copy; the soft update blends: tau * source + (1 - tau) * target."
            else:
                hint = "theta' <- tau * theta + (1 - tau) * theta', parameter by parameter, in the same order."
            print(f"FAILED on {case}: the target is off by up to {worst:.3g}.\nHint: {hint}")
            return
    print(f"PASSED: your soft update moves the target to tau * source + (1 - tau) * target in place (within "
          f"{TOLERANCE:g}) for tau = 0.01, 0.3, 1 and 0, and leaves the source alone.")


# ----------------------------------------------------------------------------------------------
# Part 4: one update
# ----------------------------------------------------------------------------------------------

def _update(agent: MADDPG, batch: dict, critic_loss: Callable, actor_loss: Callable, soft_update: Callable,
            slip: str | None = None) -> None:
    """MADDPG's update with its parts passed in (as ``MADDPG.update``: every critic's step, then every actor's, then
    both soft updates, and the updates counter), or with a named slip. batch: ``ReplayBuffer.sample``'s (B, N, .)."""
    c = agent.config
    b = agent.checked_tensors(batch)  # float32 tensors (B, N, .)
    n = agent.updates + 1  # this update's number, for an error's message

    def step(optimizer, net, loss, name):
        if slip == "no zero_grad":  # the gradients pile up from update to update
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), c.grad_clip)
            optimizer.step()
        elif slip == "clip by value":  # each entry clipped to [-grad_clip, grad_clip] instead of the norm
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_value_(net.parameters(), c.grad_clip)
            optimizer.step()
        else:
            gradient_step(optimizer, net, loss, 1e9 if slip == "no clipping" else c.grad_clip, name, n)

    def targets():
        if slip == "hard copy":
            hard_update(agent.target_actors, agent.actors)
            hard_update(agent.target_critics, agent.critics)
        elif slip != "no soft update":
            tau = 1 - c.tau if slip == "tau swapped" else c.tau  # (swapped: the targets all but copied)
            soft_update(agent.target_actors, agent.actors, tau)
            soft_update(agent.target_critics, agent.critics, tau)

    def critic_steps():
        for i in range(agent.n_agents):
            step(agent.critic_optimizers[i], agent.critics[i], critic_loss(agent, i, b), f"agent {i}'s critic loss")
            if slip == "agent by agent":  # agent i's critic, actor and targets, then agent i + 1's
                step(agent.actor_optimizers[i], agent.actors[i], actor_loss(agent, i, b), f"agent {i}'s actor loss")
                soft_update(agent.target_actors[i], agent.actors[i], c.tau)
                soft_update(agent.target_critics[i], agent.critics[i], c.tau)

    def actor_steps():
        for i in range(agent.n_agents):
            step(agent.actor_optimizers[i], agent.actors[i], actor_loss(agent, i, b), f"agent {i}'s actor loss")
            if slip == "soft per agent":
                targets()

    if slip == "actors first":
        actor_steps()
        critic_steps()
    elif slip == "agent by agent":
        critic_steps()
    else:
        critic_steps()
        actor_steps()
    if slip not in ("soft per agent", "agent by agent"):
        targets()
    agent.updates += 1


UPDATE_SLIPS = [
    ("actors first", "step the critics BEFORE the actors: actor i climbs critic i's values, so it should use the "
                     "critic this batch has just corrected."),
    ("soft per agent", "soft-update the targets once per update, after every agent's steps, not once per agent "
                       "(that moves them N times as far)."),
    ("agent by agent", "every critic's step first, then every actor's, then the targets: agent j's critic target "
                       "uses every agent's TARGET actor, so agent i's target must not have moved yet in this update "
                       "(the difference shows at a large tau)."),
    ("no soft update", "end the update with the soft updates of the target actors and target critics (tau = "
                       "agent.config.tau)."),
    ("hard copy", "MADDPG moves its targets softly every update (tau), not by copying."),
    ("tau swapped", "the targets moved by 1 - tau, nearly a copy: pass agent.config.tau itself to soft_update, which "
                    "moves each target tau of the way to its network."),
    ("clip by value", "clip each network's gradient NORM (torch.nn.utils.clip_grad_norm_), not each gradient "
                      "entry's value (clip_grad_value_)."),
    ("no clipping", "clip each network's gradient norm to agent.config.grad_clip before its optimiser steps "
                    "(torch.nn.utils.clip_grad_norm_)."),
    ("no zero_grad", "zero each optimiser's gradients before backward(): otherwise they pile up from update to "
                     "update."),
]


def _given_parts_uncalled(agent: MADDPG, calls: dict[str, list]) -> str | None:
    """What an update did not do with the parts it was given (``calls``: part name -> the arguments of each call of
    its spy during the check's updates), as a verdict's text with its hint; None when it called critic_loss and
    actor_loss for every agent and passed every target network's parameters through soft_update."""
    why = ("\nHint: call the argument, not marl_edu's own: the check hands your update the library's {part} to test "
           "the update alone, and assemble hands it yours (part {number}); an update that calls marl_edu's directly "
           "would train with marl_edu's {part} whatever yours does.")
    for name, argument, number in (("maddpg_critic_loss", "critic_loss", 1), ("maddpg_actor_loss", "actor_loss", 2)):
        agents = sorted({args[1] for args in calls[name] if len(args) > 1 and isinstance(args[1], int)})
        if agents != list(range(agent.n_agents)):
            called = "never called" if not calls[name] else f"called for agents {agents} only"
            return (f"the {argument} your update was given was {called}, expected once for every agent i = 0 .. "
                    f"{agent.n_agents - 1} ({argument}(agent, i, tensors))." + why.format(part=argument, number=number))
    targets = {id(p) for net in (agent.target_actors, agent.target_critics) for p in net.parameters()}
    passed = {id(p) for args in calls["soft_update"] if args and isinstance(args[0], torch.nn.Module)
              for p in args[0].parameters()}
    if not targets <= passed:
        called = "never called" if not calls["soft_update"] else "not called on every target network"
        return (f"the soft_update your update was given was {called}: every target actor and target critic moves "
                f"through it (soft_update(agent.target_actors, agent.actors, tau), and the same for the critics)."
                + why.format(part="soft_update", number=3))
    return None


# the library's own update, its gradient steps, and the capstone's reference update (the three parts it is given stay
# callable: the check passes the library's; so does the taught helper nets.gradient_step)
@capstones.refuses_library_answers("maddpg_update", "marl_edu.learners.maddpg:MADDPG.update",
                                   "marl_edu.learners.maddpg:MADDPG.gradient_steps", "marl_edu.course.capstone_maddpg:_update",
                                   "marl_edu.course.capstone_maddpg:_reference_update")
@on_one_thread
def check_maddpg_update(fn: Callable) -> None:
    """Check ``fn(agent, batch, critic_loss, actor_loss, soft_update)`` (in place, with the reference's losses and soft
    update passed in) against ``MADDPG.update``: every parameter of every network and target after 3 updates on
    fixed batches (numpy, as ``ReplayBuffer.sample`` gives them), within TOLERANCE; and, through spies of the three
    parts, that every update calls the losses it is given for every agent and moves every target network through the
    soft update it is given (an update that calls marl_edu's own instead would match, yet train with marl_edu's
    parts whatever the learner's are). The second case's tau = 0.5 makes
    the moment of the soft updates visible: at the default 0.005 a target moved a little early changes the next
    agent's step by less than the tolerance."""
    parts = {k: REFERENCE[k] for k in ("maddpg_critic_loss", "maddpg_actor_loss", "soft_update")}
    for N, O, A, B, tau in ((2, 2, 5, 32, 0.005), (3, 2, 4, 8, 0.5)):
        case = f"N={N}, B={B}, tau={tau}, 3 updates"
        reference, yours = _agent(N, O, A, seed=N, tau=tau), _agent(N, O, A, seed=N, tau=tau)
        start = _parameters(yours)
        batches = [_batch(B, N, O, A, seed=100 * N + k, as_tensors=False) for k in range(3)]
        calls = {name: [] for name in parts}  # the arguments of every call of each given part
        for k, batch in enumerate(batches):
            reference.update(batch)
            out, verdict = _verdict_of_call(fn, case, yours, {key: v.copy() for key, v in batch.items()},
                                            *(capstones.spy(part, calls[name]) for name, part in parts.items()))
            if verdict:
                print(verdict)
                return
            if k == 0 and out is None and _largest_difference(_parameters(yours), start)[0] == 0.0:
                print(NOT_DONE_NONE.replace("returned None", "returned None and changed no parameter"))
                return
        worst, where = _largest_difference(_parameters(yours), _parameters(reference))
        if worst > TOLERANCE:
            hint = "critic steps for every agent, then actor steps for every agent, each: zero_grad, backward, clip, " \
                   "step; then soft_update(agent.target_actors, agent.actors, tau) and the same for the critics."
            for slip, text in UPDATE_SLIPS:
                variant = _agent(N, O, A, seed=N, tau=tau)
                for batch in batches:
                    _update(variant, batch, *parts.values(), slip=slip)
                if _largest_difference(_parameters(yours), _parameters(variant))[0] <= TOLERANCE:
                    hint = text
                    break
            print(f"FAILED on {case}: {where} is off by up to {worst:.3g} (tolerance {TOLERANCE:g}).\nHint: {hint}")
            return
        uncalled = _given_parts_uncalled(yours, calls)  # right numbers, from marl_edu's own parts instead?
        if uncalled:
            print(f"FAILED on {case}: {uncalled}")
            return
    print(f"PASSED: after 3 updates every actor, critic and target equals MADDPG.update's (within {TOLERANCE:g}), "
          f"for 2 agents at tau = 0.005 and 3 agents at tau = 0.5.")


# ----------------------------------------------------------------------------------------------
# Part 5: the n-step window
# ----------------------------------------------------------------------------------------------

# (case, n, gamma, the rewards of one short episode's steps, whether it ends in a real terminal state)
N_STEP_CASES = (
    ("n=3, an episode of 5 steps cut by the time limit", 3, 0.9, (1.0, -0.5, 2.0, 0.25, 4.0), False),
    ("n=3, an episode of 4 steps that ends in a terminal state", 3, 0.9, (1.0, -0.5, 2.0, 5.0), True),
    ("n=3, a terminal end after 2 steps (shorter than n)", 3, 0.8, (0.5, 3.0), True),
    ("n=3, a time-limit end after 2 steps (shorter than n)", 3, 0.8, (0.5, 3.0), False),
    ("n=1, a terminal end after 3 steps", 1, 0.9, (1.0, 2.0, 3.0), True),
)


def _n_step_slip(mine: list, expected: list, gamma: float, window: list, flush: bool, terminal: bool) -> str:
    """The hint for a call whose transitions differ from the reference's: the slip it looks like, if one."""
    if len(mine) != len(expected):
        if flush and not terminal and len(mine) > len(expected):
            return ("a time-limit end keeps no shorter tail: its returns would need gamma^k with k < n, but every stored "
                    "transition is bootstrapped with gamma^n. Emit only a full window, then empty it.")
        if flush and terminal and len(mine) < len(expected):
            return ("at a terminal end every step left in the window becomes a transition, each with the (shorter) "
                    "return of what is left: nothing follows a terminal state to bootstrap from.")
        if not flush and len(mine) > len(expected):
            return "mid-episode, emit one transition, the oldest step's, and only when the window holds n steps."
        return "when the window holds n steps, its OLDEST step becomes a transition (and leaves the window)."
    for got, want in zip(mine, expected):
        if not (np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])):
            return "a transition starts at the window's OLDEST step: its obs and actions, pending[0]."
        if not np.array_equal(got[3], want[3]):
            return ("every transition the newest step completes bootstraps from next_obs, the observation after the "
                    "NEWEST step (t + n for a full window).")
        if bool(got[4]) != bool(want[4]):
            return "d is the `terminal` you were given, the same for every transition of this call."
    rewards = [step[2] for step in window]
    tried = [(lambda k: gamma ** (k + 1), "discount the first reward by gamma^0 = 1: R = r_t + g r_{t+1} + ..."),
             (lambda k: 1.0, "discount: R = r_t + g r_{t+1} + g^2 r_{t+2} + ..., not the plain sum."),
             (lambda k: gamma ** (len(rewards) - 1 - k), "the OLDEST reward is not discounted: g^k for the k-th from "
                                                         "the oldest.")]
    for weight, hint in tried:
        if abs(sum(weight(k) * r for k, r in enumerate(rewards)) - float(mine[0][2])) < 1e-5:
            return hint
    return "R = sum over the window's steps, oldest first, of g^k r_k (k from 0)."


# the library's own n-step window
@capstones.refuses_library_answers("n_step_window", "marl_edu.data.buffers:n_step_transitions")
def check_n_step_window(fn: Callable) -> None:
    """Check ``fn(pending, gamma, next_obs, terminal, flush)`` against ``buffers.n_step_transitions``: one short
    episode of each of ``N_STEP_CASES`` fed a step at a time (the step appended to the window, then ``fn`` called),
    the transitions returned and the window left behind compared after every call."""
    for case, n, gamma, rewards, terminal_end in N_STEP_CASES:
        mine, reference = deque(maxlen=n), deque(maxlen=n)
        T = len(rewards)
        for t, reward in enumerate(rewards):
            obs = np.full((2, 3), float(t), dtype=np.float32)  # (N, O) o_t, told apart by t
            step = (obs, np.array([t % 5, (t + 2) % 5]), reward)  # (o_t (N, O), a_t int (N,), r_t)
            mine.append(step)
            reference.append(step)
            window = list(reference)
            next_obs = np.full((2, 3), float(t + 1), dtype=np.float32)  # (N, O) o_{t+1}
            flush, terminal = t == T - 1, terminal_end and t == T - 1
            at = f"{case}, step {t} ({'the last' if flush else 'mid-episode'})"
            out, verdict = _verdict_of_call(fn, at, mine, gamma, next_obs, terminal, flush)
            if verdict:
                print(verdict)
                return
            expected = n_step_transitions(reference, gamma, next_obs, terminal, flush)
            if out is None:
                print(NOT_DONE_NONE)
                return
            if not isinstance(out, (list, tuple)) or any(not isinstance(x, tuple) or len(x) != 5 for x in out):
                print(f"FAILED on {at}: expected a list of (obs, actions, R, next_obs, terminal) tuples, got "
                      f"{type(out).__name__}: {str(out)[:80]}")
                return
            same = len(out) == len(expected) and all(
                np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1]) and abs(float(a[2]) - b[2]) < 1e-5
                and np.array_equal(a[3], b[3]) and bool(a[4]) == b[4] for a, b in zip(out, expected))
            if not same:
                got = [round(float(x[2]), 4) for x in out]
                want = [round(float(x[2]), 4) for x in expected]
                flags = ""  # the returns can agree while the d flags differ: then show those
                if got == want and [bool(x[4]) for x in out] != [bool(x[4]) for x in expected]:
                    wanted_d, got_d = [int(bool(x[4])) for x in expected], [int(bool(x[4])) for x in out]
                    flags = f" (d = {wanted_d} expected, got {got_d})"
                print(f"FAILED on {at}: expected {len(expected)} transition(s) with R = {want}, got {len(out)} with "
                      f"R = {got}{flags}.\nHint: {_n_step_slip(list(out), expected, gamma, window, flush, terminal)}")
                return
            if len(mine) != len(reference) or any(a is not b for a, b in zip(mine, reference)):
                left = "emptied" if not reference else f"left with its {len(reference)} newest step(s)"
                print(f"FAILED on {at}: the window should be {left}, it holds {len(mine)} step(s).\nHint: "
                      + ("at an episode's end (flush) the window is emptied, whatever was emitted: the next episode "
                         "starts with nothing in it." if flush else "remove each emitted step from the window "
                         "(pending.popleft()), so the next step completes the next one."))
                return
    print(f"PASSED: your window gives n_step_transitions' transitions and leaves the same window after every step of "
          f"{len(N_STEP_CASES)} short episodes: full windows mid-episode, the tails of a terminal end, none at a "
          f"time-limit end, n = 1 and episodes shorter than n.")


# ----------------------------------------------------------------------------------------------
# Part 6: the training loop
# ----------------------------------------------------------------------------------------------

# (what the verdict calls the case, the loop's arguments, its MADDPGConfig)
LOOP_CASES = (
    # eval_every 3 < K = 4: a lock-step can pass two evaluation points, and the rule for that (one evaluation, the next
    # point one eval_every up) is checked; batch 64 > warm-up 32: a loop that waits for warmup_steps alone samples 64
    # transitions from fewer (a slip the check then sees)
    # 2 updates per lock-step, so a loop that makes one fails. (The replay's capacity is checked as a number: a replay
    # that wraps in the case would hide every other slip, the buffers compared slot by slot.)
    ("Switch2-v2, 4 env copies, 24 episodes, seed 3", dict(env_id=ENV_ID, episodes=24, seed=3, eval_every=3),
     dict(n_envs=4, warmup_steps=32, batch_size=64, hidden=16, buffer_size=5_000, updates_per_step=2)),
    # the case above has no episode end where every agent arrived (it has a time-limit end where one had, which
    # catches any() of the arrivals). Random play (epsilon 1) with no update (a warm-up longer than the run) is cheap
    # and has both kinds of end: measured, in its 24 ends, 1 where every agent arrived (terminal, d = 1) and 1
    # time-limit end where one agent had (not terminal); tests/test_capstone_maddpg.py counts them. A loop whose
    # terminal flag is always False passes the first case, not this one
    ("Switch2-v2, 4 env copies, 24 episodes of random play (epsilon 1, no update), seed 12",
     dict(env_id=ENV_ID, episodes=24, seed=12, eval_every=100),
     dict(n_envs=4, warmup_steps=5_000, batch_size=64, hidden=16, buffer_size=5_000, epsilon_start=1.0,
          epsilon_end=1.0)),
)


@functools.cache
@on_one_thread
def _reference_loop_case(index: int) -> dict:
    """``loops.train`` of MADDPG on the loop check's case ``index`` of ``LOOP_CASES`` (with ``MADDPG.update``, which
    ``REFERENCE_UPDATE`` gives to the bit), run once per session (it is deterministic, and ``assemble`` checks every
    part again)."""
    _, arguments, config = LOOP_CASES[index]
    return _reference_training_loop(config=MADDPGConfig(**config), update=None, **arguments)


BUFFER_HINTS = {
    "obs": "store the observation each action was taken in: obs[k] from before venv.step.",
    "actions": "store the actions taken, one-hot: one_hot(actions[k], A) for copy k. If you do, the policy that chose "
               "them differs from the reference's: each lock-step's epsilon is linear(epsilon_start, epsilon_end, "
               "episodes finished so far, epsilon_fraction * episodes), and the updates start once len(buffer) >= "
               "max(warmup_steps, batch_size), config.updates_per_step updates after each lock-step.",
    "rewards": "store the n-step TEAM return from your window of part 5 (its check must pass first): append (obs[k], "
               "actions[k], team reward of copy k) to copy k's pending deque first; every agent's column holds the "
               "same team return.",
    "next_obs": "at an episode's end copy k has already been reset: its next observation is info['final_obs'][k], "
                "not next_obs[k] (which is the new episode's first one).",
    "dones": "check the terminal flag you hand your window: d = 1 only when every agent of that copy arrived, "
             "terminal = info['terminated'][k].all(): a time-limit end is not terminal, even after one agent arrived "
             "(not any(): its last transitions still bootstrap); and an end where every agent arrived is (not always "
             "False: nothing follows it to bootstrap from, and the window keeps the shorter tails).",
}


def _loop_verdict(fn: Callable, case: str, arguments: dict, config: dict, expected: dict) -> str | None:
    """The verdict on the learner's loop for one case of ``LOOP_CASES`` (its reference run ``expected``), or None when
    it matches: the same buffer, returns, number of calls of the update it is given, networks and evaluations."""
    calls = []  # one entry per call of the update the loop is given
    out, verdict = _verdict_of_call(fn, case, arguments["env_id"], arguments["episodes"], MADDPGConfig(**config),
                                    arguments["seed"], capstones.spy(REFERENCE_UPDATE, calls),
                                    arguments["eval_every"])
    if verdict:
        return verdict
    if out is None:
        return NOT_DONE_NONE
    keys = ("agent", "buffer", "episode_returns", "evaluations")
    if not isinstance(out, dict) or any(key not in out for key in keys):
        return (f"FAILED on {case}: expected a dict with {', '.join(keys)}, got "
                f"{sorted(out) if isinstance(out, dict) else type(out).__name__}")
    buffer, reference_buffer = out["buffer"], expected["buffer"]
    if not all(hasattr(buffer, key) for key in reference_buffer.KEYS) or not hasattr(buffer, "__len__"):
        return (f"FAILED on {case}: 'buffer' should be the ReplayBuffer you stored the transitions in, got "
                f"{type(buffer).__name__}")
    if getattr(buffer, "capacity", None) != config["buffer_size"]:
        return (f"FAILED on {case}: your buffer keeps {getattr(buffer, 'capacity', '?')} transitions, the config asks "
                f"for {config['buffer_size']}.\nHint: ReplayBuffer(config.buffer_size, N, O, A): the replay keeps the "
                f"last buffer_size transitions, and how many it keeps changes what MADDPG learns (notebook 05).")
    n = min(len(buffer), len(reference_buffer))  # compare what both stored first: the earliest difference is the cause
    first_difference = {}  # key -> the first transition where that array differs (the earliest is the cause)
    for key in reference_buffer.KEYS:
        mine, theirs = np.asarray(getattr(buffer, key))[:n], getattr(reference_buffer, key)[:n]
        if mine.shape != theirs.shape:
            return (f"FAILED on {case}: the buffer's {key} have shape {mine.shape[1:]} per transition, expected "
                    f"{theirs.shape[1:]}.\nHint: {BUFFER_HINTS[key]}")
        differ = ~np.isclose(mine, theirs, atol=TOLERANCE).reshape(n, -1).all(axis=1)  # (n,)
        if differ.any():
            first_difference[key] = int(np.argmax(differ))
    if first_difference:
        key = min(first_difference, key=first_difference.get)
        # an n-step transition's return and next_obs reach n lock-steps ahead: a changed action shows there first,
        # up to n_step * K transitions before the transition that stores it
        if key in ("next_obs", "rewards") and "actions" in first_difference and \
                first_difference["actions"] - first_difference[key] <= config["n_envs"] * MADDPGConfig().n_step:
            key = "actions"
        return (f"FAILED on {case}: the buffer's {key} differ from transition {first_difference[key]} on.\n"
                f"Hint: {BUFFER_HINTS[key]}")
    if len(buffer) != len(reference_buffer):
        return (f"FAILED on {case}: your buffer holds {len(buffer)} transitions, expected {len(reference_buffer)}.\n"
                f"Hint: every lock-step, for every copy k, append its step to pending[k] and add every transition "
                f"my_n_step_window(pending[k], gamma, info['final_obs'][k], terminal, done) returns (your window of "
                f"part 5, once its check passes: it drops a time-limit tail and flushes a terminal one).")
    if [round(r, 6) for r in out["episode_returns"]] != [round(r, 6) for r in expected["episode_returns"]]:
        return (f"FAILED on {case}: episode returns differ: expected {expected['episode_returns'][:6]} ..., got "
                f"{list(out['episode_returns'])[:6]} ...\nHint: when copy k's episode ends (info['episode_done'][k]), "
                f"record info['episode_team_return'][k].")
    if not isinstance(out["agent"], MADDPG):
        return f"FAILED on {case}: 'agent' should be the MADDPG learner you trained, got {type(out['agent']).__name__}"
    if len(calls) != expected["agent"].updates:
        return (f"FAILED on {case}: your loop called the update it was given {len(calls)} times, expected "
                f"{expected['agent'].updates}.\nHint: every update is a call of the argument, update(agent, batch): "
                f"the check hands your loop the library's update, and assemble hands it yours (part 4, with your "
                f"losses and soft update); a loop that calls agent.update(batch) would train with marl_edu's update "
                f"whatever yours does. Call it config.updates_per_step times after each lock-step, once the buffer "
                f"holds max(config.warmup_steps, config.batch_size) transitions.")
    worst, where = _largest_difference(_parameters(out["agent"]), _parameters(expected["agent"]))
    if worst > TOLERANCE:
        return (f"FAILED on {case}: the buffer matches but {where} is off by up to {worst:.3g}.\nHint: the updates "
                f"differ: sample with buffer.sample(config.batch_size, rng) from rng = np.random.default_rng(seed), "
                f"start once the buffer holds max(config.warmup_steps, config.batch_size) transitions, and make "
                f"config.updates_per_step updates after every lock-step.")
    rounded = [(int(e), round(float(g), 6)) for e, g in out["evaluations"]]
    if rounded != [(e, round(g, 6)) for e, g in expected["evaluations"]]:
        return (f"FAILED on {case}: evaluations differ: expected {expected['evaluations']}, got "
                f"{list(out['evaluations'])}.\nHint: after a lock-step's updates, when the number of finished episodes "
                f"has reached next_eval (first eval_every), append (episodes so far, greedy_return(agent, "
                f"env_id).team_return) and move next_eval up by eval_every once, even if the count has passed two "
                f"points (it may evaluate again at the next lock-step).")
    return None


# the library's own loop, its off-policy data path (collect and store, the replay's batches), its n-step window (part
# 5: the loop calls yours), and the capstone's reference loop
@capstones.refuses_library_answers("maddpg_training_loop", "marl_edu.training.loops:train",
                                   "marl_edu.training.loops:Transitions.collect",
                                   "marl_edu.training.loops:Transitions.batches",
                                   "marl_edu.data.buffers:n_step_transitions",
                                   "marl_edu.course.capstone_maddpg:_reference_training_loop",
                                   "marl_edu.course.capstone_maddpg:_reference_loop_case",
                                   "marl_edu.course.capstone_maddpg:train_yours")
@on_one_thread
def check_maddpg_training_loop(fn: Callable) -> None:
    """Check ``fn(env_id, episodes, config, seed, update, eval_every) -> dict(agent, buffer, episode_returns,
    evaluations)`` against ``loops.train`` of MADDPG on the two small cases of ``LOOP_CASES`` (4 env copies, 24 episodes:
    updates from a batch of 64 after a warm-up of 32, so they start at the 64th stored transition, 2 per lock-step,
    and the replay's capacity checked first; then random play
    with no update, whose episode ends include one where every agent arrived and time-limit ends where one had): the
    same replay buffer (every stored array), episode returns and evaluations, ``update`` called as many times as
    ``loops.train`` updates, and, within TOLERANCE, every parameter. ``update`` is a spy of the reference's, so
    only the loop is checked, and a loop that does not call it fails."""
    for index, (case, arguments, config) in enumerate(LOOP_CASES):
        verdict = _loop_verdict(fn, case, arguments, config, _reference_loop_case(index))
        if verdict:
            print(verdict)
            return
    print(f"PASSED: your loop stores the same transitions as marl_edu's loop ({len(LOOP_CASES)} cases: with updates and "
          f"evaluations, and random play whose episodes end both with every agent arrived and at the time limit "
          f"with one arrived), records the same returns and evaluations, calls the update it is given as often, and "
          f"ends with the same networks (within {TOLERANCE:g}).")


# ----------------------------------------------------------------------------------------------
# Putting the learner's parts together, training them, and drawing the run
# ----------------------------------------------------------------------------------------------

CHECKERS = {name: globals()[f"check_{name}"] for name in PARTS}


def assemble(**mine: Callable) -> dict[str, Callable]:
    """Check each of the learner's parts (keyword = part name, e.g. ``maddpg_critic_loss=my_critic_loss``), print one
    table (part | your verdict | training uses) and return the parts to train with: the learner's where its check
    PASSED, marl_edu's reference for the others (not given, NOT DONE YET or FAILED). ``capstones.assemble``."""
    return capstones.assemble(mine, CHECKERS, REFERENCE)


def whose(parts: dict[str, Callable]) -> str:
    """A legend label for a run trained with ``parts``: how many of them are the learner's (not ``REFERENCE``'s)."""
    return capstones.whose(parts, REFERENCE, "MADDPG")


@on_one_thread
def train_yours(parts: dict[str, Callable], env_id: str = ENV_ID, episodes: int = 1500, seed: int = 0,
                eval_every: int = 50, stop_at: float | None = None, progress: bool = True) -> TrainResult:
    """Train MADDPG on ``env_id`` with ``assemble``'s parts, ``MADDPGConfig()``'s defaults (the committed run's config
    and budget): the update is ``parts["maddpg_update"]`` given the assembled losses and soft update, and the loop is
    yours if it passed (``parts["maddpg_training_loop"]``, whose dict becomes the ``TrainResult``; it runs the whole
    budget, so ``stop_at`` must stay None, and shows no progress bar), else ``loops.train`` of MADDPG itself with that
    update passed in (a stop at the first greedy team return >= ``stop_at``; None: the whole budget). With
    marl_edu's six parts it is ``loops.train``'s own run, to the bit. Deterministic for a seed."""
    capstones.check_parts(parts, REFERENCE)
    update = capstones.learner_update(parts, REFERENCE, "maddpg_update", PARTS[:3])
    config = MADDPGConfig()
    loop = parts["maddpg_training_loop"]
    if loop is REFERENCE["maddpg_training_loop"]:
        return train(MADDPG, env_id, episodes, config, seed, eval_every, progress, stop_at=stop_at, update=update)
    if stop_at is not None:
        raise ValueError(f"stop_at={stop_at}: your training loop (maddpg_training_loop) has no stop, it runs the "
                         f"whole budget; pass stop_at=None")
    tic = time.perf_counter()
    out = loop(env_id, episodes, config, seed, update or REFERENCE_UPDATE, eval_every)
    return TrainResult(agent=out["agent"], episode_returns=list(out["episode_returns"]),
                       evaluations=list(out["evaluations"]), seconds=time.perf_counter() - tic, buffer=out["buffer"])


def reference_run(env_id: str = ENV_ID) -> dict:
    """The committed reference run of MADDPG (``results/maddpg/<env_id>/run.json``: seed 0, the default config): its
    ``evaluations`` and more."""
    return capstones.reference_run(algo_name_of_class(MADDPG), env_id)


def plot_against_reference(result: TrainResult, optimal: float | None = None, random: float | None = None,
                           env_id: str = ENV_ID, ax: plt.Axes | None = None, label: str = "your MADDPG") -> plt.Axes:
    """Your run's greedy evaluations (legend ``label``: ``whose(parts)`` says whose parts trained it) against the
    committed reference run's, with the exact optimum and the random policy as horizontal lines. Returns the
    matplotlib axes."""
    return capstones.plot_against_reference(result, reference_run(env_id), "MADDPG", optimal, random, env_id, ax,
                                            label)
