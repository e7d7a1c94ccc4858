"""What both capstones share (marl_edu.course.capstones), and the ``update=`` hook through which they train with the
library's own loop (loops.train) instead of a copy of them.

Also the staged hints of every part (capstones.hint), and that the capstones are done cold: their Markdown holds no
code of the answers, and no notebook before them prints the library's source of what they ask for (issue 31).

(Each capstone's own checks, and its train_yours against the library's run, are in tests/test_capstone_maddpg.py and
tests/test_capstone_coma.py.)
"""

import ast
import inspect
import json
import pathlib
import re

import matplotlib
import pytest
import torch

from marl_edu.course import capstone_coma
from marl_edu.course import capstone_maddpg
from marl_edu.course import capstones
from marl_edu.course import solutions
from marl_edu.data import buffers
from marl_edu.learners.coma import COMA, COMAConfig
from marl_edu.learners.maddpg import MADDPGConfig
from marl_edu.pieces import targets
from marl_edu.training.loops import TrainResult, train

matplotlib.use("Agg")

CAPSTONES = [capstone_maddpg, capstone_coma]


# -- one API ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("module", CAPSTONES, ids=lambda m: m.__name__)
def test_both_capstones_offer_the_same_api(module):
    assert list(module.REFERENCE) == list(module.PARTS) == list(module.CHECKERS)
    assert len(module.PARTS) == {capstone_maddpg: 6, capstone_coma: 5}[module]  # MADDPG's n-step window is the sixth
    assert all(callable(getattr(module, f"check_{name}")) for name in module.PARTS)
    for name in ("assemble", "whose", "train_yours", "reference_run", "random_return", "plot_against_reference"):
        assert callable(getattr(module, name)), name
    assert list(inspect.signature(module.train_yours).parameters) == ["parts", "env_id", "episodes", "seed",
                                                                       "eval_every", "stop_at", "progress"]
    assert list(inspect.signature(module.plot_against_reference).parameters) == ["result", "optimal", "random",
                                                                                  "env_id", "ax", "label"]
    assert inspect.signature(module.train_yours).return_annotation == "TrainResult"


@pytest.mark.parametrize("module", CAPSTONES, ids=lambda m: m.__name__)
def test_train_yours_refuses_what_is_not_assembles_dict(module):
    with pytest.raises(ValueError, match="assemble"):
        module.train_yours([module.REFERENCE[name] for name in module.PARTS])
    with pytest.raises(ValueError, match="missing"):
        module.train_yours({module.PARTS[0]: module.REFERENCE[module.PARTS[0]]})
    with pytest.raises(ValueError, match="not functions"):
        module.train_yours({**module.REFERENCE, module.PARTS[1]: "mine"})


def test_assemble_prints_one_table_and_refuses_unknown_parts(capsys):
    def passes(fn):
        print("PASSED: fine")

    def fails(fn):
        print("FAILED on a case: wrong\nHint: look")

    def raises(fn):
        raise RuntimeError("a checker's own bug")

    checkers = {"first": passes, "second": fails, "third": raises, "fourth": passes}
    reference = {name: (lambda name=name: name) for name in checkers}
    mine = {"first": lambda: "mine", "second": lambda: "mine", "third": lambda: "mine"}
    parts = capstones.assemble(mine, checkers, reference)
    assert parts["first"] is mine["first"]
    assert [parts[name] is reference[name] for name in ("second", "third", "fourth")] == [True, True, True]
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split("|")[0].strip() == "part" and len(lines) == 2 + len(checkers)
    assert [line.split("|")[1].strip() for line in lines[2:]] == ["PASSED", "FAILED", "FAILED", "not given"]
    assert [line.split("|")[2].strip() for line in lines[2:]] == ["yours"] + ["marl_edu's reference"] * 3
    with pytest.raises(ValueError, match=r"unknown parts \['fifth'\]; the parts are first, second"):
        capstones.assemble({"fifth": print}, checkers, reference)


def test_whose_counts_the_learners_parts():
    reference = {"a": print, "b": len}
    assert capstones.whose(dict(reference), reference, "COMA") == "marl_edu's parts (your stubs are empty)"
    assert capstones.whose({"a": abs, "b": len}, reference, "COMA") == "your COMA (1 of 2 parts yours)"
    assert capstones.whose({"a": abs, "b": min}, reference, "MADDPG") == "your MADDPG"


def test_learner_update_is_none_for_the_references_and_passes_the_parts_in_order():
    reference = {"update": print, "loss": len, "soft": abs}
    assert capstones.learner_update(dict(reference), reference, "update", ("loss", "soft")) is None
    calls = []
    update = capstones.learner_update({**reference, "update": lambda *args: calls.append(args)}, reference, "update",
                                      ("loss", "soft"))
    assert update("agent", "batch") is None and calls == [("agent", "batch", len, abs)]
    # a learner's loss alone is enough to need the update with the parts passed in
    update = capstones.learner_update({**reference, "loss": min}, reference, "update", ("loss", "soft"))
    assert update is not None


def test_reference_run_and_its_refusal():
    run = capstones.reference_run("coma", "Switch2-v0")
    assert run["seed"] == 0 and run["evaluations"][-1] == [6000, 8.3]
    with pytest.raises(ValueError, match=r"no committed reference run of coma on 'Switch9-v0'.*Switch2-v0"):
        capstones.reference_run("coma", "Switch9-v0")


def test_random_return_is_the_mean_of_uniform_actions():
    # 100 episodes of two agents acting uniformly at random on Switch2-v0: far below the optimum 8.3, near
    # -10 (neither arrives: 50 steps of -0.1 each) plus the few arrivals; the same figure for the same seed
    value = capstones.random_return("Switch2-v0", episodes=100, seed=0)
    assert -10.0 < value < 0.0 and value == capstones.random_return("Switch2-v0", episodes=100, seed=0)
    assert capstone_coma.random_return is capstones.random_return is capstone_maddpg.random_return


def test_the_plot_refuses_a_dict_and_draws_a_run():
    reference = capstones.reference_run("maddpg", "Switch2-v2")
    with pytest.raises(ValueError, match="TrainResult"):
        capstones.plot_against_reference({"evaluations": [(1, 2.0)]}, reference, "MADDPG")
    ax = capstones.plot_against_reference(TrainResult(agent=None, evaluations=[(50, 1.0), (100, 8.1)]), reference,
                                          "MADDPG", optimal=8.3, random=-9.3, env_id="Switch2-v2", label="mine")
    labels = [line.get_label() for line in ax.get_lines()]
    assert labels == ["marl_edu's MADDPG (committed run, seed 0)", "mine", "exact optimum (8.3)",
                      "random policy (-9.3)"]
    assert ax.get_title() == "Switch2-v2: greedy team return"


# -- the update= hook of the library's loops ------------------------------------------------------------------------

def test_train_coma_calls_the_given_update_with_the_learner_and_each_batch():
    seen = []

    def update(agent, batch):
        seen.append((agent, batch["obs"].shape))
        agent.update(batch)

    ours = train("coma", "Switch2-v0", 32, COMAConfig(n_envs=8), seed=2, eval_every=16, progress=False, update=update)
    theirs = train("coma", "Switch2-v0", 32, COMAConfig(n_envs=8), seed=2, eval_every=16, progress=False)
    assert len(seen) == ours.updates == 4 and all(agent is ours.agent for agent, _ in seen)
    assert all(shape[0] == 8 and shape[2:] == (2, 2) for _, shape in seen)  # (B = K, T+1, N, O)
    assert ours.episode_returns == theirs.episode_returns and ours.evaluations == theirs.evaluations
    assert all(torch.equal(a, b) for a, b in zip(ours.agent.actor.parameters(), theirs.agent.actor.parameters()))


def test_train_maddpg_calls_the_given_update_instead_of_the_learners():
    seen = []
    config = MADDPGConfig(n_envs=4, warmup_steps=64, batch_size=32, hidden=16, buffer_size=5_000)
    result = train("maddpg", "Switch2-v2", 12, config, seed=0, eval_every=12, progress=False,
                          update=lambda agent, batch: seen.append(batch["obs"].shape))
    N, O = result.agent.n_agents, result.agent.obs_dim
    assert len(seen) == result.updates > 0 and set(seen) == {(32, N, O)}  # (B, N, O) replay batches
    assert result.agent.updates == 0  # MADDPG.update never ran


@pytest.mark.parametrize("learner", ["maddpg", "coma"])
def test_an_update_that_is_not_a_function_is_a_value_error(learner):
    with pytest.raises(ValueError, match="update must be None .* or a function update\\(agent, batch\\), got str"):
        train(learner, episodes=1, progress=False, update="agent.update")


# -- hints in stages (issue 31: capstones done cold) -----------------------------------------------------------------

ROOT = pathlib.Path(__file__).resolve().parent.parent
CAPSTONE_NOTEBOOKS = {"22_capstone_maddpg.ipynb": capstone_maddpg, "23_capstone_coma.ipynb": capstone_coma}
EVERY_PART = [name for module in CAPSTONES for name in module.PARTS]


def _solution_lines(name: str) -> list[str]:
    """The lines of the course's answer to part ``name`` longer than 25 characters, comments cut off: what a hint or
    the notebook's Markdown must never hold verbatim (a short line such as ``c = agent.config`` may recur)."""
    lines = (line.split("#")[0].strip() for line in inspect.getsource(getattr(solutions, name)).splitlines())
    return [line for line in lines if len(line) > 25]


def test_the_hints_cover_exactly_the_parts_of_both_capstones_in_order():
    assert list(capstones.MADDPG_HINTS) == list(capstone_maddpg.PARTS)
    assert list(capstones.COMA_HINTS) == list(capstone_coma.PARTS)
    assert list(capstones.HINTS) == EVERY_PART
    assert capstone_maddpg.hint is capstones.hint is capstone_coma.hint  # one function, offered by both modules
    assert sorted(capstones.STAGES) == [1, 2, 3]


@pytest.mark.parametrize("name", EVERY_PART)
def test_every_part_has_three_different_non_empty_stages(name):
    stages = capstones.HINTS[name]
    assert len(stages) == 3
    assert all(isinstance(text, str) and len(text.split()) >= 20 for text in stages), "each stage says something"
    assert len(set(stages)) == 3
    assert [capstones.hint_text(name, stage) for stage in (1, 2, 3)] == list(stages)
    # a printed hint stays readable in a notebook's output
    assert max(len(line) for text in stages for line in text.splitlines()) <= 118


@pytest.mark.parametrize("name", EVERY_PART)
def test_no_hint_holds_a_line_of_the_answer(name):
    # stage 3 is pseudocode, not the solution: no line of the course's answer (show_solution's) appears in any stage
    lines = _solution_lines(name)
    assert len(lines) >= 3  # the check below has something to look for
    for stage, text in enumerate(capstones.HINTS[name], start=1):
        copied = [line for line in lines if line in text]
        assert not copied, f"hint({name!r}, {stage}) holds lines of the answer: {copied}"


@pytest.mark.parametrize("name", EVERY_PART)
def test_hint_prints_one_stage_and_points_to_the_next(name, capsys):
    for stage in (1, 2, 3):
        assert capstones.hint(name, stage) is None
        out = capsys.readouterr().out
        header, *body, footer = out.rstrip("\n").split("\n")
        assert header == f"# hint {stage} of 3 for {name}: {capstones.STAGES[stage]}"
        assert "\n".join(body) == capstones.HINTS[name][stage - 1]
        if stage < 3:
            assert f"hint({name!r}, {stage + 1})" in footer
        else:
            assert f"show_solution({name!r})" in footer and "last resort" in footer
    capstones.hint(name)  # the stage defaults to the first
    assert capsys.readouterr().out.startswith(f"# hint 1 of 3 for {name}:")


def test_an_unknown_part_or_stage_is_a_value_error_listing_what_there_is(capsys):
    for wrong in ("maddpg_critic", "", "check_soft_update", "td_target", "COMA_UPDATE", None, 3):
        with pytest.raises(ValueError) as error:
            capstones.hint(wrong, 1)
        assert repr(wrong) in str(error.value)
        assert all(name in str(error.value) for name in EVERY_PART)
    for wrong in (0, 4, -1, "1", None, True, 2.5, 1.0):
        with pytest.raises(ValueError) as error:
            capstone_coma.hint("coma_update", wrong)
        assert f"got {wrong!r}" in str(error.value) and "1, 2 or 3" in str(error.value)
        assert all(capstones.STAGES[k].split(":")[0] in str(error.value) for k in (1, 2, 3))
    assert capsys.readouterr().out == ""  # nothing printed before a refusal


# -- the capstone notebooks: done cold ------------------------------------------------------------------------------

def _cells(notebook: str) -> list[dict]:
    return json.loads((ROOT / "notebooks" / notebook).read_text())["cells"]


def _markdown(notebook: str) -> list[tuple[int, str]]:
    return [(index, "".join(cell["source"])) for index, cell in enumerate(_cells(notebook))
            if cell["cell_type"] == "markdown"]


CODE_LINE = re.compile(r"^(\s*)(for |while |if |return |def |with |[\w.\[\]\"', ]+ (=|<-|\+=) )")


@pytest.mark.parametrize("notebook", CAPSTONE_NOTEBOOKS)
def test_the_capstones_markdown_gives_no_code_of_the_answers(notebook):
    module = CAPSTONE_NOTEBOOKS[notebook]
    answer_lines = [(name, line) for name in module.PARTS for line in _solution_lines(name)]
    for index, text in _markdown(notebook):
        where = f"{notebook} cell {index}"
        # no code block, fenced or indented, and no assignment or control flow written as code
        assert "```" not in text and "~~~" not in text, f"{where}: a fenced code block"
        in_math = False
        for line in text.split("\n"):
            if line.strip().startswith("$$") and line.count("$$") == 1:
                in_math = not in_math
            if in_math or line.lstrip().startswith(("|", "-", "*", "$$")) or re.match(r"^\s*\d+\.", line):
                continue
            assert not (line.startswith("    ") and CODE_LINE.match(line)), f"{where}: indented pseudocode {line!r}"
        for span in re.findall(r"`([^`]+)`", text):
            assert not re.match(r"^\s*[\w.\[\]\"', ]+ (=|\+=|<-) ", span), f"{where}: an assignment as code: `{span}`"
        # nothing of the course's answers verbatim
        copied = [(name, line) for name, line in answer_lines if line in text]
        assert not copied, f"{where} holds lines of the answers: {copied}"


@pytest.mark.parametrize("notebook", CAPSTONE_NOTEBOOKS)
def test_the_capstones_say_once_what_the_stages_give_and_that_show_solution_is_last(notebook):
    intro = [text for _, text in _markdown(notebook) if "hint(part, 1)" in text]
    assert len(intro) == 1 and intro[0].lstrip().startswith(f"# {notebook[:2]} ·")  # in the opening cell, once
    for stage_call in ("hint(part, 1)", "hint(part, 2)", "hint(part, 3)", "show_solution(part)"):
        assert stage_call in intro[0]
    assert "last resort" in intro[0].lower()


@pytest.mark.parametrize("notebook", CAPSTONE_NOTEBOOKS)
def test_every_check_cell_offers_the_hints_then_the_solution_commented_out(notebook):
    module = CAPSTONE_NOTEBOOKS[notebook]
    seen = []
    for cell in _cells(notebook):
        if cell["cell_type"] != "code":
            continue
        lines = "".join(cell["source"]).split("\n")
        checked = [name for name in module.PARTS if lines[0].startswith(f"check_{name}(")]
        if not checked:
            continue
        name = checked[0]
        seen.append(name)
        assert lines[1].startswith(f'# hint("{name}", 1)') and "stage 1 of 3" in lines[1], lines[1]
        assert lines[2].startswith(f'# show_solution("{name}")') and "last resort" in lines[2], lines[2]
    assert seen == list(module.PARTS)


@pytest.mark.parametrize("path", sorted((ROOT / "notebooks").glob("*.ipynb")), ids=lambda path: path.name)
def test_no_committed_notebook_calls_a_hint(path):
    # a hint is asked for, never printed in a committed notebook (as show_solution: tests/test_solutions.py)
    for index, cell in enumerate(json.loads(path.read_text())["cells"]):
        if cell["cell_type"] != "code":
            continue
        source = "\n".join("" if line.lstrip().startswith(("%", "!")) else line
                           for line in "".join(cell["source"]).split("\n"))
        for node in ast.walk(ast.parse(source)):
            assert not (isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None))
                        in ("hint", "hint_text")), f"{path.name} cell {index} prints a hint"


def test_notebook_22_has_no_stray_placeholder_cell():
    assert not any("placeholder" in "".join(cell["source"]) for cell in _cells("22_capstone_maddpg.ipynb"))


# -- no notebook before the capstones prints their answers ----------------------------------------------------------

# what the capstones ask the learner to write, as the library names it: printing one of these is printing an answer
CAPSTONE_TOPICS = {
    "MADDPG": ("update", "critic_loss", "actor_loss", "q_of_every_own_action"),
    "COMA": ("update", "critic_rows", "critic_targets", "critic_loss", "taken_values", "advantage", "policy_step",
             "replay_policy", "actor_loss"),
    None: ("soft_update", "collect_episodes", "train", "Transitions", "WholeEpisodes"),
}
FIRST_CAPSTONE = 22  # 22_capstone_maddpg: every numbered notebook below it is read before the capstones
EARLIER = sorted(path for path in (ROOT / "notebooks").glob("*.ipynb")
                 if re.match(r"\d\d_", path.name) and int(path.name[:2]) < FIRST_CAPSTONE)
CHEAT_SHEET = ROOT / "notebooks" / "cheat_sheet.ipynb"  # a reference read at any time, so before the capstones too
KNOWN: dict[str, str] = {}  # notebook -> why it is expected to fail, until it is changed (strict: a fix shows as XPASS)


def _topic(node: ast.AST) -> str | None:
    """``COMA.update``-like attributes and ``soft_update``-like names that are capstone topics, else None."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        if node.attr in CAPSTONE_TOPICS.get(node.value.id, ()):
            return f"{node.value.id}.{node.attr}"
    if isinstance(node, ast.Name) and node.id in CAPSTONE_TOPICS[None]:
        return node.id
    return None


def _unguarded_source_prints(path: pathlib.Path) -> list[str]:
    """Every ``inspect.getsource``-like call (and ``??``, ``%psource``) of a capstone topic in ``path`` that runs
    without the learner asking: not inside ``if FLAG:`` with ``FLAG = False`` set in the notebook."""
    sources = {index: "".join(cell["source"]) for index, cell in enumerate(json.loads(path.read_text())["cells"])
               if cell["cell_type"] == "code"}
    off_flags = set(re.findall(r"^(\w+)\s*=\s*False\b", "\n".join(sources.values()), flags=re.M))
    found = []
    for index, source in sources.items():
        lines = source.split("\n")
        for line in lines:  # IPython's own ways of printing source
            stripped = line.strip()
            if stripped.endswith("??") or stripped.startswith(("%psource", "%pinfo2")):
                found.append(f"cell {index}: {stripped}")
        tree = ast.parse("\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in lines)
                         .replace("??", ""))
        parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
        topics = sorted({topic for node in ast.walk(tree) if (topic := _topic(node))})
        for node in ast.walk(tree):
            name = getattr(node.func, "attr", getattr(node.func, "id", None)) if isinstance(node, ast.Call) else None
            if name not in ("getsource", "getsourcelines", "getsourcefile", "show_source"):
                continue
            guard, above = False, parents.get(node)
            while above is not None:
                if isinstance(above, ast.If) and isinstance(above.test, ast.Name) and above.test.id in off_flags:
                    guard = True
                above = parents.get(above)
            if not guard and topics:
                found.append(f"cell {index} prints the source of {topics}")
    return found


@pytest.mark.parametrize("path", [pytest.param(path, marks=pytest.mark.xfail(strict=True, reason=KNOWN[path.name]))
                                  if path.name in KNOWN else path for path in [*EARLIER, CHEAT_SHEET]],
                         ids=[path.name for path in [*EARLIER, CHEAT_SHEET]])
def test_no_notebook_before_the_capstones_prints_their_answers(path):
    assert not _unguarded_source_prints(path), _unguarded_source_prints(path)


def test_the_source_check_sees_a_print_and_lets_a_folded_one_pass(tmp_path):
    def notebook(*sources):
        path = tmp_path / "nb.ipynb"
        path.write_text(json.dumps({"cells": [{"cell_type": "code", "source": s} for s in sources]}))
        return _unguarded_source_prints(path)

    assert notebook("print(inspect.getsource(COMA.update))") == ["cell 0 prints the source of ['COMA.update']"]
    assert notebook("for f in (COMA.critic_targets, soft_update):\n    print(inspect.getsource(f))")
    assert notebook("collect_episodes??") == ["cell 0: collect_episodes??"]
    assert notebook("SHOW = True\nif SHOW:\n    print(inspect.getsource(COMA.update))")  # a flag that is on
    assert notebook("SHOW = False", "if SHOW:\n    print(inspect.getsource(COMA.update))") == []
    assert notebook("print(inspect.getsource(CentralV.critic_rows))") == []  # not a capstone's part
    assert (ROOT / "notebooks" / "08_coma_training.ipynb") in EARLIER
    assert [int(path.name[:2]) for path in EARLIER] == list(range(FIRST_CAPSTONE))  # 00 to 21, each once


# -- the cheat sheet, read before the capstones, holds no pseudocode of their parts --------------------------------

# what a capstone part's answer calls in the library (each check's refused names, e.g. critic_rows, soft_update,
# n_step_transitions, td_lambda_targets): pseudocode that calls one of them writes a part out
REFUSED_FUNCTIONS = sorted({name.split(":")[1].split(".")[-1] for module in CAPSTONES
                            for check in module.CHECKERS.values() for name in check.refused})


def _fenced_calls_of_parts(markdown: str) -> list[str]:
    """The refused library functions called (``name(``) inside the fenced code blocks of ``markdown``."""
    blocks = re.findall(r"```.*?```", markdown, flags=re.S)
    return sorted({name for block in blocks for name in re.findall(r"\b(\w+)\(", block) if name in REFUSED_FUNCTIONS})


def test_the_cheat_sheet_holds_no_pseudocode_or_answer_of_a_capstone_part():
    markdown = "\n".join(text for _, text in _markdown(CHEAT_SHEET.name))
    assert not _fenced_calls_of_parts(markdown), _fenced_calls_of_parts(markdown)
    copied = [(name, line) for name in EVERY_PART for line in _solution_lines(name) if line in markdown]
    assert not copied, f"the cheat sheet holds lines of the answers: {copied}"
    pseudocode = [(name, line.strip()) for name in EVERY_PART for line in capstones.HINTS[name][2].splitlines()
                  if len(line.strip()) > 25 and line.strip() in markdown]
    assert not pseudocode, f"the cheat sheet holds lines of the stage-3 hints: {pseudocode}"


def test_the_pseudocode_check_sees_a_part_written_out():
    # the cheat sheet's MADDPG and COMA pseudocode before issue 44 called these; a block that calls none passes
    assert "critic_rows" in REFUSED_FUNCTIONS and "n_step_transitions" in REFUSED_FUNCTIONS
    assert _fenced_calls_of_parts("```python\nsoft_update(every target network, tau)\n```") == ["soft_update"]
    assert _fenced_calls_of_parts("```\nrows = critic_rows(obs, actions)\ny = td_lambda_targets(r, d, q, g, l)\n```") \
        == ["critic_rows", "td_lambda_targets"]
    assert _fenced_calls_of_parts("```\nmix(q_taken, state)\n```") == []
    assert _fenced_calls_of_parts("critic_rows(obs, actions) outside a code block") == []


# -- every check refuses an answer that calls the library's own implementation of its part -------------------------

def _through_train_maddpg(env_id, episodes, config, seed, update, eval_every):
    result = train("maddpg", env_id, episodes, config, seed, eval_every, progress=False, update=update)
    return {"agent": result.agent, "buffer": result.buffer, "episode_returns": result.episode_returns,
            "evaluations": result.evaluations}


# part -> (an answer that hands the work to the library, the library function it reaches (one the check guards), what
# the refusal calls it: a method called on the learner object by the name the learner wrote, with the object's own
# class, e.g. agent.replay_policy (COMA's, not SharedActorLearner's, a class the course never introduces))
LIBRARY_ANSWERS = {
    "maddpg_critic_loss": (lambda agent, i, batch: agent.critic_loss(i, batch), "marl_edu.learners.maddpg.MADDPG.critic_loss",
                           "agent.critic_loss (the library's MADDPG.critic_loss)"),
    "maddpg_actor_loss": (lambda agent, i, batch: agent.actor_loss(i, batch), "marl_edu.learners.maddpg.MADDPG.actor_loss",
                          "agent.actor_loss (the library's MADDPG.actor_loss)"),
    "soft_update": (lambda target, source, tau: targets.soft_update(target, source, tau),
                    "marl_edu.pieces.targets.soft_update", "marl_edu.pieces.targets.soft_update"),
    "maddpg_update": (lambda agent, batch, *parts: agent.update(batch), "marl_edu.learners.maddpg.MADDPG.update",
                      "agent.update (the library's MADDPG.update)"),
    "n_step_window": (lambda *args: buffers.n_step_transitions(*args), "marl_edu.data.buffers.n_step_transitions",
                      "marl_edu.data.buffers.n_step_transitions"),
    "maddpg_training_loop": (_through_train_maddpg, "marl_edu.training.loops.train", "marl_edu.training.loops.train"),
    "coma_critic_rows": (lambda agent, obs, actions: agent.critic_rows(obs, actions),
                         "marl_edu.learners.coma.COMA.critic_rows", "agent.critic_rows (the library's COMA.critic_rows)"),
    "coma_critic_targets": (lambda agent, rows, batch: agent.critic_targets(rows, batch),
                            "marl_edu.learners.coma.COMA.critic_targets",
                            "agent.critic_targets (the library's COMA.critic_targets)"),
    "coma_batch_advantage": (lambda agent, rows, batch, pi: agent.advantage(rows, batch, pi.detach()),
                             "marl_edu.learners.coma.COMA.advantage", "agent.advantage (the library's COMA.advantage)"),
    "coma_replay_policy": (lambda agent, obs, actions, epsilon: agent.replay_policy(obs, actions, epsilon),
                           "marl_edu.learners.coma.SharedActorLearner.replay_policy",
                           "agent.replay_policy (the library's COMA.replay_policy)"),
    "coma_update": (lambda agent, batch, *parts: agent.update(batch), "marl_edu.learners.coma.COMA.update",
                    "agent.update (the library's COMA.update)"),
}
CHECKS = {name: module.CHECKERS[name] for module in CAPSTONES for name in module.PARTS}


def _guarded_objects() -> dict[str, object]:
    """Every refused name -> the object stored under it now (to see that a check puts each one back)."""
    found = {}
    for check in CHECKS.values():
        for name in check.refused:
            owner, attribute = capstones._owner_and_attribute(name)
            found[name] = vars(owner)[attribute]
    return found


def _refusal(name: str, called: str) -> str:
    return f"FAILED: your {name} calls {called}, marl_edu's own implementation of what you write here"


def test_every_part_has_a_library_answer_to_refuse():
    assert list(LIBRARY_ANSWERS) == EVERY_PART
    for name, check in CHECKS.items():
        assert LIBRARY_ANSWERS[name][1] in [refused.replace(":", ".") for refused in check.refused]
        for refused in check.refused:  # each refused name is a function or method the library defines there
            owner, attribute = capstones._owner_and_attribute(refused)
            assert attribute in vars(owner) and callable(getattr(owner, attribute)), refused


@pytest.mark.parametrize("name", EVERY_PART)
def test_an_answer_that_calls_the_librarys_part_fails_and_names_it(name, capsys):
    before = _guarded_objects()
    answer, _, called = LIBRARY_ANSWERS[name]
    CHECKS[name](answer)
    out = capsys.readouterr().out
    assert out.startswith(_refusal(name, called)), out
    assert "write it yourself, from the equations and shapes of the section" in out and f"hint({name!r}, 1)" in out
    assert out.count("\n") == 2  # one verdict: the refusal and its hint
    after = _guarded_objects()
    assert all(after[key] is before[key] for key in before), "a guard was left in place"


@pytest.mark.parametrize("name", EVERY_PART)
def test_the_course_answers_still_pass_with_the_guards(name, capsys):
    CHECKS[name](getattr(solutions, name))
    assert capsys.readouterr().out.startswith("PASSED"), name


def test_a_library_function_imported_into_the_notebook_is_refused_too(capsys):
    # the learner's namespace (a notebook's globals) holds the library's function under its own name, or a bound
    # method taken before the check: both are guarded while the learner's function runs, and put back after
    namespace = {"torch": torch}
    exec("from marl_edu.pieces.targets import td_lambda_targets as backwards\n"
         "def my_targets(agent, rows, batch):\n"
         "    B, T1, N = batch['actions'].shape\n"
         "    with torch.no_grad():\n"
         "        q = agent.target_critic(rows.reshape(B * T1 * N, -1)).reshape(B, T1, N, -1)\n"
         "    q = q.gather(-1, batch['actions'].unsqueeze(-1)).squeeze(-1)[:, 1:].permute(0, 2, 1)\n"
         "    r = batch['rewards'].sum(-1, keepdim=True).expand(B, T1 - 1, N).permute(0, 2, 1)\n"
         "    d = batch['dones'].unsqueeze(1).expand(B, N, T1 - 1)\n"
         "    c = agent.config\n"
         "    return backwards(r, d, q, c.gamma, c.lam).permute(0, 2, 1)\n", namespace)
    original = namespace["backwards"]
    capstone_coma.check_coma_critic_targets(namespace["my_targets"])
    assert capsys.readouterr().out.startswith(_refusal("coma_critic_targets", "marl_edu.pieces.targets.td_lambda_targets"))
    assert namespace["backwards"] is original and targets.td_lambda_targets is original

    agent = capstone_coma._agent()  # a bound method of the library's, taken before the check
    namespace = {"rows_of": agent.critic_rows}
    exec("def my_rows(agent, obs, actions):\n    return rows_of(obs, actions)\n", namespace)
    capstone_coma.check_coma_critic_rows(namespace["my_rows"])
    assert capsys.readouterr().out.startswith(_refusal("coma_critic_rows", "marl_edu.learners.coma.COMA.critic_rows"))
    assert namespace["rows_of"].__func__ is COMA.critic_rows


def test_a_caught_refusal_still_fails(capsys):
    def sly_soft_update(target, source, tau):  # tries the library's, and writes its own when that raises
        try:
            targets.soft_update(target, source, tau)
        except Exception:  # noqa: BLE001  (the guard's exception is not an Exception: this does not catch it)
            pass
        except BaseException:  # (a learner who catches everything)
            pass
        solutions.soft_update(target, source, tau)

    capstone_maddpg.check_soft_update(sly_soft_update)
    assert capsys.readouterr().out.startswith(_refusal("soft_update", "marl_edu.pieces.targets.soft_update"))


def test_the_guards_are_put_back_when_the_learners_code_raises_and_a_staticmethod_stays_one(capsys):
    before = _guarded_objects()
    assert isinstance(vars(COMA)["actor_loss"], staticmethod)

    def broken_update(agent, batch, *parts):
        COMA.actor_loss  # noqa: B018  (read, not called: no refusal)
        raise RuntimeError("a bug in the learner's update")

    capstone_coma.check_coma_update(broken_update)
    out = capsys.readouterr().out
    assert out.startswith("FAILED on") and "RuntimeError: a bug in the learner's update" in out
    after = _guarded_objects()
    assert all(after[key] is before[key] for key in before)
    assert isinstance(vars(COMA)["actor_loss"], staticmethod)
    with capstones.refusing(("marl_edu.learners.coma:COMA.actor_loss",)) as called:
        with pytest.raises(capstones._LibraryAnswer):
            COMA.actor_loss(None, None, None, None, 0.0)
    assert called == ["marl_edu.learners.coma.COMA.actor_loss"] and isinstance(vars(COMA)["actor_loss"], staticmethod)


def test_only_the_checked_parts_functions_are_refused(capsys):
    # the update's check hands the learner marl_edu's own losses and soft update: calling those is the task
    def update_with_the_given_parts(agent, batch, critic_loss, actor_loss, soft_update):
        solutions.maddpg_update(agent, batch, critic_loss, actor_loss, soft_update)

    capstone_maddpg.check_maddpg_update(update_with_the_given_parts)
    assert capsys.readouterr().out.startswith("PASSED")
    # outside a check nothing is guarded: the reference still runs
    assert capstone_maddpg.REFERENCE["n_step_window"] is buffers.n_step_transitions
