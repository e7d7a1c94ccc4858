"""The course's one symbol table (the cheat sheet's section 1) holds in the notebooks' Markdown and the README: the
symbols it reserves keep their one meaning wherever an equation uses them.

What is checked, in every $...$ and $$...$$ of a Markdown cell (code spans and fenced code left out):
- a prime marks a target network only: Q', mu', psi', theta', V' (never the next step: s', o', x', a', r');
- tau is the soft-update rate only (not the COMA paper's history tau^a, which is h_{i,t} here), and where a value is
  written it is a default the course uses, 0.005 (Switch) or 0.01 (particle envs);
- lambda is TD(lambda)'s weight only: no index (lambda^{n-1}, a power of it, is allowed);
- d is the done flag only, indexed by time (d_t, d_{T-1}, d_{11}), never by an agent or a batch row (d_{i,b}) and
  never a distance (that is dist_i);
- A is the number of actions only (A^N joint actions), never an advantage (that is Adv);
- phi is the parameters of notebook 19's approximations, phi^j_i (never a critic's, which are psi);
- psi is a critic's parameters: psi, psi_i, psi'.
Exempt: the cheat sheet's table of the symbols that used to mean two things (it names the old meanings), and a line
that translates a paper's notation ("the paper writes", "translates").
"""

from __future__ import annotations

import json
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
RENAMES_HEADING = "### Where a symbol used to mean two things"
TRANSLATION = re.compile(r"paper writes|translates", re.IGNORECASE)
PRIMED = {"Q", r"\mu", r"\psi", r"\theta", "V"}  # the networks a prime may mark (their targets)


def math_spans(markdown: str) -> list[str]:
    """The LaTeX of every $...$ and $$...$$ in ``markdown``, outside code, without lines that translate another
    notation and without the words of \\text{...} and \\mathrm{...} (an apostrophe there is English)."""
    markdown = re.sub(r"```.*?```", " ", markdown, flags=re.S)  # fenced code
    markdown = re.sub(r"`[^`\n]*`", " ", markdown)  # code spans
    markdown = "\n".join(line for line in markdown.splitlines() if not TRANSLATION.search(line))
    markdown = markdown.replace(r"\$", " ")  # an escaped dollar is a dollar
    spans = [a or b for a, b in re.findall(r"\$\$(.+?)\$\$|\$([^$]+?)\$", markdown, flags=re.S)]
    return [re.sub(r"\\(?:text|mathrm|operatorname)\{[^}]*\}", " ", span) for span in spans]


def misuses(span: str) -> list[str]:
    """What in one equation breaks the symbol table, as readable messages (none: it holds)."""
    found = []
    for m in re.finditer(r"((?:\\[a-zA-Z]+|[A-Za-z])(?:_\{[^}]*\}|_[A-Za-z0-9])?)'", span):
        if re.sub(r"_.*", "", m.group(1)) not in PRIMED:
            found.append(f"{m.group(0)}: a prime marks a target network only (the next step is t+1)")
    for m in re.finditer(r"\\tau(?![A-Za-z])\s*([_^]|=\s*[0-9.]+)?", span):
        value = m.group(1) or ""
        if value in ("_", "^") or (value.startswith("=") and value.lstrip("= ") not in ("0.005", "0.01")):
            found.append(f"{m.group(0)}: tau is the soft-update rate only, 0.005 (Switch) or 0.01 (particle envs)")
    for m in re.finditer(r"\\lambda(?![A-Za-z])\s*_", span):
        found.append(f"{m.group(0)}: lambda is TD(lambda)'s weight only, without an index")
    for m in re.finditer(r"(?<![\\A-Za-z])d_(\{[^}]*\}|[A-Za-z0-9])", span):
        index = m.group(1).strip("{}")
        if not re.search(r"[tT]|^\d+$", index) or re.search(r"[ijb]", index):
            found.append(f"{m.group(0)}: d is the done flag, indexed by time only (a distance is dist_i)")
    for m in re.finditer(r"(?<![\\A-Za-z])A\s*[_(]", span):
        found.append(f"{m.group(0)}: A is the number of actions (an advantage is Adv)")
    for m in re.finditer(r"\\phi(?![A-Za-z])(?!\s*\^)(?!_\{?[a-z]\}?\^)", span):
        found.append(f"{m.group(0)}: phi is notebook 19's approximations' parameters, phi^j_i (a critic's is psi)")
    for m in re.finditer(r"\\psi(?![A-Za-z])\s*\^", span):
        found.append(f"{m.group(0)}: psi is a critic's parameters: psi, psi_i, psi'")
    return found


def notebook_markdown(path: pathlib.Path) -> list[tuple[int, str]]:
    cells = json.loads(path.read_text())["cells"]
    return [(index, "".join(cell["source"])) for index, cell in enumerate(cells)
            if cell["cell_type"] == "markdown" and RENAMES_HEADING not in "".join(cell["source"])]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.stem)
def test_the_notebooks_markdown_follows_the_symbol_table(path):
    wrong = [f"cell {index}: {message}" for index, markdown in notebook_markdown(path)
             for span in math_spans(markdown) for message in misuses(span)]
    assert not wrong, f"{path.name}:\n" + "\n".join(wrong)


def test_the_readme_follows_the_symbol_table():
    wrong = [message for span in math_spans((ROOT / "README.md").read_text()) for message in misuses(span)]
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("equation, broken", [
    (r"y = r_t + \gamma (1 - d_t) Q'_i(\mathbf{x}_{t+1}, \mu'(\mathbf{x}_{t+1}))", []),  # targets: allowed
    (r"\psi' \leftarrow \tau \psi + (1 - \tau) \psi', \tau = 0.005", []),
    (r"(1 - \lambda)\lambda^{n-1}, |A|^N = A^N, d_{T-1}, d_{11}, f_{\phi^j_i}(o_{j,t}), \phi_i^j", []),
    (r"\text{COMA's critic}", []),  # an apostrophe in words
    (r"Q(s', a')", ["s'", "a'"]),  # the next step primed
    (r"\tau^a", [r"\tau^"]),  # the COMA paper's history
    (r"\tau = 0.02", [r"\tau = 0.02"]),  # not a default of the course
    (r"\lambda_i", [r"\lambda_"]),
    (r"r_{i,b} + \gamma (1 - d_{i,b})", ["d_{i,b}"]),  # done per agent and row
    (r"-\min(d_1, d_2)", []),  # digits read as time steps (a distance must be written dist_i: not detectable)
    (r"d_i", ["d_i"]),
    (r"A_{i,t} = Q - b", ["A_"]),  # an advantage written A
    (r"\mathcal{L}(\phi_i)", [r"\phi"]),  # a critic's parameters written phi
    (r"\psi^j", [r"\psi^"]),
])
def test_the_checker_finds_each_misuse_and_allows_the_tables_uses(equation, broken):
    # each broken use is named by the text it matched, in order; an allowed equation gives no message
    messages = misuses(math_spans(f"${equation}$")[0])
    assert [message.split(":")[0].strip() for message in messages] == broken


def test_code_and_translations_are_not_read_as_equations():
    markdown = ("The COMA paper writes $\\tau^a$ for the history.\n`$s'$` in code, and\n```\n$o'$\n```\n"
                "an escaped \\$5 and \\$6, then $Q'$.")
    assert math_spans(markdown) == ["Q'"]


def test_the_cheat_sheets_sizes_on_switch2_are_the_configs_defaults():
    # the Sizes table's "on Switch2" column quotes defaults: a default that changes fails here until the row does
    from marl_edu.learners.coma import COMAConfig
    from marl_edu.learners.maddpg import MADDPGConfig

    on_switch2 = {}
    for _, markdown in notebook_markdown(ROOT / "notebooks" / "cheat_sheet.ipynb"):
        for line in markdown.splitlines():
            columns = [column.strip() for column in line.strip().strip("|").split("|")]
            if line.startswith("|") and len(columns) == 4:  # | symbol | meaning | on Switch2 | first |
                on_switch2.setdefault(columns[0], columns[2])
    maddpg, coma = MADDPGConfig(), COMAConfig()
    assert on_switch2["capacity"] == f"{maddpg.buffer_size:,} (MADDPG)"
    assert on_switch2["$B$"] == f"{maddpg.batch_size} (MADDPG), {coma.n_envs} (COMA)"
    assert on_switch2["$K$"] == f"{maddpg.n_envs}"
