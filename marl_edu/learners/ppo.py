"""PPO with many agents: independent PPO (IPPO) and MAPPO, each agent's own probability ratio clipped.

Every agent i acts with COMA's shared GRU policy pi_theta(a | h_{i,t}, i). A batch of K whole episodes is played with
the current policy, whose probabilities of the actions taken are kept as pi_old (no gradient); the batch is then used
for ``epochs`` passes, each in ``minibatches`` groups of whole episodes. The actor maximises the clipped surrogate of
each agent's own ratio, the critic regresses the lambda-returns:

    rho_{i,t}  = pi_theta(a_{i,t} | h_{i,t}, i) / pi_old(a_{i,t} | h_{i,t}, i)
    L^CLIP     = mean over the steps agent i acts of  min(rho_{i,t} Adv_{i,t}, clip(rho_{i,t}, 1 - c, 1 + c) Adv_{i,t})
    delta_{i,t} = r_t + gamma (1 - d_t) V(z_{i,t+1}) - V(z_{i,t})                       (r_t the team reward)
    Adv_{i,t}  = delta_{i,t} + gamma lambda (1 - d_t) Adv_{i,t+1}                       (GAE(lambda), from V_old)
    G_{i,t}    = Adv_{i,t} + V_old(z_{i,t})                                            (the critic's target)

with c the clip range (``clip``) and an entropy bonus beta H(pi) as COMA's. The two learners differ in what the value
sees, z_{i,t}, and nothing else:

    MAPPO: the state s_t = [o_{0,t}, ..., o_{N-1,t}] (S = N*O, as central-V: Switch and Level-Based Foraging give no
           other state), one feed-forward V(s_t) for the team;
    IPPO:  agent i's own history h_{i,t}, a GRU value over [o_{i,t}, a_{i,t-1}, one_hot(i)] shared by the agents
           (the actor's input, its own weights).

A time-limit end has d = 0 and bootstraps from V of the state it was cut in (the last observation index); a real
terminal step has d = 1, and so has every padded step after it, so nothing leaks back from padding. Symbols as in
the cheat sheet.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import torch

from marl_edu.base.shapes import check_shape
from marl_edu.base.threads import on_enclosing_threads
from marl_edu.base.validate import (LIMITS, boolean, finite, learner_sizes, non_negative_number, positive_int,
                               positive_number, unit_interval, zero_one)
from marl_edu.data.rollout import check_episode_batch
from marl_edu.learners.coma import SharedActorLearner
from marl_edu.pieces.masked import masked_mean
from marl_edu.pieces.nets import MLP, RecurrentActor, gradient_step
from marl_edu.pieces.policies import categorical_entropy, categorical_log_prob, seeded_generator
from marl_edu.pieces.recurrent import replay_episodes
from marl_edu.pieces.targets import critic_rewards


def gae_advantages(rewards: torch.Tensor, values: torch.Tensor, dones: torch.Tensor, gamma: float,
                   lam: float) -> torch.Tensor:
    """Generalised advantage estimates of whole episodes, by the backward recursion

        delta_{i,t} = r_{i,t} + gamma (1 - d_t) V_{i,t+1} - V_{i,t}
        Adv_{i,t}   = delta_{i,t} + gamma lam (1 - d_t) Adv_{i,t+1},    Adv_{i,T} = 0

    Args:
        rewards: float ``(B, T, N)``: the reward each agent's row learns (the team reward in every row).
        values: float ``(B, T+1, N)``: V at every observation index, the last the state the batch ends in (a
            time-limit end bootstraps from it).
        dones: ``(B, T)``, d_t = 1 at a real terminal step and on padding (0/1).
        gamma, lam: in [0, 1]. lam = 0 gives the one-step TD error, lam = 1 the discounted return less V.

    Returns:
        Adv, float ``(B, T, N)``, detached.

    Raises:
        ValueError naming the argument: a wrong shape or dtype, T = 0, NaN or infinity in rewards or values, dones
        other than 0/1, and finite rewards and values whose advantages overflow float32 (3e38 + 0.99 * 3e38).
    """
    gamma, lam = float(unit_interval(gamma, "gamma")), float(unit_interval(lam, "lam"))
    dims = check_shape(rewards, ("B", "T", "N"), "rewards", dtype="float")
    if dims["T"] < 1:
        raise ValueError(f"rewards: expected T >= 1 steps, got shape {tuple(rewards.shape)}")
    check_shape(values, (dims["B"], dims["T"] + 1, dims["N"]), "values", dtype="float")
    check_shape(dones, (dims["B"], dims["T"]), "dones", dtype="float")
    for tensor, name in ((rewards, "rewards"), (values, "values")):
        finite(tensor, name)
    zero_one(dones, "dones")
    with torch.no_grad():
        not_done = (1.0 - dones).unsqueeze(-1)  # (B, T, 1)
        delta = rewards + gamma * not_done * values[:, 1:] - values[:, :-1]  # (B, T, N)
        advantages = torch.empty_like(delta)  # (B, T, N)
        running = torch.zeros_like(delta[:, 0])  # (B, N) Adv_{i,t+1}, zero after the last step
        for t in reversed(range(dims["T"])):
            running = delta[:, t] + gamma * lam * not_done[:, t] * running  # (B, N)
            advantages[:, t] = running
    try:  # finite rewards and values can still overflow: 3e38 + 0.99 * 3e38 is inf in float32
        finite(advantages, "the advantages of these rewards and values")
    except ValueError as error:
        raise ValueError(f"{error}: rewards or values too large for float32") from None
    return advantages


def normalised_advantages(advantage: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Advantages scaled to mean 0 and standard deviation 1 over the entries where ``mask`` is 1 (the steps agents
    act), ``(Adv - mean) / (std + 1e-8)`` with both statistics masked; the other entries are shifted and scaled alike
    and stay masked out of every loss. advantage and mask ``(B, T, N)`` -> ``(B, T, N)``. Normalising over every
    entry instead lets the padding after an episode's end and the steps after an agent is home drag the mean.

    Without a spread to scale by (the acting steps' std below ``MIN_STD``: no acting step, one, or all alike) the
    advantages are centred only, ``Adv - mean``: an all-zero mask returns them as they are (the masked mean of nothing
    is 0), one acting step is 0 there. Dividing by ``std + 1e-8`` would multiply every other entry by about 1e8, and an
    entry made infinite so becomes NaN under the mask's 0 in a loss."""
    dims = check_shape(advantage, ("B", "T", "N"), "advantage", dtype="float")
    check_shape(mask, (dims["B"], dims["T"], dims["N"]), "mask", dtype="float")
    finite(advantage, "advantage")
    zero_one(mask, "mask")
    mean = masked_mean(advantage, mask, allow_empty=True, name="advantage")  # over the acting steps
    std = masked_mean((advantage - mean) ** 2, mask, allow_empty=True, name="advantage").sqrt()
    scale = torch.where(std < MIN_STD, 1.0, std + 1e-8)  # 0-d: no spread, no scaling
    return (advantage - mean) / scale  # (B, T, N)


MIN_STD = 1e-6  # normalised_advantages: a spread of the acting steps' advantages below this is none


def clip_range(clip, name: str = "clip") -> float:
    """c, checked: a number in (0, 1), so that the ratio's range [1 - c, 1 + c] stays positive."""
    clip = positive_number(clip, name)
    if clip >= 1.0:
        raise ValueError(f"{name} must be in (0, 1): the ratio is clipped to [1 - {name}, 1 + {name}], got {clip!r}")
    return clip


def clipped_surrogate_loss(log_prob: torch.Tensor, old_log_prob: torch.Tensor, advantage: torch.Tensor,
                           mask: torch.Tensor, clip: float, density: bool = False) -> torch.Tensor:
    """PPO's actor loss, the negated clipped surrogate averaged over the steps an agent acts:

        -sum m min(rho Adv, clip(rho, 1 - c, 1 + c) Adv) / sum m,    rho = exp(log pi_theta - log pi_old)

    log_prob ``(B, T, N)`` log pi_theta(a_{i,t} | h_{i,t}, i) with its gradient, old_log_prob ``(B, T, N)`` log
    pi_old of the same actions when the batch was played (no gradient), advantage ``(B, T, N)`` (no gradient), mask
    ``(B, T, N)`` 1 where agent i acts (``agent_mask``), clip c in (0, 1). ``density``: the log-probabilities are a
    density's (a Gaussian's, which may exceed 0); False: a categorical's, at most 0. Returns a 0-d tensor.

    A ValueError names the argument: a wrong shape or dtype, NaN or infinity in any (an old_log_prob of -inf is an
    action the policy could not have played), a log-probability above 0, a mask entry other than 0 or 1."""
    clip = clip_range(clip)
    check_surrogate_inputs(log_prob, old_log_prob, advantage, mask, density)
    return _clipped_surrogate(log_prob, old_log_prob, advantage, mask, clip)


def check_log_prob(log_prob: torch.Tensor, name: str, density: bool) -> None:
    """log-probabilities of the actions taken, any shape: finite, and (unless ``density``) at most 0 (float
    rounding's 1e-6 forgiven: log(1 - eps + eps / A) may round above 0)."""
    finite(log_prob, name)
    if not boolean(density, "density") and (log_prob > 1e-6).any():
        index = tuple(int(i) for i in (log_prob > 1e-6).nonzero()[0])
        raise ValueError(f"{name} must be log-probabilities, at most 0, got {log_prob[index].item():g} at index "
                         f"{index} (a Gaussian's log-density may be positive: density=True)")


def check_surrogate_inputs(log_prob, old_log_prob, advantage, mask, density: bool) -> dict[str, int]:
    """``clipped_surrogate_loss``'s inputs checked (shapes ``(B, T, N)`` alike, float, finite, log-probabilities at
    most 0 unless ``density``, mask 0/1); returns the sizes."""
    dims = check_shape(log_prob, ("B", "T", "N"), "log_prob", dtype="float")
    for tensor, name in ((old_log_prob, "old_log_prob"), (advantage, "advantage"), (mask, "mask")):
        check_shape(tensor, (dims["B"], dims["T"], dims["N"]), name, dtype="float")
    check_log_prob(log_prob, "log_prob", density)
    check_log_prob(old_log_prob, "old_log_prob", density)
    finite(advantage, "advantage")
    zero_one(mask, "mask")
    return dims


def _clipped_surrogate(log_prob, old_log_prob, advantage, mask, clip: float) -> torch.Tensor:
    """``clipped_surrogate_loss``'s arithmetic on inputs already checked (``ppo_update`` checks the batch's once)."""
    ratio = torch.exp(log_prob - old_log_prob.detach())  # (B, T, N) rho_{i,t}
    clipped = torch.clamp(ratio, 1.0 - clip, 1.0 + clip)  # (B, T, N)
    advantage = advantage.detach()  # (B, T, N) a score for the actor, not a path into the critic
    surrogate = torch.min(ratio * advantage, clipped * advantage)  # (B, T, N) the pessimistic of the two
    return -masked_mean(surrogate, mask, allow_empty=True, name="surrogate")  # a minibatch nobody acts in: 0


# an update's actor stops once a minibatch's approximate KL passes this multiple of ``target_kl`` (Stable-Baselines3's
# factor; Spinning Up's PPO uses the same 1.5)
KL_STOP = 1.5


def approx_kl(log_prob: torch.Tensor, old_log_prob: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The approximate KL(pi_old || pi) of the actions taken: the mean over ``mask`` of (rho - 1) - log rho, with
    rho = pi(a_{i,t}) / pi_old(a_{i,t}) (an unbiased estimate from actions drawn from pi_old, never negative).

    Args:
        log_prob, old_log_prob: float ``(B, T, N)``, log pi and log pi_old of the actions taken.
        mask: float ``(B, T, N)``, 1 where agent i acts.

    Returns:
        A 0-d tensor, without a gradient; 0 when nobody acts.
    """
    dims = check_shape(log_prob, ("B", "T", "N"), "log_prob", dtype="float")
    check_shape(old_log_prob, tuple(dims.values()), "old_log_prob", dtype="float")
    check_shape(mask, tuple(dims.values()), "mask", dtype="float")
    with torch.no_grad():
        log_ratio = log_prob - old_log_prob  # (B, T, N) log rho
        return masked_mean(torch.expm1(log_ratio) - log_ratio, mask, allow_empty=True, name="approximate KL")  # 0-d


def validate_ppo_fields(config) -> None:
    """Check, in place, the thirteen fields every PPO config has (``PPOConfig``, ``ContinuousPPOConfig``): the two
    learning rates, grad_clip, clip in (0, 1), gamma and lam in [0, 1], hidden, n_envs, epochs, minibatches (at most
    n_envs: a minibatch holds whole episodes), normalise_advantages, team_reward and target_kl (>= 0); a ValueError
    names the first bad one."""
    for name in ("actor_lr", "critic_lr"):
        setattr(config, name, positive_number(getattr(config, name), name, LIMITS["learning_rate"]))
    config.grad_clip = positive_number(config.grad_clip, "grad_clip", LIMITS["grad_clip"])
    config.clip = clip_range(config.clip)
    for name in ("gamma", "lam"):
        setattr(config, name, unit_interval(getattr(config, name), name))
    for name in ("hidden", "n_envs"):
        setattr(config, name, positive_int(getattr(config, name), name, LIMITS[name]))
    config.epochs = positive_int(config.epochs, "epochs", LIMITS["critic_steps"])
    config.minibatches = positive_int(config.minibatches, "minibatches", config.n_envs)
    for name in ("normalise_advantages", "team_reward"):
        setattr(config, name, boolean(getattr(config, name), name))
    config.target_kl = non_negative_number(config.target_kl, "target_kl", LIMITS["coefficient"])


def ppo_update(learner, policy: Callable, values: Callable, rewards: torch.Tensor, dones: torch.Tensor,
               actor_mask: torch.Tensor, critic_mask: torch.Tensor, entropy_coef: float,
               density: bool = False) -> dict[str, float | int]:
    """One PPO update of a batch of B whole episodes, for any policy: the discrete learners' and the continuous ones'
    differ only in ``policy``.

    1. log pi_old of the actions taken and V_old, once, with no gradient; GAE advantages and lambda-returns from them
       (advantages normalised over ``actor_mask`` with ``normalise_advantages``).
    2. ``epochs`` passes, each over ``minibatches`` groups of whole episodes (a fresh shuffle per pass, from the
       learner's generator): one actor step on the clipped surrogate less beta H, one critic step on the squared error
       to the lambda-returns. With ``target_kl`` > 0 the actor takes no more steps in this update once a minibatch's
       ``approx_kl`` from pi_old passes ``KL_STOP`` x ``target_kl`` (checked before its step); the critic takes all.

    Args:
        learner: its ``config`` (gamma, lam, clip, epochs, minibatches, normalise_advantages, grad_clip,
            team_reward, target_kl), ``generator``, ``device``, ``actor`` and ``critic`` with their optimisers,
            ``updates``.
        policy: ``policy(idx) -> (log_prob, entropy)`` of episodes ``idx`` (an index tensor ``(b,)``, or
            ``slice(None)`` for all B) with the actor's gradient: log pi_theta(a_{i,t}) ``(b, T, N)`` of the actions
            taken, and H, per step ``(b, T, N)`` (averaged over ``actor_mask``) or one 0-d tensor for every step (a
            Gaussian whose sigma depends on no state).
        values: ``values(idx) -> (b, T+1, N)``, V_{i,t} at every observation index, with the critic's gradient.
        rewards: float ``(B, T, N)`` each agent's own reward (``critic_rewards`` makes each row's).
        dones: float ``(B, T)``, 1 at a real terminal step and on padding.
        actor_mask, critic_mask: float ``(B, T, N)``: the steps at which agent i acts (the actor's loss) and the real
            steps (the critic's), 0/1.
        entropy_coef: beta >= 0.
        density: the policy's log pi is a density's (the Gaussian's, which may exceed 0); False: a categorical's.

    Returns:
        The last minibatch's critic loss; the actor's loss and the policy's mean entropy on the last minibatch the
        actor was evaluated on (with ``target_kl``, the one that stopped it); ``actor_steps``: how many steps the
        actor took (0 if the first minibatch had already moved too far: rounding can make its KL a little over 0).

    Everything is checked once, before the epochs: the arguments, the policy's log pi_old of the whole batch (finite,
    at most 0 unless ``density``) and the advantages; the minibatches are slices of what was checked.
    """
    c = learner.config
    dims = check_shape(rewards, ("B", "T", "N"), "rewards", dtype="float")
    B, T, N = dims["B"], dims["T"], dims["N"]
    for mask, name in ((actor_mask, "actor_mask"), (critic_mask, "critic_mask")):
        check_shape(mask, (B, T, N), name, dtype="float")
        zero_one(mask, name)
    with torch.no_grad():  # 1. what the batch was played with, fixed for every epoch
        old_log_prob, _ = policy(slice(None))  # (B, T, N) log pi_old(a_{i,t})
        check_shape(old_log_prob, (B, T, N), "the policy's log pi_old", dtype="float")
        check_log_prob(old_log_prob, "the policy's log pi_old", density)
        old_values = values(slice(None))  # (B, T+1, N) V_old
        rewards = critic_rewards(rewards, c.team_reward)  # (B, T, N) the reward each row learns
        advantages = gae_advantages(rewards, old_values, dones, c.gamma, c.lam)  # (B, T, N)
        returns = advantages + old_values[:, :T]  # (B, T, N) G_{i,t}, the critic's targets
        if c.normalise_advantages:  # over the steps agents act only: padding would drag the mean
            advantages = normalised_advantages(advantages, actor_mask)  # (B, T, N)

    size = -(-B // c.minibatches)  # episodes per minibatch (the last may be smaller)
    actor_steps, actor_stopped = 0, False
    for _ in range(c.epochs):  # 2. several epochs of minibatches of whole episodes (a GRU replays each from its start)
        order = torch.randperm(B, generator=learner.generator, device=learner.device)  # (B,)
        for start in range(0, B, size):
            idx = order[start:start + size]  # (b,)
            if not actor_stopped:
                log_prob, entropy = policy(idx)  # (b, T, N), (b, T, N) or ()
                m = actor_mask[idx]  # (b, T, N)
                bonus = entropy_coef * entropy if entropy.dim() == 0 else \
                    masked_mean(entropy, m, allow_empty=True, coef=entropy_coef, name="entropy")  # beta H
                actor_loss = _clipped_surrogate(log_prob, old_log_prob[idx], advantages[idx], m, c.clip) - bonus
                if c.target_kl > 0:  # the policy has moved far enough from pi_old for this batch
                    actor_stopped = approx_kl(log_prob, old_log_prob[idx], m).item() > KL_STOP * c.target_kl
                if not actor_stopped:
                    gradient_step(learner.actor_optimizer, learner.actor, actor_loss, c.grad_clip, "actor loss",
                                  learner.updates + 1)
                    actor_steps += 1
            v = values(idx)[:, :T]  # (b, T, N) V_{i,t} with a gradient
            critic_loss = masked_mean((v - returns[idx]) ** 2, critic_mask[idx], allow_empty=True,
                                      name="squared error")
            gradient_step(learner.critic_optimizer, learner.critic, critic_loss, c.grad_clip, "critic loss",
                          learner.updates + 1)
    learner.updates += 1
    mean_entropy = entropy if entropy.dim() == 0 else masked_mean(entropy, m, allow_empty=True, name="entropy")
    return {"critic_loss": critic_loss.item(), "actor_loss": actor_loss.item(), "entropy": mean_entropy.item(),
            "actor_steps": actor_steps}


@dataclass
class PPOConfig:
    """Hyperparameters of IPPO and MAPPO on a discrete-action task. Every value is checked by ``validate``. The
    loop's schedule fields (``entropy_start``, ``anneal_fraction``, ``epsilon_start``, ``epsilon_end``) and
    ``n_envs`` mean what they mean for COMA, whose loop (``loops.train``) trains these too. The
    defaults are PPO's usual ones with COMA's batch and widths; a first sweep on Switch2-v0's tuning seeds 100-104
    (benchmarks/TUNING.md) found MAPPO solving in about 6 s of a core with each of six variants and normalised advantages no
    help, so they stay until a second round chooses."""

    actor_lr: float = field(default=1e-3, metadata={"help": "actor learning rate"})
    critic_lr: float = field(default=3e-3, metadata={"help": "critic learning rate"})
    gamma: float = field(default=0.99, metadata={"help": "discount in [0, 1]"})
    # GAE(lambda) for the advantages, and so the critic's lambda-returns
    lam: float = field(default=0.95, metadata={"help": "TD(lambda) of the targets"})
    clip: float = field(default=0.2, metadata={"help": "PPO's clip range c: the ratio is clipped to [1 - c, 1 + c]"})
    epochs: int = field(default=4, metadata={"help": "passes over each batch of episodes"})
    # the batch's K episodes split evenly
    minibatches: int = field(default=2, metadata={"help": "groups of whole episodes per pass"})
    normalise_advantages: bool = field(default=False, metadata={
        "switch": "--normalise-advantages",
        "help": "advantages scaled to mean 0 and std 1 over the steps agents act in each batch"})
    hidden: int = field(default=64, metadata={"help": "hidden units per layer"})
    # GRU actor (and IPPO's GRU value) over the history; False: feed-forward
    recurrent: bool = field(default=True, metadata={
        "switch": "--feed-forward",
        "help": "a feed-forward actor (agent network) on [o_t, id] instead of the GRU over the history"})
    # episodes per batch, in lock-step
    n_envs: int = field(default=16, metadata={
        "help": "environment copies stepped in lock-step; for the on-policy learners, episodes per update"})
    # beta, decayed linearly to zero over `anneal_fraction` of the episodes
    entropy_start: float = field(default=0.05, metadata={"option": "--entropy",
                                                         "help": "starting entropy bonus, decayed to 0"})
    anneal_fraction: float = 0.6
    epsilon_start: float = 0.0     # exploration mixed into the behaviour policy, as COMA's (off by default)
    epsilon_end: float = field(default=0.0, metadata={
        "help": "the exploration's final epsilon, reached linearly early in training"})
    grad_clip: float = 10.0
    # an update's actor stops once a minibatch's approximate KL from pi_old passes 1.5 x this (0: never, the default)
    target_kl: float = 0.0
    # every row learns the team reward; False (IPPO only): row i agent i's own
    team_reward: bool = field(default=True, metadata={
        "switch": "--per-agent-reward", "help": "critic row i learns agent i's own reward, not the team reward"})
    fused_unroll: bool = True      # replay the actor over whole episodes in one call (False: step by step)

    def validate(self) -> PPOConfig:
        validate_ppo_fields(self)  # the fields continuous PPO shares
        for name in ("epsilon_start", "epsilon_end", "anneal_fraction"):
            setattr(self, name, unit_interval(getattr(self, name), name))
        self.entropy_start = non_negative_number(self.entropy_start, "entropy_start", LIMITS["coefficient"])
        for name in ("recurrent", "fused_unroll"):
            setattr(self, name, boolean(getattr(self, name), name))
        return self


class MAPPO(SharedActorLearner):
    """MAPPO: COMA's shared actor and a centralised value V(s_t) on the state, learned by PPO's clipped objective.

    Networks for N agents: 1 actor (shared, with the agent's one-hot id in its input) and 1 critic: 2, whatever N
    is (no target network: the critic regresses lambda-returns computed once per batch from its own values).
    """

    team_reward_only = True

    def __init__(self, n_agents: int, obs_dim: int, n_actions: int, config: PPOConfig | None = None,
                 seed: int = 0, device: str | torch.device = "cpu"):
        self.config = (config or PPOConfig()).validate()
        n_agents, obs_dim, n_actions = learner_sizes(n_agents, obs_dim, n_actions)  # before anything is built
        self.n_agents, self.obs_dim, self.n_actions = n_agents, obs_dim, n_actions
        self.device = torch.device(device)
        torch.manual_seed(seed)
        self.generator = seeded_generator(seed, self.device)
        c = self.config
        if self.team_reward_only and not c.team_reward:
            raise ValueError("MAPPO learns the team reward only (team_reward=True): its one V(s) has no agent id to "
                             "tell the agents' own returns apart")
        self.last_action_dim = n_actions if c.recurrent else 0  # a GRU actor also gets its last action (history)
        self.actor = RecurrentActor(obs_dim + self.last_action_dim + n_agents, n_actions, c.hidden,
                                    c.recurrent).to(self.device)
        self.critic = self.build_critic().to(self.device)
        self.actor_optimizer = torch.optim.Adam(self.actor.parameters(), lr=c.actor_lr)
        self.critic_optimizer = torch.optim.Adam(self.critic.parameters(), lr=c.critic_lr)
        self.updates = 0
        self.entropy_coef = c.entropy_start  # beta now: the training loop decays it

    def build_critic(self) -> torch.nn.Module:
        """V(s_t): an MLP on the state, S = N*O -> 1."""
        return MLP(self.n_agents * self.obs_dim, 1, (self.config.hidden, self.config.hidden))

    def values(self, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """V(z_{i,t}) of every agent row at every index of whole episodes: obs ``(B, T+1, N, O)``, actions int
        ``(B, T+1, N)`` -> ``(B, T+1, N)``. MAPPO: V(s_t), the same in every agent's row (actions unused)."""
        B, T1, N, O = obs.shape
        v = self.critic(obs.reshape(B * T1, N * O)).reshape(B, T1, 1)  # (B, T+1, 1) V(s_t)
        return v.expand(B, T1, N)  # (B, T+1, N)

    @on_enclosing_threads
    def update(self, batch: dict) -> dict[str, float]:
        """One PPO update from a batch of whole episodes (``rollout.collect_episodes``'s, as COMA's ``update``):
        obs ``(B, T+1, N, O)``, actions int ``(B, T+1, N)``, per-agent rewards ``(B, T, N)``, dones and step_mask
        ``(B, T)``, agent_mask ``(B, T, N)`` and the behaviour policy's epsilon. ``ppo_update`` with the categorical
        policy replayed by the shared GRU: log pi(a_{i,t} | h_{i,t}, i) of the actions taken and H(pi_{i,t}) at every
        step, the actor's loss over the steps agent i acts, the critic's over the real steps."""
        check_episode_batch(batch, self.n_agents, self.obs_dim, self.n_actions)  # ValueError naming a bad entry
        epsilon = float(batch["epsilon"])
        obs, actions = batch["obs"], batch["actions"]  # (B, T+1, N, O), (B, T+1, N)
        B, T1, N, _ = obs.shape
        T = T1 - 1

        def policy(idx) -> tuple[torch.Tensor, torch.Tensor]:
            """log pi and H of episodes ``idx`` at every step, (b, T, N) each, replayed from their start."""
            pi = self.replay_policy(obs[idx, :T], actions[idx, :T], epsilon)  # (b, T, N, A)
            return categorical_log_prob(pi, actions[idx, :T]), categorical_entropy(pi)  # (b, T, N), (b, T, N)

        step_mask = batch["step_mask"].unsqueeze(-1).expand(B, T, N)  # (B, T, N) real steps, every agent's row
        return ppo_update(self, policy, lambda idx: self.values(obs[idx], actions[idx]), batch["rewards"],
                          batch["dones"], batch["agent_mask"], step_mask, self.entropy_coef)

    def state_dict(self) -> dict:
        return {"actor": self.actor.state_dict(), "critic": self.critic.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        for key in ("actor", "critic"):
            getattr(self, key).load_state_dict(state[key])


class IPPO(MAPPO):
    """Independent PPO: MAPPO with each agent's value on its own history, V(h_{i,t}): a GRU over
    [o_{i,t}, a_{i,t-1}, one_hot(i)] shared by the agents (the actor's input, its own weights). Networks: 2."""

    team_reward_only = False  # its rows carry the agent's id: each may learn its own reward or the team's

    def build_critic(self) -> torch.nn.Module:
        """V(h_{i,t}): the actor's architecture with one output."""
        c = self.config
        return RecurrentActor(self.obs_dim + self.last_action_dim + self.n_agents, 1, c.hidden, c.recurrent)

    def values(self, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """V(h_{i,t}) of every agent at every index, replayed from each episode's start: obs ``(B, T+1, N, O)``,
        actions int ``(B, T+1, N)`` (step t sees a_{i,t-1}) -> ``(B, T+1, N)``. One fused GRU unroll."""
        v = replay_episodes(self.critic, obs, actions, self.n_actions, bool(self.last_action_dim))  # (B, T+1, N, 1)
        return v.squeeze(-1)  # (B, T+1, N)
