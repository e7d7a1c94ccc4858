"""Write results/README.md, the page of the committed runs' results, from the files in results/.

    .venv/bin/python tools/results_page.py           # write the page
    .venv/bin/python tools/results_page.py --check   # change nothing; exit 1 (naming the page) if it is out of date

One function per section of the page. Each reads its files under results/, builds its tables, and names the files it
read and the command that reproduces them. Where a benchmark prints a table of its own (benchmarks/compare.py,
particle.py, foraging.py, competition.py), the page uses that benchmark's function on the committed files, so the
page shows the rows the benchmark printed; the per-seed tables and the tables of benchmarks/learning.py's runs are
built here. No figure is typed: figures that no file in results/ holds (the tuning sweeps, training speed, notebook
run times) are not on the page, only the commands that measure them. tests/test_results_page.py fails when the
committed page differs from what this script writes.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import pathlib
import statistics
import sys
import textwrap

# solved: greedy within the margin of the optimum
from marl_edu.runs.seed import SOLVED_MARGIN, known_optimum, solve_line, solved_threshold

ROOT = pathlib.Path(__file__).resolve().parent.parent
RESULTS = ROOT / "results"
PAGE = RESULTS / "README.md"
PYTHON = ".venv/bin/python"


# -- small helpers -----------------------------------------------------------------------------------------------------

def load(path: pathlib.Path) -> dict:
    return json.loads(path.read_text())


def rel(path: pathlib.Path) -> str:
    """A path as the page writes it: from the repository's root."""
    return path.relative_to(ROOT).as_posix()


def number(value: float | None, digits: int = 1) -> str:
    """``value`` with ``digits`` decimals ("-" for None), never "-0.0"."""
    if value is None:
        return "-"
    text = f"{value:.{digits}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def per_seed(values, digits: int = 1) -> str:
    return ", ".join(number(value, digits) for value in values)


def gaps_per_seed(runs: list[dict], noise_free: str, digits: int) -> str:
    """Each seed's sampled minus noise-free (greedy) figure, on the same episodes, with its standard error."""
    return ", ".join(f"{run['sampled'] - run[noise_free]:+.{digits}f} ({run['sampled_gap_se']:.{digits}f})"
                     for run in runs)


def span(values, digits: int = 1, unit: str = "") -> str:
    """"low to high" over seeds (one value when they agree)."""
    low, high = number(min(values), digits), number(max(values), digits)
    return f"{low}{unit}" if low == high else f"{low} to {high}{unit}"


def paragraph(*parts: str) -> list[str]:
    """Prose: the parts joined and wrapped to the page's width, then a blank line."""
    return textwrap.wrap(" ".join(parts), 116, break_long_words=False, break_on_hyphens=False) + [""]


def bullet(*parts: str) -> list[str]:
    """One item of a Markdown list, wrapped to the page's width."""
    return textwrap.wrap(" ".join(parts), 116, initial_indent="- ", subsequent_indent="  ", break_long_words=False,
                         break_on_hyphens=False)


def markdown_table(header: list[str], rows: list[list[str]]) -> list[str]:
    return (["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
            + ["| " + " | ".join(row) + " |" for row in rows])


def seeds_text(seeds: list[int]) -> str:
    if seeds == list(range(seeds[0], seeds[-1] + 1)) and len(seeds) > 2:
        return f"seeds {seeds[0]}-{seeds[-1]}"
    return "seeds " + ", ".join(str(seed) for seed in seeds)


def files_read(paths: list[pathlib.Path]) -> str:
    """One line naming the files a section read: each folder once, with the names of the files it read there."""
    folders: dict[str, list[str]] = {}
    for path in paths:
        folders.setdefault(rel(path.parent), []).append(path.name)
    parts = [f"`{folder}/` ({', '.join(names)})" for folder, names in folders.items()]
    return f"Read from {plural(len(paths), 'file')}: " + "; ".join(parts) + "."


def compact_files_read(pattern: str, count: int, summaries: list[pathlib.Path]) -> str:
    """The files line of a family of per-seed files (too many to list one by one) and its summaries."""
    listed = ", ".join(f"`{rel(path)}`" for path in summaries)
    if not summaries:
        return f"Read from {count} per-seed files `{pattern}`."
    return f"Read from {count + len(summaries)} files: {count} per-seed files `{pattern}`, and {listed}."


def plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def command(text: str) -> list[str]:
    return ["```bash", f"{PYTHON} {text}", "```"]


_modules: dict[str, object] = {}


def benchmark(name: str):
    """A script of benchmarks/ imported as a module, for its own table functions (with benchmarks/ on the path, as
    when it runs)."""
    if name not in _modules:
        if str(ROOT / "benchmarks") not in sys.path:
            sys.path.insert(0, str(ROOT / "benchmarks"))
        spec = importlib.util.spec_from_file_location(f"results_page_{name}", ROOT / "benchmarks" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _modules[name] = module
    return _modules[name]


def first_solve(evaluations: list, optimum: float) -> int | None:
    """The episode of the first periodic greedy evaluation at the solve line, None if none reached it."""
    return next((episode for episode, greedy in evaluations if greedy >= solve_line(optimum)), None)


# -- the sections ------------------------------------------------------------------------------------------------------

def words() -> list[str]:
    """The words every table uses (greedy, sampled, solved, final, wall-clock), as a Markdown list."""
    switch2 = load(RESULTS / "compare" / "Switch2-v0" / "summary.json")["table"][0]["optimal"]
    return [*bullet("**greedy**: every agent takes its most likely action. Switch is deterministic, so one greedy",
                    "episode is that policy's exact return; on tasks with randomness (PredatorPrey, Level-Based",
                    "Foraging) a greedy figure is a mean over episodes."),
            *bullet("**sampled**: actions drawn from the trained, stochastic policy (IQL, VDN and QMIX:",
                    "epsilon-greedy; runs that record `sampled_as` say which, with the MARL textbook's epsilon",
                    "0.05, and keep a sampled curve beside the greedy one); a mean team return over episodes. With",
                    "forces (the particle envs) greedy is the **noise-free** policy, and sampled adds the exploration",
                    "noise MADDPG's kin end training with (sigma `noise_end`) or draws from PPO's Gaussian."),
            *bullet(f"**solved**: a greedy team return within {SOLVED_MARGIN} of the task's exact optimum (on",
                    f"Switch2: {number(solved_threshold(switch2))}, optimum {number(switch2)}). **First solve**: the",
                    "first periodic greedy evaluation during training that was solved."),
            *bullet("**final**: the policy after the last update. Seeds are training seeds."),
            *bullet("**wall-clock** and **env steps/s** are as the runs measured them, on machines often shared with",
                    "other work: compare them roughly, within a table."),
            ""]


def intro() -> list[str]:
    sections = [("MADDPG on Switch2", "maddpg-on-switch2"), ("COMA on Switch2-v0", "coma-on-switch2-v0"),
                ("Switch2: the learners side by side", "switch2-the-learners-side-by-side"),
                ("Switch2: 20 fresh seeds", "switch2-the-taught-defaults-on-20-fresh-seeds"),
                ("Three and four agents", "three-and-four-agents-switch3-and-switch4"),
                ("PredatorPrey7x7", "predatorprey7x7"), ("Level-Based Foraging", "level-based-foraging"),
                *([("Level-Based Foraging, 2M env steps", "level-based-foraging-2m-env-steps")]
                  if foraging_runs(RESULTS / "foraging_2m") else []),  # (once a run of it is committed)
                ("Cooperative navigation", "cooperative-navigation"), ("Physical deception", "physical-deception"),
                ("Measured, not committed", "measured-not-committed")]
    return ["# Results of the committed runs", "",
            "<!-- Generated by tools/results_page.py from the files in results/: do not edit this page by hand. -->",
            *paragraph("*This page is generated from the files in `results/`; do not edit it. After a benchmark",
                       "writes new files, regenerate it with `.venv/bin/python tools/results_page.py` (`--check`",
                       "says whether it is up to date; `tests/test_results_page.py` fails when the page and its files",
                       "disagree).*"),
            *paragraph("Each section gives its tables, the files they were computed from and the command that",
                       "reproduces them. Words used throughout:"),
            *words(),
            "Sections:", *[f"[{title}](#{anchor}) ·" for title, anchor in sections[:-1]],
            f"[{sections[-1][0]}](#{sections[-1][1]})", ""]


def learning_runs(folders: list[pathlib.Path]) -> list[str]:
    """The table of benchmarks/learning.py's runs (one folder per variant: summary.json with every seed's row),
    its files line and its commands."""
    header = ["run", "env", "options", "episodes", "final greedy, per seed", "median", "solved at the end",
              "first solve (episodes), per seed", "sampled (range over seeds)", "wall-clock per run",
              "env steps/s (median)"]
    rows, commands, paths = [], [], []
    for folder in folders:
        summary = load(folder / "summary.json")
        paths.append(folder / "summary.json")
        seeds, optimum = summary["seeds"], summary["optimal"]
        words = summary["command"].split()[1:]
        options = [word for word, previous in zip(words, [None, *words])  # what is not the algo, env or folder
                   if word not in ("--algo", "--env", "--out") and previous not in ("--algo", "--env", "--out")]
        env_id = summary["summary"].split(" env=")[1].split()[0]
        greedy = [seed["greedy"] for seed in seeds]
        solved = sum(value >= solve_line(optimum) for value in greedy)
        firsts = [first_solve(seed["evaluations"], optimum) for seed in seeds]
        rows.append([f"`{rel(folder)}`", env_id, f"`{' '.join(options)}`" if options else "the defaults",
                     number(seeds[0]["episodes"], 0), per_seed(greedy), number(statistics.median(greedy)),
                     f"{solved}/{len(seeds)}", ", ".join("-" if first is None else str(first) for first in firsts),
                     span([seed["sampled"] for seed in seeds], 2),
                     span([seed["wall_s"] for seed in seeds], 0, " s"),
                     number(statistics.median(seed["steps_per_s"] for seed in seeds), 0)])
        commands.append(summary["command"])
    first = load(folders[0] / "summary.json")
    lines = paragraph(f"Final greedy team return per seed, {seeds_text([seed['seed'] for seed in first['seeds']])};",
                      f"exact optimum {number(first['optimal'])}.")
    lines += markdown_table(header, rows) + [""]
    lines += paragraph(files_read(paths), "Each folder also keeps its first seed's `policy.pt` and `run.json` (that",
                       "seed's training curve).")
    lines += paragraph("Reproduce (one run per seed, one after the other; each command prints a row per seed and a",
                       "`SUMMARY` line):")
    lines += ["```bash"]
    lines += [f"{PYTHON} {text}" for text in commands] + ["```", ""]
    return lines


def maddpg_switch2() -> list[str]:
    folders = [RESULTS / "maddpg" / name for name in ("Switch2-v2", "Switch2-v2-gumbel", "Switch2-v0")]
    return ["## MADDPG on Switch2", "",
            *paragraph("MADDPG with its default actor update (the exact expectation over each agent's own actions),",
                       "the same with a straight-through Gumbel-softmax sample, and the default on Switch2-v0, whose",
                       "observations hold no clock."),
            *learning_runs(folders)]


def coma_switch2() -> list[str]:
    folders = [RESULTS / "coma" / name for name in ("Switch2-v0", "Switch2-v0-feed-forward",
                                                     "Switch2-v0-per-agent-reward")]
    return ["## COMA on Switch2-v0", "",
            *paragraph("COMA with its defaults (GRU actors over each agent's history, the team reward), with",
                       "feed-forward actors on the agent's own observation, and with each critic row learning its",
                       "agent's own reward."),
            *learning_runs(folders)]


def compare_command(env_id: str, summary: dict) -> str:
    """The benchmarks/compare.py command that trains exactly the runs of ``summary``'s table: its methods, seeds and
    each method's budget (the most common one for every method, METHOD=N for the others)."""
    methods = [row["method"] for row in summary["table"]]
    budgets = [row["episodes"] for row in summary["table"]]
    common = max(sorted(set(budgets)), key=budgets.count)
    others = [f"{method}={budget}" for method, budget in zip(methods, budgets) if budget != common]
    return (f"benchmarks/compare.py --envs {env_id} --methods {' '.join(methods)} "
            f"--seeds {' '.join(str(seed) for seed in summary['seeds'])} --episodes {' '.join([str(common), *others])}")


def compare_env(env_id: str, image: str | None = None) -> list[str]:
    """One task of benchmarks/compare.py: its table as the benchmark prints it (computed again from the per-seed
    files), every seed's final return and first solve, the files read and the command."""
    compare = benchmark("compare")
    folder = RESULTS / "compare" / env_id
    summary = load(folder / "summary.json")
    seeds = summary["seeds"]
    optimum = summary["table"][0]["optimal"]
    lines = [f"### {env_id}", ""]
    figure = ROOT / "media" / f"compare_{env_id.lower().replace('-', '_')}.png"
    if image and figure.exists():  # drawn by compare.py from the same files
        lines += [f"![{image}](../{rel(figure)})", ""]
    rows, count = [], 0
    paired = all("sampled_gap_se" in load(folder / entry["method"] / f"seed{seed}.json")
                 for entry in summary["table"] for seed in seeds)  # (records since the sampled figures play the greedy
    # episodes)
    gap_header = ["sampled minus greedy, same episodes (se), per seed"] if paired else []
    seed_header = (["method", "episodes", "final greedy, per seed", "final sampled, per seed", *gap_header,
                    "first solve (episodes), per seed", "wall-clock per run"] if optimum is not None else
                   ["method", "episodes", "final greedy, per seed", "final sampled, per seed", *gap_header,
                    "wall-clock per run"])
    seed_rows = []
    for entry in summary["table"]:
        method = entry["method"]
        runs = [load(folder / method / f"seed{seed}.json") for seed in seeds]
        count += len(runs)
        rows.append(compare.format_row(compare.table_row(env_id, method, runs, entry["optimal"], entry["episodes"])))
        sampled = per_seed([run["sampled"] for run in runs])  # the final policy sampled (100 episodes)
        gaps = [gaps_per_seed(runs, "greedy", 1)] if paired else []
        firsts = ", ".join("-" if run["episodes_to_solve"] is None else str(run["episodes_to_solve"]) for run in runs)
        middle = [sampled, *gaps, *([firsts] if optimum is not None else [])]
        seed_rows.append([method, str(entry["episodes"]), per_seed([run["greedy"] for run in runs]), *middle,
                          span([run["wall_s"] for run in runs], 0, " s")])
    lines += [compare.table_header(optimum), *rows, ""]
    lines += [f"Per seed ({seeds_text(seeds)}):", ""] + markdown_table(seed_header, seed_rows) + [""]
    lines += paragraph(compact_files_read(f"results/compare/{env_id}/<method>/seed<S>.json", count,
                                          [folder / "summary.json"]),
                       "Each method's folder also keeps its first seed's `policy.pt` and `greedy.gif`.")
    lines += ["Reproduce (two runs at a time; `--reuse` keeps the runs already on disk):", "",
              *command(compare_command(env_id, summary)), ""]
    return lines


def switch2_comparison() -> list[str]:
    return ["## Switch2: the learners side by side", "",
            *paragraph("Every discrete learner on Switch2-v0 (no clock in the observations) and Switch2-v2 (with it),",
                       "the same seeds, each family on its own budget. `-gru`: actors (or agent networks) with a GRU",
                       "over the agent's history; `-ff`: feed-forward actors on the current observation; `-mlp`: the",
                       "off-policy learners' feed-forward actors. In the first table, \"to solve\" is the median, over",
                       "the seeds that solved at some point, of the first solve in episodes and in wall-clock; env",
                       "steps/s is the median over seeds."),
            *compare_env("Switch2-v0", "greedy team return during training on Switch2-v0, mean and range over seeds, "
                                       "per method"),
            *compare_env("Switch2-v2", "greedy team return during training on Switch2-v2, mean and range over seeds, "
                                       "per method")]


def fresh_switch2() -> list[str]:
    """benchmarks/fresh.py's runs: the taught defaults on 20 fresh seeds against issue 48's two bars (computed again
    from the per-seed files, as the benchmark prints them), every seed's first solve and final return, the files read
    and the commands."""
    module = benchmark("fresh")
    envs = list(dict.fromkeys(module.TAUGHT.values()))
    paths = [RESULTS / "fresh" / env_id / "summary.json" for env_id in envs
             if (RESULTS / "fresh" / env_id / "summary.json").exists()]
    lines = ["## Switch2: the taught defaults on 20 fresh seeds", "",
             *paragraph("Does each default the course teaches solve Switch2 fast, and stay solved? COMA, MAPPO, IPPO,",
                        "VDN and QMIX on Switch2-v0 and MADDPG on Switch2-v2, each with its learner table's budget",
                        "and defaults, on seeds 1000-1019, which no tuning sweep and no other table used (the",
                        "one-change baselines are not among them). A run's wall-clock is read in yardsticks: the",
                        f"seconds raw ma-gym takes for {module.YARDSTICK_STEPS:,} random steps of Switch2-v0, timed",
                        "in the same process just before and just after the run (their mean), so that runs under",
                        "different loads compare, roughly: the table gives the yardstick and the one-minute load",
                        "average beside them, and the median episodes to the first solve, which no load moves.",
                        "The speed bar is judged only from a quiet machine (a load average of at most",
                        f"{module.QUIET_LOAD} all the while, and the median over the runs of the ratio between each",
                        f"run's two yardsticks at most {module.YARDSTICKS_AGREE}): a busy machine's yardstick slows",
                        "less than training does. So a seed that solved is trained again on a quiet machine, the",
                        "same run only up to its first solve (`--retime`, checked to replay the record's",
                        "evaluations); a row in which every seed that solved was re-timed says \"timed again to the",
                        "first solve\" and takes its speed from the re-timings.",
                        "\"To the first solve\" is the median over the seeds of the wall-clock to the first greedy",
                        f"evaluation at {number(solved_threshold(known_optimum('Switch2-v0')))} or more, a seed that",
                        "never got there counting as never; \"late\" is the mean over seeds of the share of greedy",
                        "evaluations in the last third of the budget that were solved. Issue 48's bars: a median of",
                        f"{module.SPEED_BAR:.0f} yardsticks at most, and ended solved on {module.END_BAR} seeds of 20",
                        "at least.")]
    rows, seed_rows, verdicts, count, retimings, done = [], [], [], 0, 0, []
    for path in paths:
        summary = load(path)
        for entry in summary["table"]:
            # each seed's checked record, with its re-timing on a quiet machine when --retime wrote one
            runs = [module.record(RESULTS / "fresh", entry["env"], entry["method"], seed, "the results page")
                    for seed in entry["seeds_run"]]
            count += len(runs)
            retimings += sum("retimed" in run for run in runs)
            row = module.table_row(entry["env"], entry["method"], runs, entry["optimal"], entry["episodes"])
            rows.append(module.format_row(row))
            verdicts += bullet(row["verdict"] + ".")
            done.append(entry["method"])
            _, times = module.first_solve_times(runs)  # (as the row's speed reads them)
            seed_rows.append([entry["method"], entry["env"], str(entry["episodes"]), seeds_text(entry["seeds_run"]),
                              ", ".join("-" if t is None else number(t) for t in times),
                              per_seed([run["greedy"] for run in runs])])
    if not paths:
        return lines + paragraph("No run of it is committed yet:", f"`{PYTHON} benchmarks/fresh.py` makes them.")
    lines += [module.table_header(), *rows, "", *verdicts, ""]
    missed = [f"{method} seed {seed['seed']}: final {number(seed['final'])} (sampled {number(seed['sampled'], 2)}), "
              f"best evaluation {number(seed['best'])}, " + ("never solved" if seed["first_solve"] is None else
                                                             f"solved from episode {seed['first_solve']}, last at "
                                                             f"{seed['last_solve']}")
              for path in paths for method, row in ((t["method"], t) for t in load(path)["table"])
              for seed in row["not_solved_at_end"]]
    if missed:
        lines += paragraph("The seeds that did not end solved, their final greedy return (and the sampled policy's,",
                           "the mean of 100 episodes), their best greedy evaluation and when they were solved: a",
                           "final near -0.6 with a sampled return as low is the policy itself sending one agent home",
                           "and not the other (not only its argmax); a final between 0 and 8.0 has both agents home by",
                           "a longer path.")
        lines += [line for text in missed for line in bullet(text)] + [""]
        lines += paragraph("What was measured and tried against these misses, on tuning seeds and then on these",
                           "twenty, is in `benchmarks/TUNING.md`: \"COMA's misses on Switch2-v0, and an entropy",
                           "floor\", \"MAPPO with a KL target on an update\", \"Why QMIX misses on Switch2-v0, and a",
                           "longer exploration\" and, for speed, the \"Speed\" bullets of its VDN and MADDPG sections",
                           "(nothing was tried for the speed of COMA, MAPPO, IPPO or QMIX). Notebook 15, section 4,",
                           "reads these results.")
    missing = [method for method in module.TAUGHT if method not in done]
    if missing:
        lines += paragraph("Not measured yet:", ", ".join(missing) + ".")
    lines += ["Per seed (first solve in yardsticks, \"-\" never):", "",
              *markdown_table(["method", "env", "episodes", "seeds", "first solve (yardsticks), per seed",
                               "final greedy, per seed"], seed_rows), "",
              *paragraph(compact_files_read("results/fresh/<env>/<method>/seed<S>.json", count, paths),
                         f"Beside them, {retimings} re-timings `results/fresh/<env>/<method>/seed<S>.retime.json`.",
                         "Each method's folder also keeps its first seed's `policy.pt` and `greedy.gif`."),
              "Reproduce (two runs at a time; `--reuse` keeps the seeds already on disk), then time the seeds that",
              "solved again on a quiet machine (`--jobs 1`, one at a time, as COMA's, MAPPO's and QMIX's were; the",
              "others' were two at a time):", "",
              "```bash", *[f"{PYTHON} {load(path)['command']}" for path in paths],
              f"{PYTHON} benchmarks/fresh.py --retime --jobs 1", "```", ""]
    return lines


def more_agents() -> list[str]:
    """Switch3-v0, Switch4-v0 and Switch4-v2, with the reference lines of every Switch task compared."""
    rows, paths = [], []
    for env_id in ("Switch2-v0", "Switch3-v0", "Switch4-v0"):
        path = RESULTS / "compare" / env_id / "summary.json"
        summary = load(path)
        paths.append(path)
        optimum = summary["table"][0]["optimal"]
        rows.append([env_id, env_id[len("Switch")], number(optimum), number(solved_threshold(optimum)),
                     number(summary["random"], 2)])
    return ["## Three and four agents: Switch3 and Switch4", "",
            *paragraph("Switch2's corridor shared by three and four agents, each learner with its Switch2 defaults and",
                       "a larger budget; Switch4-v2 holds the clock in the observations, as Switch2-v2 does. The",
                       "reference lines (the random line: the mean team return of uniformly random actions over",
                       f"{benchmark('compare').RANDOM_EPISODES:,} episodes, as `benchmarks/compare.py` computes it):"),
            *markdown_table(["task", "agents", "exact optimum", "solved at", "uniformly random actions"], rows), "",
            *paragraph(files_read(paths)),
            *compare_env("Switch3-v0", "greedy team return during training on Switch3-v0, mean and range over seeds"),
            *compare_env("Switch4-v0", "greedy team return during training on Switch4-v0, mean and range over seeds"),
            *keep_bar(),
            *compare_env("Switch4-v2")]


def keep_bar() -> list[str]:
    """Issue 48's bar for QMIX and MAPPO with three and four agents (benchmarks/compare.py's ``KEEP_BAR``, kept in
    those tasks' summaries), each row's verdict from its summary."""
    bar = load(RESULTS / "compare" / "Switch3-v0" / "summary.json")["bar"]
    summaries = {env_id: load(RESULTS / "compare" / env_id / "summary.json") for env_id in bar["tasks"]}
    for env_id, summary in summaries.items():
        if summary.get("bar") != bar:
            raise ValueError(f"results/compare/{env_id}/summary.json holds another bar than Switch3-v0's: "
                             f"{summary.get('bar')} against {bar}; run its table's command with --reuse")
    lines = [*paragraph(f"Issue 48's bar: {' and '.join(bar['methods'])} end solved on at least {bar['ended_solved']} "
                        f"of {bar['of']} seeds on {' and '.join(bar['tasks'])}. From the tables above:")]
    for env_id in bar["tasks"]:
        rows = {row["method"]: row for row in summaries[env_id]["table"]}
        for method in bar["methods"]:
            row = rows[method]
            short = bar["ended_solved"] - row["final_solved"]
            verdict = "meets it" if short <= 0 else f"misses it by {plural(short, 'seed')}"
            lines += bullet(f"{method} on {env_id}: ended solved {row['final_solved']}/{row['seeds']}, solved at",
                            f"some point {row['ever_solved']}/{row['seeds']}: {verdict}")
    return [*lines, "", *paragraph("What was measured and tried for each miss, on tuning seeds and on these runs trained",
                                   "again with a diagnosis, is in `benchmarks/TUNING.md`: \"MAPPO keeping what it",
                                   "learned on Switch3 and Switch4\", \"MAPPO with a KL target on an update\", \"Why",
                                   "MAPPO misses on Switch3: a near path kept, or a solve lost\", \"The smaller replay on",
                                   "IQL and on QMIX, and why QMIX loses Switch3\", \"QMIX's learning rate and replay",
                                   "across the Switch sizes\" and \"Why QMIX misses on Switch4: three different",
                                   "misses\".")]


def predator_prey() -> list[str]:
    summary = load(RESULTS / "compare" / "PredatorPrey7x7-v0" / "summary.json")
    return ["## PredatorPrey7x7", "",
            *paragraph("Four predators hunt two prey on a 7 x 7 grid; the prey move at random, so a greedy figure is a",
                       "mean of episodes, and the table gives the sampled returns where the Switch tables give solved",
                       "counts: the optimum is not known, so nothing is called solved. Uniformly random actions:",
                       f"{number(summary['random'], 2)} (mean of {benchmark('compare').RANDOM_EPISODES:,} episodes, in",
                       "`summary.json`)."),
            *compare_env("PredatorPrey7x7-v0", "greedy team return during training on PredatorPrey7x7-v0, mean and "
                                               "range over seeds")]


def foraging_runs(folder: pathlib.Path) -> list[dict]:
    """Every run record of a foraging.py grid in ``folder`` (FOLDER/METHOD/seed<S>.json) without its curves, as its
    summary lists them: by the benchmark's methods, then by seed."""
    module = benchmark("foraging")
    return [{key: value for key, value in load(path).items() if key not in module.CURVES}
            for method in module.METHODS
            for path in sorted((folder / method).glob("seed*.json"), key=lambda path: int(path.stem[4:]))]


def foraging() -> list[str]:
    module = benchmark("foraging")
    summary = load(RESULTS / "foraging" / "summary.json")
    runs = foraging_runs(RESULTS / "foraging")
    seeds = sorted({run["seed"] for run in runs})
    paired = all("sampled_gap_se" in run for run in runs)  # (runs since the sampled figures play the same episodes)
    seed_rows = []
    for method in module.METHODS:
        mine = [run for run in runs if run["method"] == method]
        if mine:
            sampled = [per_seed([run["sampled"] for run in mine], 2), gaps_per_seed(mine, "final", 3)] if paired else []
            seed_rows.append([method, per_seed([run["final"] for run in mine], 2), *sampled,
                              ", ".join("-" if run["steps_to_target"] is None
                                        else f"{run['steps_to_target'] / 1e3:.0f}k" for run in mine),
                              span([run["wall_s"] for run in mine], 0, " s")])
    target = number(summary["target"])
    source = load(module.TEXTBOOK_FILE)["source"]
    published = {method: run["algorithm"].upper() for method, run in load(module.TEXTBOOK_FILE)["runs"].items()}
    lines = ["## Level-Based Foraging", "",
             *paragraph(f"`{summary['env']}`: two agents, three food items, the team reward. Every learner with its",
                        f"Switch defaults, {seeds_text(seeds)}, beside the MARL textbook's published runs. A seed has",
                        f"reached {target} when a periodic greedy mean of episodes did; \"final\" is the mean of",
                        f"{module.FINAL_EPISODES} greedy episodes after the last update; speed is each run's env steps",
                        "per second over raw lbforaging's, timed beside it. The textbook's columns are computed (by",
                        "`benchmarks/foraging.py`'s `textbook_figures`) from its runs' evaluations as ours are: the",
                        f"env steps of the first evaluation at {target} or above, and the last evaluation."),
             *module.table(runs), ""]
    textbook_runs = module.textbook_runs()
    lines += paragraph("**The textbook's runs:**", ", ".join(
        f"{published[method]} (our {method})" for method in textbook_runs) + ",",
        f"{' and '.join(sorted({str(len(seeds)) for seeds in textbook_runs.values()}))} seeds each, from",
        f"{source['repository']} at commit `{source['commit']}`, files `{source['paths'].split(' for ')[0]}`:",
        "their columns `environment_steps` and `mean_episode_returns`",
        f"({source['columns']['mean_episode_returns']}), kept as published in `{rel(module.TEXTBOOK_FILE)}` by",
        f"`tools/textbook_curves.py`. They are evaluated {source['evaluation'].split(' (')[0]}, where ours are",
        "greedy.")
    lines += [*paragraph("Beside the textbook, where our runs end (`beside_textbook`; issue 48's bar: the target on",
                         "every seed by half the env steps of the textbook's earliest first target, and a final mean",
                         "above the textbook's runs' where ours end):"),
              *[line for text in summary["beside_textbook"] for line in bullet(text)], ""]
    curves = RESULTS / "foraging" / "curves.png"
    if curves.exists():  # drawn by foraging.py from the same files
        lines += [f"![per learner on {summary['env']} against env steps: our runs' greedy mean and range over seeds "
                  "(solid), the textbook's published runs' mean and range (dashed, its source named above), our "
                  "budget a vertical line](foraging/curves.png)", "",
                  *command("benchmarks/foraging.py --redraw"), ""]
    lines += [f"Per seed ({seeds_text(seeds)}):", "",
              *markdown_table(["method", f"final mean ({module.FINAL_EPISODES} episodes), per seed",
                               *(["final sampled, per seed", "sampled minus greedy, same episodes (se), per seed"]
                                 if paired else []),
                               f"env steps to {target}, per seed", "wall-clock per run"], seed_rows), "",
              *paragraph(compact_files_read("results/foraging/<method>/seed<S>.json", len(runs),
                                            [RESULTS / "foraging" / "summary.json"]),
                         "Each method's folder also keeps its first seed's `policy.pt` and `greedy.gif`."),
              "Reproduce (two runs at a time; `--reuse` keeps the runs already on disk):", "",
              *command(summary["command"]), ""]
    food_path = RESULTS / "foraging" / "food.json"
    if food_path.exists():  # which food each kept policy loads (benchmarks/foraging_food.py)
        food = load(food_path)
        share = lambda loaded, there: f"{loaded} of {there} ({loaded / max(there, 1):.0%})"  # noqa: E731
        rows = [[method, str(row["policy_seed"]), share(*row["alone"]), share(*row["together"]),
                 number(row["team_return"], 2)]
                for method in dict.fromkeys(run["method"] for run in summary["runs"])  # (the table's order)
                if (row := food["methods"].get(method))]
        lines += [*paragraph("Which food each kept policy loads, over its final evaluation's",
                             f"{food['episodes']} greedy episodes (env seeded {food['env_seed']}): an item no higher",
                             "than the stronger agent's level can be loaded by that agent alone, a higher one only by",
                             f"both on the same step; read from `{rel(food_path)}`:"),
                  *markdown_table(["method", "seed", "alone: loaded", "together: loaded", "team return"], rows), "",
                  *command("benchmarks/foraging_food.py --out results/foraging"), ""]
    return lines


def foraging_2m() -> list[str]:
    """Issue 48's grid of 2M env steps per run (benchmarks/foraging.py's docstring gives its command): the table beside
    the textbook's, greedy and sampled on the same episodes, and every run."""
    from marl_edu.learners.table import config_class, recorded_config
    from marl_edu.runs.seed import gap_rounding, sampled_gaps

    module = benchmark("foraging")
    folder = RESULTS / "foraging_2m"
    summary = load(folder / "summary.json")
    runs = foraging_runs(folder)
    methods = list(dict.fromkeys(run["method"] for run in runs))
    changed = []
    for method in methods:  # each method's config as its records hold it, against its learner's defaults
        config = recorded_config(method, next(run for run in runs if run["method"] == method)["config"])
        defaults = dataclasses.asdict(config_class(method)())
        differs = [f"`{key}={value!r}`" for key, value in config.items() if defaults.get(key) != value]
        changed.append(f"{method} {', '.join(differs)}" if differs else f"{method} its defaults")
    budget = runs[0]["budget"]["env_steps"]
    target = number(module.TARGET)
    seeds = sorted({run["seed"] for run in runs})
    lines = ["## Level-Based Foraging, 2M env steps", "",
             *paragraph(f"Issue 48's grid on `{module.ENV_ID}`: the value-based learners and PPO with a budget of",
                        f"{budget:,} env steps per run, {seeds_text(seeds)}: {plural(len(runs), 'run')}.",
                        "Each method's config beside its learner's defaults, read from its records:",
                        "; ".join(changed) + ".",
                        "IQL's and VDN's learning rate was chosen on this task's tuning seeds (`benchmarks/TUNING.md`,",
                        "\"The learning rate of IQL, VDN and QMIX on Level-Based Foraging\"); `epsilon_fraction` ends",
                        "the exploration at 300,000 env steps, as the 1M runs' did. The table is the 1M table's, the",
                        "textbook's columns as there."),
             *module.table(runs), "",
             *paragraph(f"Beside the textbook (`beside_textbook`): issue 48's bar is {target} on every seed by half",
                        f"the env steps of the textbook's earliest first {target}, and a final mean above the",
                        "textbook's runs' where ours end (the difference each line ends with):"),
             *[line for text in summary["beside_textbook"] for line in bullet(text)], "",
             f"![per learner on {module.ENV_ID} against env steps, 2M per run: our runs' greedy mean and range "
             "(solid), the textbook's published runs (dashed)](foraging_2m/curves.png)", ""]
    # the sampled figures play the greedy ones' own episodes (each record's sampled_starts): each gap is the sampling's
    beyond = {method: sampled_gaps([run for run in runs if run["method"] == method], noise_free="final",
                                   rounding=gap_rounding(4, 4, 4)) for method in methods}  # (the records' decimals)
    kinds = {}  # what each method's sampled figure plays, as its records say
    for method in methods:
        kinds.setdefault(next(run for run in runs if run["method"] == method)["sampled_as"], []).append(method.upper())
    lower = sum(gaps.lower_beyond for gaps in beyond.values())
    lines += paragraph(f"Greedy and sampled on the same {module.FINAL_EPISODES} episodes (sampled:",
                       "; ".join(f"{', '.join(names)} {kind}" for kind, names in kinds.items()) + "):",
                       "the sampled policy scores higher beyond two standard errors on",
                       ", ".join(f"{method.upper()} {gaps.higher_beyond}" for method, gaps in beyond.items()),
                       f"of their {len(seeds)} runs each, and lower beyond them on {lower or 'none'}.")
    seed_rows = [[run["method"], str(run["seed"]), number(run["final"], 2), number(run["sampled"], 2),
                  gaps_per_seed([run], "final", 3),
                  "-" if run["steps_to_target"] is None else f"{run['steps_to_target'] / 1e3:.0f}k",
                  f"{run['env_steps']:,}", f"{run['wall_s']:.0f} s", f"{run['steps_per_s']:.0f}",
                  f"{run['raw_steps_per_s']:,.0f}", number(run["steps_per_s"] / run["raw_steps_per_s"], 3)]
                 for run in runs]
    lines += [*paragraph("Per run (speed: its env steps per second over raw lbforaging's, timed in the same",
                         "invocation; the wall-clock is that of the machine and the sittings that ran it):"),
              *markdown_table(["method", "seed", f"final mean ({module.FINAL_EPISODES} episodes)", "final sampled",
                               "sampled minus greedy, same episodes (se)", f"env steps to {target}", "env steps",
                               "wall-clock", "env steps/s", "raw lbforaging steps/s", "speed / raw"], seed_rows), "",
              *paragraph(compact_files_read("results/foraging_2m/<method>/seed<S>.json", len(runs),
                                            [folder / "summary.json"]),
                         "Each method's folder also keeps its first seed's `policy.pt` and `greedy.gif`."),
              "Reproduce:", "", *command(summary["command"]), ""]
    return lines


def particle_folder(name: str, title: str) -> list[str]:
    """One folder of benchmarks/particle.py's runs: its table as the benchmark prints it, every seed's team return,
    the files read and the command."""
    module = benchmark("particle")
    folder = RESULTS / "particle" / name
    summary = load(folder / "summary.json")
    runs = summary["runs"]
    methods = [method for method in module.METHODS if any(run["method"] == method for run in runs)]
    seeds = sorted({run["seed"] for run in runs})
    sampled = all("sampled" in run for run in runs)  # (runs recorded before sampled figures were kept have none)
    paired = all("sampled_gap_se" in run for run in runs)  # (runs since the sampled figures play the same episodes)
    seed_rows = []
    for method in methods:
        mine = sorted((run for run in runs if run["method"] == method), key=lambda run: run["seed"])
        gaps = [gaps_per_seed(mine, "team_return", 2)] if paired else []
        seed_rows.append([method, per_seed([run["team_return"] for run in mine]),
                          *([per_seed([run["sampled"] for run in mine])] if sampled else []), *gaps,
                          per_seed([run["collisions_per_step"] for run in mine], 3)])
    header = ["method", "team return, per seed", *(["sampled team return, per seed"] if sampled else []),
              *(["sampled minus noise-free, same episodes (se), per seed"] if paired else []),
              "collisions per step, per seed"]
    lines = [f"### {title}", "", *module.table(runs, summary["references"]), "",
             f"Per seed ({seeds_text(seeds)}):", "", *markdown_table(header, seed_rows), ""]
    kept = ", ".join(f"`{method}/`" for method in methods if (folder / method / "policy.pt").exists())
    lines += paragraph(files_read([folder / "summary.json"]), "The first seed's `policy.pt` and `greedy.gif` are in",
                       f"{kept}.")
    lines += ["Reproduce:", "", *command(summary["command"]), ""]
    return lines


def cooperative_navigation() -> list[str]:
    summary = load(RESULTS / "particle" / "simple_spread_v3" / "summary.json")
    episodes = summary["references"]["random"]["episodes"]  # every policy plays these evaluation episodes
    return ["## Cooperative navigation", "",
            *paragraph(f"The MADDPG paper's `{summary['env']}` (`mpe2`): three agents cover three landmarks, with",
                       f"forces in [-1, 1]^2. Every final policy (no exploration noise) plays the same {episodes}",
                       "evaluation episodes; each figure is their mean, then the mean over seeds (range over seeds in",
                       "brackets). Team return: the sum of every agent's reward over the episode. Landmark distance:",
                       "the sum over the landmarks of the distance to the nearest agent, averaged over the steps, and",
                       "at the last step. Collisions: touching pairs of agents per step. The references are uniform",
                       "random forces and standing still, on the same episodes."),
            *particle_folder("simple_spread_v3", "MADDPG against independent DDPG"),
            *particle_folder("simple_spread_v3-inferred", "MADDPG with inferred policies"),
            *particle_folder("simple_spread_v3-team", "MADDPG with one reward for the whole team"),
            *particle_folder("simple_spread_v3-ppo", "MAPPO and IPPO with a Gaussian policy")]


def discrete_navigation() -> list[str]:
    """mpe2's cooperative navigation with discrete actions: the task EPyMARL runs its discrete learners on."""
    summary = load(RESULTS / "compare" / "simple_spread_v3_discrete" / "summary.json")
    return ["## Cooperative navigation with discrete actions", "",
            *paragraph("The same three agents and landmarks with mpe2's five discrete actions (no-op and the four",
                       "directions; `simple_spread_v3_discrete`), 25-step episodes, the team reward the sum of the",
                       "agents'. The optimum is not known, so nothing is called solved; greedy and sampled figures are",
                       "means of 100 episodes. Uniformly random actions:",
                       f"{number(summary['random'], 2)} (mean of {benchmark('compare').RANDOM_EPISODES:,} episodes, in",
                       "`summary.json`). Notebook 16 draws the curves beside agents that never move."),
            *compare_env("simple_spread_v3_discrete")]


def physical_deception() -> list[str]:
    module = benchmark("competition")
    folder = RESULTS / "competition" / "simple_adversary_v3"
    summary = load(folder / "summary.json")
    runs, games = summary["runs"], summary["matchups"]
    methods = [method for method in module.METHODS if any(run["method"] == method for run in runs)]
    seeds = sorted({run["seed"] for run in runs})
    subpolicies = sorted({run["config"]["n_subpolicies"] for run in runs if "n_subpolicies" in run["config"]})
    sampled = all("sampled_selfplay" in run for run in runs)  # (runs recorded before it was kept have none)
    noise = "without exploration noise" + (", but for the self-play rows marked sampled: those play as each run "
                                           "explored at the end of its training ("
                                           + "; ".join(sorted({run["sampled_as"] for run in runs})) + ")"
                                           if sampled else "")
    seed_rows = []
    for method in methods:
        mine = sorted((run for run in runs if run["method"] == method), key=lambda run: run["seed"])
        seed_rows.append([method, per_seed([run["adversary_return"] for run in mine]),
                          *([per_seed([run["sampled_selfplay"]["adversary_return"] for run in mine])] if sampled else []),
                          per_seed([run["good_return"] for run in mine]),
                          span([run["wall_s"] for run in mine], 0, " s")])
    return ["## Physical deception", "",
            *paragraph(f"The MADDPG paper's `{summary['env']}` (`mpe2`): one adversary, two good agents, two",
                       f"landmarks, {summary['episodes']:,} training episodes per run. `maddpg`: each critic learns",
                       "its own agent's reward; `ensemble`: the same with policy ensembles",
                       f"({' or '.join(map(str, subpolicies))} sub-policies per agent); `team`: every critic learns",
                       "the sum of all three agents' rewards. Every score uses the environment's own rewards on the",
                       f"same {games[0]['episodes']} start states, {noise}; returns are sums over the episode,",
                       "distances at its last step."),
            "Self-play, each run against itself (mean over seeds, range in brackets):", "",
            *module.selfplay_table(runs), "",
            "Cross-play, each run against the other seeds' `maddpg` runs (mean over the games):", "",
            *module.crossplay_table(games), "",
            f"Self-play per seed ({seeds_text(seeds)}):", "",
            *markdown_table(["method", "adversary return, per seed",
                             *(["sampled adversary return, per seed"] if sampled else []),
                             "good agents' return, per seed", "wall-clock per run"], seed_rows), "",
            *paragraph(files_read([folder / "summary.json"]), f"It holds every run ({len(runs)}) and every",
                       f"cross-play game ({len(games)}); the first seed's `policy.pt` and `selfplay.gif` are in",
                       ", ".join(f"`{method}/`" for method in methods) + "."),
            "Reproduce:", "", *command(summary["command"]), ""]


def measured_not_committed() -> list[str]:
    return ["## Measured, not committed", "",
            "Some measurements leave no file in `results/`, so they have no figures here: run them to see them.", "",
            "```bash",
            f"{PYTHON} benchmarks/sweep.py --algo coma --env Switch2-v0 --episodes 6000 --seeds 10 11 12 13 14 "
            "--set --set critic_steps=4   # a hyperparameter sweep: one config per --set, on seeds no table uses",
            f"{PYTHON} benchmarks/speed.py          # seconds to a solve and env steps/s against raw ma-gym",
            f"{PYTHON} benchmarks/notebook_times.py # each notebook's run time in a fresh kernel (--busy 2: beside "
            "two busy processes)",
            f"{PYTHON} benchmarks/check_cost.py     # the share of a run spent in the boundary checks",
            f"{PYTHON} benchmarks/fingerprints.py   # hashes of short runs: did a change move any number?",
            "```", ""]


SECTIONS = [intro, maddpg_switch2, coma_switch2, switch2_comparison, fresh_switch2, more_agents, predator_prey,
            foraging, foraging_2m, cooperative_navigation, discrete_navigation, physical_deception,
            measured_not_committed]


def page() -> str:
    lines = [line for section in SECTIONS for line in section()]
    while lines and lines[-1] == "":
        lines.pop()
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if the page is out of date")
    args = parser.parse_args(argv)
    text = page()
    if PAGE.exists() and PAGE.read_text() == text:
        return 0
    if args.check:
        print(f"out of date: {rel(PAGE)} (regenerate it with python tools/results_page.py)")
        return 1
    PAGE.write_text(text)
    print(f"wrote: {rel(PAGE)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
