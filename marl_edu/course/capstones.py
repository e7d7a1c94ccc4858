"""What the two capstones (notebooks 22 and 23) do alike: the one API their modules follow, and its helpers.

Each capstone module (``capstone_maddpg``, ``capstone_coma``) owns its parts and their checks:

    PARTS                    the names of the parts the learner writes (six and five), in the notebook's order
    REFERENCE                part name -> marl_edu's own version of that part, in the learner's signature
    check_<part>(fn)         one printed verdict, PASSED / FAILED with a hint / NOT DONE YET; never raises

and offers the same six functions, each a few lines over the helpers below:

    assemble(**mine)         -> parts: the learner's where its check PASSED, marl_edu's reference for the others;
                                prints one table, part | your verdict | training uses
    whose(parts)             -> a legend label: how many of the parts trained with are the learner's
    train_yours(parts, env_id, episodes, seed, eval_every, stop_at, progress)
                             -> train.TrainResult: the library's own loop (loops.train)
                                with the learner's update passed in (``update=``), never a copy of it
    reference_run(env_id)    -> the committed reference run (results/<algo>/<env_id>/run.json): seed, config,
                                evaluations [(episode, greedy team return)], ...
    random_return(env_id, episodes, seed)
                             -> the mean team return of uniformly random actions, the plot's bottom line
    plot_against_reference(result, optimal, random, env_id, ax, label)
                             -> the run's greedy evaluations against the committed reference run's, the exact
                                optimum and the random policy

Every ``check_<part>`` refuses an answer that calls the library's own implementation of its part
(``refuses_library_answers``, beside each checker with the names it guards): while the learner's function runs
inside the check, those functions and methods are replaced by a guard (``refusing``), and a call to one ends the
check with FAILED naming it; everything is put back afterwards, also when the learner's code raised. A part that is
GIVEN other parts (an update its losses, a loop its update) is handed spies of them (``spy``), and its check fails it
when it does not call them: calling marl_edu's own instead gives the same numbers, yet would train with marl_edu's.

and two functions shared by both, which each capstone module re-exports:

    hint(name, stage)        prints hint 1, 2 or 3 of any capstone part (``HINTS``): 1 a nudge (the idea that matters,
                                a common trap), 2 the plan (the tensors in order, with shapes, and the helpers to call),
                                3 the pseudocode
    show_solution(name)      the whole answer, the last resort after the three hints: ``solutions.show_solution``,
                                imported only when called, so that a notebook importing a capstone does not hold the
                                answers one ``inspect`` away
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import io
import json
import sys
from typing import Callable

import matplotlib.pyplot as plt
import numpy as np

from marl_edu.base.course_paths import RESULTS_DIR
from marl_edu.base.viz import greedy_axes
from marl_edu.data.rollout import random_policy, team_returns
from marl_edu.envs.make import make_env
from marl_edu.training.loops import TrainResult



def assemble(mine: dict[str, Callable], checkers: dict[str, Callable],
             reference: dict[str, Callable]) -> dict[str, Callable]:
    """Check each of the learner's parts quietly, print one table (part | your verdict | training uses) and return
    the parts to train with: the learner's where its check PASSED, ``reference``'s for the others (not given, NOT
    DONE YET or FAILED), so a part that fails never trains.

    Args:
        mine: part name -> the learner's function, for any of the capstone's parts.
        checkers: part name -> its ``check_<part>``, one for every part, in the notebook's order.
        reference: part name -> marl_edu's version of that part.
    A name that is not a part is a ValueError listing the parts.
    """
    unknown = sorted(set(mine) - set(checkers))
    if unknown:
        raise ValueError(f"unknown parts {unknown}; the parts are {', '.join(checkers)}")
    parts, rows = {}, []
    for name, check in checkers.items():
        if name not in mine:
            verdict = "not given"
        else:
            captured = io.StringIO()
            with contextlib.redirect_stdout(captured):
                try:
                    check(mine[name])
                except Exception as error:  # a checker never raises; this is a belt for braces
                    print(f"FAILED: the check raised {type(error).__name__}: {error}")
            verdict = next(iter(captured.getvalue().splitlines()), "no verdict")
        passed = verdict.startswith("PASSED")
        parts[name] = mine[name] if passed else reference[name]
        short = "PASSED" if passed else "NOT DONE YET" if verdict.startswith("NOT DONE") else \
            "FAILED" if verdict.startswith("FAILED") else verdict
        rows.append((name, short, "yours" if passed else "marl_edu's reference"))
    width = max(len(name) for name in checkers)
    print(f"{'part':<{width}} | {'your verdict':<12} | training uses")
    print(f"{'-' * width}-+-{'-' * 12}-+-{'-' * 20}")
    for name, short, used in rows:
        print(f"{name:<{width}} | {short:<12} | {used}")
    return parts


def check_parts(parts: dict[str, Callable], reference: dict[str, Callable]) -> None:
    """ValueError unless ``parts`` holds a function for every part of ``reference`` (``assemble``'s dict does)."""
    if not isinstance(parts, dict):
        raise ValueError(f"parts must be assemble(...)'s dict of part name -> function, got {type(parts).__name__}")
    missing = [name for name in reference if name not in parts]
    if missing:
        raise ValueError(f"parts is missing {missing}: pass assemble(...)'s dict")
    not_functions = [name for name in reference if not callable(parts[name])]
    if not_functions:
        raise ValueError(f"parts {not_functions} are not functions: pass assemble(...)'s dict")


def whose(parts: dict[str, Callable], reference: dict[str, Callable], algorithm: str) -> str:
    """A legend label for a run trained with ``parts``: how many of them are the learner's (not ``reference``'s),
    e.g. ``"your COMA (2 of 5 parts yours)"``."""
    mine = sum(parts[name] is not reference[name] for name in reference)
    if mine == len(reference):
        return f"your {algorithm}"
    if mine == 0:
        return "marl_edu's parts (your stubs are empty)"
    return f"your {algorithm} ({mine} of {len(reference)} parts yours)"


def learner_update(parts: dict[str, Callable], reference: dict[str, Callable], update: str,
                   passed_in: tuple[str, ...]) -> Callable | None:
    """The ``update=`` to hand the library's loop (``loops.train``): a function
    ``update(agent, batch)`` calling ``parts[update](agent, batch, *the parts named passed_in)``, or None (the loop
    calls the learner class's own ``agent.update(batch)``) when every one of those parts is marl_edu's."""
    names = (update, *passed_in)
    if all(parts[name] is reference[name] for name in names):
        return None
    update_part, given = parts[update], tuple(parts[name] for name in passed_in)

    def update_with_parts(agent, batch) -> None:
        update_part(agent, batch, *given)

    return update_with_parts


def spy(part: Callable, calls: list) -> Callable:
    """``part`` that also appends each call's positional arguments to ``calls``. A check hands spies of the parts a
    learner's function is GIVEN (the update's losses, the loop's update) and then sees whether it called them: a
    function that calls marl_edu's own part instead passes the comparison with marl_edu, yet would train with
    marl_edu's part whatever the learner wrote."""
    def spied(*args, **kwargs):
        calls.append(args)
        return part(*args, **kwargs)

    return spied


def reference_run(algo: str, env_id: str) -> dict:
    """The committed reference run of ``algo`` (``"maddpg"``, ``"coma"``) on ``env_id``,
    ``results/<algo>/<env_id>/run.json``: its ``seed``, ``config``, ``episode_returns`` and ``evaluations``
    ``[(episode, greedy team return)]``. ValueError if there is none."""
    path = RESULTS_DIR / algo / env_id / "run.json"
    if not path.is_file():
        committed = sorted(p.parent.name for p in (RESULTS_DIR / algo).glob("*/run.json"))
        raise ValueError(f"no committed reference run of {algo} on {env_id!r}; there are runs on {committed}")
    return json.loads(path.read_text())


def random_return(env_id: str, episodes: int = 100, seed: int = 0) -> float:
    """The mean team return of uniformly random actions over ``episodes`` episodes of one env seeded ``seed``."""
    env = make_env(env_id, seed=seed)
    policy = random_policy(env.n_agents, env.n_actions, np.random.default_rng(seed))
    return float(team_returns(env, policy, episodes, progress=False).mean())


def plot_against_reference(result: TrainResult, reference: dict, algorithm: str, optimal: float | None = None,
                           random: float | None = None, env_id: str = "", ax: plt.Axes | None = None,
                           label: str = "your run") -> plt.Axes:
    """``result``'s greedy evaluations (blue, legend ``label``) against the committed ``reference`` run's
    (``reference_run``'s dict; grey, wide), with the exact ``optimal`` return and the ``random`` policy's mean as
    horizontal lines (None: not drawn). Returns the matplotlib axes."""
    if not isinstance(result, TrainResult):
        raise ValueError(f"result must be train_yours(...)'s TrainResult, got {type(result).__name__}")
    if ax is None:
        _, ax = plt.subplots(figsize=(6.5, 3.4))
    episodes, greedy = zip(*reference["evaluations"])
    ax.plot(episodes, greedy, "-o", color="0.65", markersize=4, linewidth=2.5,  # wide: it shows under a run that
            label=f"marl_edu's {algorithm} (committed run, seed {reference['seed']})")  # retraces it exactly
    if result.evaluations:
        episodes, greedy = zip(*result.evaluations)
        ax.plot(episodes, greedy, "-o", color="C0", markersize=3, linewidth=1.2, label=label)
    return greedy_axes(ax, optimal, f"{env_id}: greedy team return", optimum_style=("C2", "--"), random=random)


# ----------------------------------------------------------------------------------------------------------------
# Checks that refuse the library's own answer
# ----------------------------------------------------------------------------------------------------------------

class _LibraryAnswer(BaseException):
    """Raised by a guard when a learner's part calls marl_edu's own implementation of that part. A BaseException,
    not an Exception, so that neither the learner's ``except Exception`` nor a checker's own catch-all swallows it."""


def _owner_and_attribute(name: str) -> tuple[object, str]:
    """``"marl_edu.learners.coma:COMA.critic_rows"`` -> (the class COMA, ``"critic_rows"``);
    ``"marl_edu.data.buffers:n_step_transitions"`` -> (the module marl_edu.data.buffers, ``"n_step_transitions"``)."""
    module_name, _, qualified = name.partition(":")
    owner = importlib.import_module(module_name)
    *path, attribute = qualified.split(".")
    for step in path:
        owner = getattr(owner, step)
    return owner, attribute


def _bound_method_of(value, function) -> bool:
    """Whether ``value`` is ``function`` bound to an object (``agent.critic_rows`` for ``COMA.critic_rows``)."""
    try:
        return getattr(value, "__func__", None) is function
    except Exception:  # an object whose attribute lookup fails in its own way is no bound method
        return False


@contextlib.contextmanager
def refusing(names: tuple[str, ...], learner_globals: dict | None = None):
    """While inside, every library function or method in ``names`` (``"module:qualified.name"``) is replaced by a
    guard that records its name in the list this yields and raises ``_LibraryAnswer``. The name recorded is the one the
    learner wrote: a method called on a learner object is ``"agent.replay_policy (the library's
    COMA.replay_policy)"``, its class the object's own (not the base class that defines it); anything else is the full
    ``"marl_edu.module.qualified.name"``. The guards sit where it is defined, wherever
    a ``marl_edu`` module imported it by name, and in ``learner_globals`` (the notebook's namespace, where a
    ``from marl_edu... import`` put it, or a bound method of it). Everything is put back on leaving, also when the
    learner's code raised."""
    called: list[str] = []
    replaced = []  # (where, attribute, original): put back in reverse order

    def replace(where, attribute, guard):
        if isinstance(where, dict):
            replaced.append((where, attribute, where[attribute]))
            where[attribute] = guard
        else:
            replaced.append((where, attribute, vars(where)[attribute]))  # as stored: a staticmethod stays one
            setattr(where, attribute, guard)

    try:
        for name in names:
            owner, attribute = _owner_and_attribute(name)
            function = getattr(owner, attribute)  # (on a class: the plain function of a method or staticmethod)
            shown = name.replace(":", ".")

            def guard(*args, shown=shown, owner=owner, attribute=attribute, **kwargs):
                if isinstance(owner, type) and args and isinstance(args[0], owner):  # a method, reached from the
                    shown = f"agent.{attribute} (the library's {type(args[0]).__name__}.{attribute})"  # learner
                called.append(shown)
                raise _LibraryAnswer(shown)

            replace(owner, attribute, guard)
            if not isinstance(owner, type):  # a module's function: also where other modules imported it by name
                for module_name, module in list(sys.modules.items()):
                    if module_name.startswith("marl_edu") and module is not owner:
                        for key in [key for key, value in vars(module).items() if value is function]:
                            replace(module, key, guard)
            for key, value in list((learner_globals or {}).items()):
                if value is function or _bound_method_of(value, function):
                    replace(learner_globals, key, guard)
        yield called
    finally:
        for where, attribute, original in reversed(replaced):
            if isinstance(where, dict):
                where[attribute] = original
            else:
                setattr(where, attribute, original)


def refuses_library_answers(part: str, *names: str) -> Callable:
    """A decorator for ``check_<part>(fn)``: while the learner's ``fn`` runs inside the check, the library's own
    implementations of that part, ``names`` (``"module:qualified.name"``), are guarded (``refusing``), and a call to
    one of them ends the check with FAILED naming it, also when the learner's code caught the guard's exception.
    The decorated check keeps the names in ``.refused``."""
    def decorate(check: Callable) -> Callable:
        @functools.wraps(check)
        def checked(fn) -> None:
            if not callable(fn):
                return check(fn)

            @functools.wraps(fn)
            def guarded(*args, **kwargs):
                with refusing(names, getattr(fn, "__globals__", None)) as called:
                    out = fn(*args, **kwargs)
                if called:  # the learner's code caught the guard's exception and went on
                    raise _LibraryAnswer(called[0])
                return out

            try:
                check(guarded)
            except _LibraryAnswer as refused:
                print(f"FAILED: your {part} calls {refused}, marl_edu's own implementation of what you write "
                      f"here (the answer the check compares yours with).\nHint: write it yourself, from the "
                      f"equations and shapes of the section, calling your own earlier parts where it needs them; "
                      f"hint({part!r}, 1) if you are stuck.")

        checked.refused = names
        return checked

    return decorate


# ----------------------------------------------------------------------------------------------------------------
# Hints in stages, for every part of both capstones
# ----------------------------------------------------------------------------------------------------------------

STAGES = {
    1: "a nudge: the idea or equation that matters, and a common trap",
    2: "the plan: which tensors to build, in which order, with their shapes and the helpers to call",
    3: "the pseudocode: every step in order (after this only show_solution, the whole answer, is left)",
}

MADDPG_HINTS: dict[str, tuple[str, str, str]] = {
    "maddpg_critic_loss": (
        """\
The loss regresses Q_i(x, a) onto a label y_i, and the label must not move when the critic learns: no gradient
through y_i. Three things make y_i: the TARGET actors choose the next actions at the next observations (the batch's
actions were taken at the current ones), the TARGET critic Q'_i scores them, and the bootstrap is discounted by
gamma^n, since every reward in the batch is an n-step return, and cut by (1 - d_i).
Trap: drawing the Gumbel noise agent by agent. The check rewinds the learner's generator and compares, so all N next
actions must come from one draw on the stacked logits.""",
        """\
1. Without gradient: each target actor j on its own agent's next observations, next_obs[:, j] (B, O) -> logits
   (B, A); stacked along a new agent axis (dim 1): (B, N, A).
2. One hard sample of those logits: gumbel_softmax on the (B, N, A) tensor, temperature agent.config.temperature,
   hard=True, generator=agent.generator -> one-hot next actions (B, N, A).
3. The next critic input: flatten_for_critic(next_obs, next actions) (B, N*(O+A)); target critic i of it -> (B,).
4. The label, every factor (B,): column i of rewards, plus gamma ** n_step times (1 - column i of dones) times (3).
   Keep everything (B,): a (B, 1) next to a (B,) broadcasts silently to (B, B).
5. With gradient: critic i on flatten_for_critic(obs, actions) -> (B,); the mean of the squared difference to the
   label -> a 0-d tensor.""",
        """\
def my_critic_loss(agent, i, batch):
    read gamma, n (n_step) and kappa (temperature) from agent.config
    no-gradient block:
        logits'  <- [target actor j (next obs of agent j)  for j = 0 .. N-1], stacked on dim 1   # (B, N, A)
        a'       <- gumbel_softmax(logits', kappa, hard, agent.generator)   # ONE call   # (B, N, A) one-hot
        q'       <- target critic i (flatten_for_critic(next obs, a'))                    # (B,)
        y        <- r[:, i] + gamma^n * (1 - d[:, i]) * q'                                # (B,)
    q <- critic i (flatten_for_critic(obs, batch actions))                                 # (B,) with gradient
    return mean over the batch of (q - y)^2                                               # 0-d""",
    ),
    "maddpg_actor_loss": (
        """\
The actor wants a HIGH value from critic i and the optimiser minimises, so the loss is MINUS that value. Agent i
has only A actions, so no sample is needed: weigh critic i's value of every own action k by pi_i(k | o_i) and SUM
over k (a mean divides by A). The other agents' actions stay what the batch says they did. The critic is a fixed
judge here: the gradient reaches actor i through pi_i (and the logits penalty c_reg mean(l_i^2)) only.
Trap: evaluating the critic only at the action in the batch; it is needed at every own action k.""",
        """\
1. With gradient: logits of actor i on its own observations obs[:, i] (B, O) -> l_i (B, A).
2. Without gradient, for k = 0 .. A-1: a copy of the batch's one-hot actions (B, N, A) in which agent i's block is
   replaced by one_hot(k) (zeros, then a 1 at k); critic i on flatten_for_critic(obs, that copy) -> (B,).
   Stack the A results on dim 1 -> q (B, A).
3. pi_i = softmax of l_i over the action axis (dim 1) -> (B, A).
4. The expected value per sample: (pi_i * q) summed over dim 1 -> (B,); its mean over the batch, negated -> 0-d.
5. Add agent.config.logits_reg times the mean of l_i squared over all (B, A) entries.""",
        """\
def my_actor_loss(agent, i, batch):
    l <- actor i (obs[:, i])                                              # (B, A), keeps its graph
    no-gradient block:
        for every own action k:
            joint <- batch actions with agent i's row set to the one-hot of k  # (B, N, A), a copy
            q_k   <- critic i (flatten_for_critic(obs, joint))                # (B,)
        q <- the q_k side by side                                         # (B, A)
    pi <- softmax(l) over actions                                         # (B, A)
    return -(mean over b of sum over k of pi * q) + c_reg * mean(l^2)     # 0-d""",
    ),
    "soft_update": (
        """\
Blend, do not copy: every target parameter moves a fraction tau of the way towards its source,
theta' <- tau theta + (1 - tau) theta'. Two traps: swapping tau and (1 - tau) (the target takes the SMALL step), and
making new tensors or a new network: the learner keeps using the same target objects, so the target's own tensors
must change in place.""",
        """\
1. target.parameters() and source.parameters() walk two networks of the same shape (or two ModuleLists of them)
   in the same order: pair them with zip; each pair has one shape.
2. Work inside torch.no_grad(): writing in place into a tensor that requires grad is an error otherwise.
3. For each pair (p_target, p_source): scale p_target by (1 - tau) in place (Tensor.mul_), then add tau * p_source
   in place (Tensor.add_); or compute the blend and Tensor.copy_ it into p_target.
4. Change nothing in the source; return None.""",
        """\
def my_soft_update(target, source, tau):
    no-gradient block:
        for every (p_target, p_source) taken together from the two parameter lists:
            p_target <- (1 - tau) * p_target + tau * p_source     # written INTO p_target (mul_, add_ or copy_)
    return None""",
    ),
    "maddpg_update": (
        """\
The order is the idea: each actor climbs its own critic, so every critic takes its step on this batch FIRST and the
actors step afterwards, on the corrected critics; the targets then move softly ONCE, at the very end (once per agent
would move them N times as far). Every gradient step is the same four moves, and the check expects gradient norm
clipping at agent.config.grad_clip in it. The batch arrives as numpy arrays; the losses want float32 tensors.
Call the three parts you are given (critic_loss, actor_loss, soft_update): the check passes the library's.""",
        """\
1. Tensors: every array of the batch as a float32 torch tensor, same keys, shapes (B, N, .).
2. Critics: for i in 0 .. N-1, loss = critic_loss(agent, i, tensors) (0-d), then a gradient step on critic i:
   agent.critic_optimizers[i].zero_grad(); loss.backward(); torch.nn.utils.clip_grad_norm_ over
   agent.critics[i].parameters() with max norm agent.config.grad_clip; agent.critic_optimizers[i].step().
3. Actors: the same with actor_loss, agent.actor_optimizers[i] and agent.actors[i].
4. Targets: soft_update from agent.actors into agent.target_actors, then from agent.critics into
   agent.target_critics, both with tau = agent.config.tau. Return None.""",
        """\
def my_update(agent, batch, critic_loss, actor_loss, soft_update):
    b <- {key: float32 tensor of value}
    procedure STEP(optimizer, network, loss): zero the grads; backprop; clip the norm to grad_clip; optimizer step
    for i = 0 .. N-1:  STEP(critic optimizer i, critic i, critic_loss(agent, i, b))
    for i = 0 .. N-1:  STEP(actor optimizer i, actor i, actor_loss(agent, i, b))
    soft_update(target actors  <- actors,  tau)
    soft_update(target critics <- critics, tau)""",
    ),
    "n_step_window": (
        """\
A step becomes a transition once n steps have followed it, so the window waits until it holds n steps, then hands
out its OLDEST step with the discounted sum of the n rewards, and lets that step go. Two traps are at the episode's
end: after a real terminal state nothing can be bootstrapped, so every step still waiting leaves with the shorter
return of what is left; after a time-limit end those shorter returns would need g^k with k < n, while every stored
transition is bootstrapped with g^n, so they are dropped. Either way the window starts the next episode empty.""",
        """\
1. n is pending.maxlen; pending holds (obs (N, O), actions int (N,), reward) tuples, oldest first.
2. A transition is (obs and actions of pending[0], R = sum over k of gamma^k * reward of pending[k], next_obs,
   terminal): R a float, next_obs and terminal as given, the same for every transition of this call.
3. Mid-episode (flush False): at most one, and only when len(pending) == n; then pending.popleft().
4. At the end (flush True): if terminal, one per step left (R over what is left each time, popping as you go);
   if not, only a full window's one. Then pending.clear(). Return the list (empty when nothing is complete).""",
        """\
def my_n_step_window(pending, gamma, next_obs, terminal, flush):
    out <- []
    while pending is not empty and (len(pending) == n or (flush and terminal)):
        R <- sum of gamma^k * reward_k over the steps in pending, k = 0 for the oldest
        out gets (obs of the oldest, actions of the oldest, R, next_obs, terminal)
        drop the oldest step from pending
        if not flush: stop (one transition per step mid-episode)
    if flush: empty pending
    return out""",
    ),
    "maddpg_training_loop": (
        """\
The check compares your replay buffer with marl_edu's loop's transition by transition, so what goes INTO the buffer
matters most: n-step returns of the TEAM reward (sum the agents' rewards before a step enters the n-step window);
the real end observation of an episode (the copy has already reset, so next_obs[k] is the next episode's first);
and a terminal flag that is 1 only when EVERY agent arrived (a time-limit end is not terminal). Within a lock-step:
act, step, store every copy's transitions, then update, then evaluate. All randomness comes from seed: the
learner's own generator (acting) and one numpy generator that only samples batches.""",
        """\
What to build, from seed: a numpy Generator seeded with seed (for buffer.sample only); make_vec_env(env_id,
config.n_envs, seed) and its sizes N, O, A, K; MADDPG(N, O, A, config, seed=seed); a ReplayBuffer of capacity
config.buffer_size for N agents, O, A; K deques of maxlen config.n_step; the returns and evaluations lists; and the
episode count at which the next evaluation is due (eval_every).
The shapes each lock-step: obs (K, N, O) -> agent.act(obs, epsilon) int (K, N) -> venv.step -> next_obs (K, N, O),
rewards (K, N), dones (K, N), info. The team reward of copy k is rewards[k] summed: one float.
epsilon = linear(config.epsilon_start, config.epsilon_end, e, f), e the episodes ended so far and f the
fraction config.epsilon_fraction of the budget, times episodes.
Your window of part 5, my_n_step_window(window of copy k, config.gamma, info["final_obs"][k], terminal,
info["episode_done"][k]), returns a list of (o (N, O), a int (N,), R, o' (N, O), d); each goes into
buffer.add as o, one_hot(a, A) (N, A), R and d each repeated into an (N,) array (every agent's column holds the
team's), o'.
Updates start once the buffer holds max(config.warmup_steps, config.batch_size) transitions: then
config.updates_per_step calls of update(agent, batch), each batch from buffer.sample(config.batch_size, rng).
An evaluation is (episodes recorded so far, greedy_return(agent, env_id).team_return).""",
        """\
def my_training_loop(env_id, episodes, config, seed, update, eval_every):
    rng, venv (K copies), N O A K, agent, buffer, K windows (deques), returns = [], evaluations = [],
    due = eval_every, obs = reset
    repeat while len(returns) < episodes:
        eps <- linear(start, end, len(returns), fraction * episodes)
        acts <- agent.act(obs, eps); step the K copies -> next obs, rewards, dones, info
        for each copy k:
            window k gets (obs[k], acts[k], team reward of k)
            terminal <- all agents of k terminated;  ended <- k's episode done
            for each (o, a, R, o2, d) from my_n_step_window(window k, gamma, final obs of k, terminal, ended):
                buffer.add(o, one-hot a, R in every agent's column, o2, d in every agent's column)
            if ended: returns gets k's episode team return
        obs <- next obs
        if the buffer holds at least max(warmup, batch size):
            repeat updates_per_step times: update(agent, a sample of batch size drawn with rng)
        if len(returns) >= due:
            due <- due + eval_every
            evaluations gets (len(returns), the greedy team return of agent on env_id)
    return {agent, buffer, episode_returns: returns, evaluations}""",
    ),
}

COMA_HINTS: dict[str, tuple[str, str, str]] = {
    "coma_critic_rows": (
        """\
Row i has to let the critic vary agent i's action while the others' stay fixed: Q(s, (a_-i, k)) for every k in one
forward pass. So agent i's own one-hot action must NOT be in row i (zero that block, in row i only; the other rows
keep it), and the row must say whose it is (a one-hot id at the end).
Traps: the four blocks in another order (the check uses O = A, where wrong orders still have the right widths);
F.one_hot takes int64 and returns int64 (make it float before concatenating); rows in time-major order.""",
        """\
Let M = B*(T+1) (episode-major: episode b's index t is row block b*(T+1) + t).
1. obs as (M, N, O): o_i for row i.
2. The state: obs as (M, 1, N*O), expanded to (M, N, N*O): the same s in each of the N rows.
3. One-hot actions: F.one_hot of actions as (M, N), A classes, as float -> (M, N, A).
4. Every row's view of the joint action: (M, N, A) unsqueezed to (M, 1, N, A), expanded to (M, N rows, N agents, A),
   times a mask that is 0 on the diagonal, (1 - eye(N)) viewed (1, N, N, 1); then reshaped (M, N, N*A).
5. The ids: eye(N) expanded to (M, N, N).
6. Concatenate [state, own obs, masked actions, ids] on the last axis -> (M, N, N*O + O + N*A + N).""",
        """\
def my_coma_critic_rows(agent, obs, actions):
    B, T1, N, O from obs; A <- agent.n_actions; M <- B * T1
    own    <- obs as (M, N, O)
    state  <- own flattened per row to (M, 1, N*O), repeated for the N rows       # (M, N, N*O)
    onehot <- float one-hot of actions as (M, N)                                  # (M, N, A)
    joint  <- onehot repeated for the N rows                                      # (M, N, N, A)
    joint  <- joint with block [row i, agent i] zeroed for every i (1 - identity)  # (M, N, N, A)
    ids    <- identity(N) repeated M times                                        # (M, N, N)
    return concatenate(state, own, joint as (M, N, N*A), ids) on the last axis     # (M, N, D)""",
    ),
    "coma_critic_targets": (
        """\
Three choices make the target: the TEAM reward r_t = sum_i r_{i,t} in every agent row; Q' of the joint action
actually TAKEN next, from the TARGET critic (COMA's critic is on-policy: no max over actions); and (1 - d_t),
which cuts the recursion at a terminal step and on padding, while a time-limit end (d = 0) bootstraps from the
end-state column. The recursion runs backwards from t = T-1, starting from y_T := Q'(s_T, a_T), and carries no
gradient. Trap: lam and (1 - lam) swapped; (1 - lam) weighs Q'(s_{t+1}, a_{t+1}), lam weighs y_{t+1}.""",
        """\
1. In torch.no_grad(): the target critic on the rows flattened to (B*(T+1)*N, D) -> (B*(T+1)*N, A), reshaped
   (B, T+1, N, A).
2. Gather each row's value at the action taken, batch["actions"] (B, T+1, N) -> Q'(s_t, a_t) (B, T+1, N).
3. The values the steps bootstrap from: columns 1 .. T -> (B, T, N); column t holds Q'(s_{t+1}, a_{t+1}).
4. The team reward: batch["rewards"] summed over agents (B, T), expanded explicitly to (B, T, N);
   the continuation 1 - batch["dones"] (B, T) as (B, T, 1).
5. y (B, T, N), filled from t = T-1 down to 0, with a running y_{t+1} (B, N) that starts as the last column of (3);
   each step is the section's recursion with every factor (B, N).""",
        """\
def my_coma_critic_targets(agent, rows, batch):
    gamma, lam from agent.config;  B, T1, N from batch actions;  T <- T1 - 1
    no-gradient block:
        Q'      <- target critic of the flattened rows, reshaped                  # (B, T1, N, A)
        Q'taken <- Q' gathered at batch actions                                  # (B, T1, N)
        V       <- Q'taken without column 0                                      # (B, T, N)
        r       <- rewards summed over agents, copied into every agent row       # (B, T, N)
        keep    <- 1 - dones, with an agent axis of size 1                       # (B, T, 1)
        y <- zeros (B, T, N);  g <- last column of V                             # (B, N)
        for t = T-1 down to 0:
            y[:, t] <- r[:, t] + gamma * keep[:, t] * ((1 - lam) * V[:, t] + lam * g)
            g <- y[:, t]
    return y""",
    ),
    "coma_batch_advantage": (
        """\
Use the critic being trained, agent.critic (not the target): the actor is scored by the critic that has just
learned this batch. The baseline is the POLICY-weighted average of Q over agent i's own actions (not a uniform
average, not the best action), and the advantage is the taken joint action's Q minus it. The end-state column T has
no action to score. The advantage is a constant for the actor's loss: no gradient (pi arrives with one).""",
        """\
1. In torch.no_grad(): agent.critic on the rows flattened to (B*(T+1)*N, D) -> (B*(T+1)*N, A), reshaped
   (B, T+1, N, A); keep columns 0 .. T-1 -> q (B, T, N, A).
2. Q of the taken joint action: gather q at batch["actions"] without its last column, (B, T, N) -> (B, T, N).
3. The baseline: (pi.detach() * q) summed over the last axis -> (B, T, N).
4. Return (2) - (3), (B, T, N).""",
        """\
def my_coma_batch_advantage(agent, rows, batch, pi):
    taken_actions <- batch actions without the end-state column            # (B, T, N)
    no-gradient block:
        q        <- critic of the flattened rows, reshaped, columns 0..T-1  # (B, T, N, A)
        q_taken  <- q gathered at taken_actions                            # (B, T, N)
        baseline <- sum over k of detached pi * q                          # (B, T, N)
    return q_taken - baseline""",
    ),
    "coma_replay_policy": (
        """\
The update must recompute exactly the probabilities the agents acted with: the same GRU, run from each episode's
start, with one hidden state per (episode, agent) row carried from step to step; the same input at step t (own
observation, one-hot of the agent's PREVIOUS action, all zeros at t = 0, one-hot id); the same epsilon mixing,
(1 - eps) softmax + eps / A. Keep the gradient all the way: no torch.no_grad(), no .detach(), no detached h.
Traps: the action of the same step in the input (the policy would see what it is choosing); one_hot(0) at t = 0.""",
        """\
1. ids: eye(N) expanded to (B, N, N); the previous-action block: zeros (B, N, A); the hidden state:
   agent.actor.initial_hidden(B * N) -> (B*N, H).
2. For t = 0 .. T-1: the input, concatenated on the last axis, [obs[:, t] (B, N, O), previous (B, N, A),
   ids (B, N, N)] -> (B, N, O+A+N), reshaped (B*N, O+A+N) (row b*N + i is agent i of episode b).
3. agent.actor(input, hidden) returns the logits (B*N, A) and the NEW hidden state (B*N, H): keep the new one.
4. softmax over the actions, reshaped (B, N, A), mixed with epsilon: (1 - epsilon) * p + epsilon / A.
5. The next step's previous-action block: F.one_hot(actions[:, t], A) as float (B, N, A).
6. Stack the T steps on dim 1 -> (B, T, N, A).""",
        """\
def my_coma_replay_policy(agent, obs, actions, epsilon):
    B, T, N, O from obs;  A <- agent.n_actions
    ids <- identity(N) for each episode (B, N, N);  prev <- zeros (B, N, A);  h <- initial hidden for B*N rows
    out <- empty list
    for t = 0 .. T-1:
        x      <- concatenate(obs at t, prev, ids), as (B*N, O+A+N)
        l, h   <- one step of the actor on (x, h)                 # h carried on
        p      <- softmax(l) as (B, N, A)
        out gets (1 - epsilon) * p + epsilon / A
        prev   <- float one-hot of the actions at t
    return the T entries of out stacked on dim 1                 # (B, T, N, A)""",
    ),
    "coma_update": (
        """\
Targets once, before any step: they are constants for the critic's loss. The critic goes FIRST, critic_steps
gradient steps, each with a fresh forward pass of the critic; then the actor's ONE step, with the advantage from
the critic just trained. Both losses are masked means: the critic's over the real steps (step_mask) and the N rows,
the actor's over agent_mask (an agent already home has no choice left; divide by the mask's sum, at least 1).
Count the update (agent.updates += 1) BEFORE deciding whether this is the C-th, the one that copies the critic into
the target critic. Call the four parts you are given: the check passes the library's.""",
        """\
1. The rows from critic_rows(agent, obs, actions), (B*(T+1), N, D); the targets y from critic_targets(agent,
   rows, batch), (B, T, N).
2. critic_steps times: the critic on the rows -> (B, T+1, N, A); gathered at the taken actions, the end-state column
   dropped -> (B, T, N); loss = sum(step_mask (B, T) expanded to (B, T, N) * (q - y)^2) / sum of that mask; one
   gradient step (zero_grad, backward, clip_grad_norm_ to agent.config.grad_clip, step) with agent.critic_optimizer.
3. pi = replay_policy(agent, obs without the end-state column, actions without it, batch["epsilon"]) (B, T, N, A).
4. The advantage from advantage(agent, rows, batch, pi.detach()), (B, T, N).
5. log pi of the taken actions (+ 1e-10 inside the log) (B, T, N); the entropy -sum_k pi log(pi + 1e-10) (B, T, N).
6. The actor's loss: minus the sum over agent_mask of (adv * log pi + agent.entropy_coef * entropy), divided by
   agent_mask's sum clamped at 1; one clipped gradient step with agent.actor_optimizer.
7. agent.updates += 1; when it is a multiple of agent.config.target_update_every, load the critic's state dict
   into agent.target_critic.
Helpers you may call, both taught before: marl_edu.pieces.nets.gradient_step(optimizer, net, loss, grad_clip)
(notebook 08: zero_grad, backward, the clip and the step in one call) for 2 and 6, and
marl_edu.pieces.targets.hard_update(target, source) (notebook 03) for 7. Parts 1 to 4 only through the arguments
you are given, never agent.critic_rows(...) and the like: the check hands your update spies of them and fails an
update that does not call them.""",
        """\
def my_coma_update(agent, batch, critic_rows, critic_targets, advantage, replay_policy):
    procedure STEP(optimizer, network, loss): zero the grads; backprop; clip the norm to grad_clip; optimizer step
    rows <- critic_rows(agent, obs, actions);  y <- critic_targets(agent, rows, batch)
    m_step <- step_mask with an agent axis, as (B, T, N)
    repeat critic_steps times:
        q <- critic(rows) of the taken actions, steps 0..T-1                 # (B, T, N)
        STEP(critic optimizer, critic, sum(m_step * (q - y)^2) / sum(m_step))
    pi  <- replay_policy(agent, obs[:, :T], actions[:, :T], epsilon of the batch)
    adv <- advantage(agent, rows, batch, detached pi)
    logp <- log(pi at the taken actions + 1e-10);  H <- -sum over k of pi * log(pi + 1e-10)
    m <- agent_mask
    STEP(actor optimizer, actor, -sum(m * (adv * logp + beta * H)) / max(sum(m), 1))
    updates <- updates + 1
    if updates is a multiple of C: target critic <- copy of the critic""",
    ),
}

HINTS: dict[str, tuple[str, str, str]] = {**MADDPG_HINTS, **COMA_HINTS}


def _hint_parts() -> str:
    return (f"MADDPG (notebook 22): {', '.join(MADDPG_HINTS)}; COMA (notebook 23): {', '.join(COMA_HINTS)}")


def hint_text(name: str, stage: int) -> str:
    """The text of hint ``stage`` (1, 2 or 3; see ``STAGES``) for capstone part ``name``. An unknown part or stage
    is a ValueError listing the parts and the stages there are."""
    if not isinstance(name, str) or name not in HINTS:
        raise ValueError(f"no capstone part named {name!r}; the parts are {_hint_parts()}")
    if isinstance(stage, bool) or not isinstance(stage, int) or stage not in STAGES:  # (1.0 is not a stage)
        stages = "; ".join(f"{k} = {text.split(':')[0]}" for k, text in STAGES.items())
        raise ValueError(f"stage must be 1, 2 or 3 ({stages}), got {stage!r}")
    return HINTS[name][stage - 1]


def hint(name: str, stage: int = 1) -> None:
    """Print hint ``stage`` of capstone part ``name``: 1 a nudge (the idea that matters, a common trap), 2 the plan
    (the tensors to build in order, with their shapes and the helpers to call), 3 the pseudocode. Ask for them in
    that order; ``show_solution(name)`` (the whole answer) is the last resort, after stage 3.
    An unknown part or stage is a ValueError listing the parts and the stages there are."""
    text = hint_text(name, stage)
    print(f"# hint {stage} of 3 for {name}: {STAGES[stage]}")
    print(text)
    if stage < 3:
        print(f"# still stuck after a real try? hint({name!r}, {stage + 1}): {STAGES[stage + 1].split(':')[0]}")
    else:
        print(f"# still stuck? show_solution({name!r}) prints a whole answer: the last resort")


def show_solution(name: str) -> None:
    """Print the whole answer of exercise ``name``: the last resort, after ``hint(name, 1)``, 2 and 3
    (``solutions.show_solution``). The answer key is imported here, when it is asked for, never before: a notebook
    that imports the capstone's functions does not hold every answer one ``inspect`` away."""
    from marl_edu.course import solutions

    solutions.show_solution(name)
