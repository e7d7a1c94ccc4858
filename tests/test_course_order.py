"""The course's order holds and its cross-references resolve (issue 44): nothing is named, counted or reported before
the notebook that teaches it, no symbol is used before the notebook where the cheat sheet's table says it first
appears, and every "notebook NN", "section N" and link to a notebook names something that exists.

1. A learner's name waits for its notebook (``METHODS``: the method, the notebooks that teach it, its spellings).
   In a numbered notebook before the first notebook T that teaches the method:
   - code never names it: a code cell's source (comments too), a fenced block in Markdown, and every text output
     (streams, text/plain, text/markdown, text/html, errors; image data is not read);
   - Markdown names it only as a forward pointer: the same sentence (or table row, list item, heading) also names
     notebook T or a later one ("notebook 10", "notebooks 10 and 11", "10's", "capstone 22", or a link
     ``[...](10_value_decomposition.ipynb)``), and reports no figure: no decimal (8.0), no thousands (1,152), no
     "37 s", "40 minutes", "1800 episodes", "2 networks", "(4)", "3 of 5". "IQL, VDN and QMIX (notebook 10) learn
     one utility per agent" passes; "VDN solves Switch2 in 15 s (notebook 10)" and "VDN solves Switch2" fail.
   Notebook 00 (the map) follows the same rule for every method but MADDPG and COMA, the two the course is built
   around, which 00 introduces (its intro, its "four questions" and its network counts of those two); so its map
   rows name each later method beside the link to its notebook, and a count of another family's networks fails.
   A spelling is matched without regard to case, as a whole word: not inside another word ("mappo" holds no "ppo",
   "reinforces" no "forces"; "forces the agents" is the verb), but a CamelCase join (``MADDPGConfig``,
   ``EnsembleMADDPG``), a plural s and a part of a snake_case name (``central_v-gru``, ``marl_edu.learners.maddpg``) count.
   A match inside a longer one is not read again ("continuous MADDPG" names notebook 17's method, not also MADDPG).
   The target of a Markdown link or image is not read for names (a link is a reference).
2. A symbol waits for the notebook the cheat sheet's symbol table gives in its "first" column: the smallest notebook
   number in that cell, over every row whose symbol cell holds the symbol. Read in the LaTeX ($...$, $$...$$) of the
   Markdown cells and the Markdown outputs of every numbered notebook, code spans and fenced code left out, and the
   lines that translate a paper's notation ("paper writes", "translates") exempt, as in tests/test_notation.py (which
   checks what each symbol means; this file only checks when it may first be used). Only the symbols of ``SYMBOLS``
   are read, the ones a regular expression finds without reading the meaning: the Greek letters the table reserves,
   the calligraphic letters, and the decorated ones (Adv and its superscripts, Q-bar, Q_tot, mu-hat, c_clip, ...);
   single Latin letters (M, E, D, K, p, z) are not.
3. References resolve, in every notebook's Markdown and code source (outputs are not read) and in README.md:
   - "notebook NN", "notebooks NN and MM", "NN, MM and KK", "NN to MM" (both ends), "NN's" and "capstone NN" name an
     existing notebooks/NN_*.ipynb, and "capstone NN" a capstone;
   - "section N" (or "sections N and M") names a "## N." heading of the notebook it belongs to: the one named after
     it ("section 3 of notebook 06"), else the one named last before it in the same clause and at most 40 characters
     before it ("notebook 06, section 3", "06's section 3", "notebook 07, the pitfall of section 4", "notebook 05
     (section 2)", the glossary's "01 (section 6)", "the cheat sheet's section 2"), else, inside a notebook, that
     notebook itself (in code a clause ends with its line). A link counts as the name of its notebook. A paper's
     section ("the paper's section 4", "its section 4.3", "Foerster et al. 2018, section 6") and the README's are
     not read; in README.md only a section of a named notebook is;
   - a Markdown link to a notebook (``(NN_name.ipynb)``, ``(NN_name.ipynb#anchor)``, ``(notebooks/NN_name.ipynb)``, an
     Open-in-Colab address) points at an existing file (and an anchor at one of its headings), and a number that
     opens the link's text is the file's ("[05 COMA critic](06_coma_critic.ipynb)" fails).
Every rule is tested on small synthetic notebooks at the end, so that none can pass by finding nothing.
"""

from __future__ import annotations

import json
import pathlib
import re
from dataclasses import dataclass

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
NOTEBOOK_DIR = ROOT / "notebooks"
CHEAT_SHEET = NOTEBOOK_DIR / "cheat_sheet.ipynb"
README = ROOT / "README.md"


def notebook_number(path: pathlib.Path) -> int | None:
    match = re.match(r"(\d\d)_", path.name)
    return int(match.group(1)) if match else None


ALL_NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
NUMBERED = [path for path in ALL_NOTEBOOKS if notebook_number(path) is not None]

# --------------------------------------------------------------------------------------------------------------------
# 1. The learners' names: (the method, the first and last notebook that teach it, its spellings as regular
# expressions, matched without regard to case; "[-_ ]?" covers central-V, central_v, CentralV, central V).
# --------------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Method:
    name: str
    first: int  # the notebook that teaches it (the first of them)
    last: int  # the last notebook of its teaching (MADDPG 03-05, COMA 06-09)
    spellings: tuple[str, ...]


METHODS = (
    Method("MADDPG", 3, 5, (r"maddpg",)),
    Method("Gumbel-softmax", 4, 4, (r"gumbel",)),
    Method("COMA", 6, 9, (r"coma",)),
    Method("IQL", 10, 11, (r"iql",)),
    Method("VDN", 10, 11, (r"vdn",)),
    Method("QMIX", 10, 11, (r"qmix",)),
    Method("PPO", 12, 13, (r"ppo",)),
    Method("IPPO", 12, 13, (r"ippo",)),
    Method("MAPPO", 12, 13, (r"mappo",)),
    Method("GAE", 12, 13, (r"gae",)),
    Method("central-V", 14, 14, (r"central[-_ ]?v",)),
    Method("central-QV", 14, 14, (r"central[-_ ]?qv",)),
    Method("IAC (IAC-V)", 14, 14, (r"iac(?:[-_]?v)?", r"independent actor[- ]critics?")),
    Method("independent DDPG", 14, 14, (r"independent[-_ ]ddpg", r"iddpg")),
    Method("continuous MADDPG / forces", 17, 18,
           (r"continuous[-_ ]?maddpg", r"(?:mappo|ippo|ppo|ddpg|maddpg)_continuous",
            r"forces?+(?!\s+(?:the|a|an|it|them|its|their|every|each|all|both|one|us|you)\b)",  # not the verb
            # (cooperative navigation with discrete actions, simple_spread_v3_discrete: the discrete learners' task)
            r"cooperative navigation(?! with discrete actions)", r"simple_spread(?!_v3_discrete)",
            r"particle env(?:ironment)?s?")),
    Method("inferred policies", 19, 19, (r"inferred[-_ ]?polic(?:y|ies)",)),
    Method("physical deception", 20, 20, (r"(?:physical[-_ ])?deception", r"simple_adversary")),
    Method("policy ensembles", 21, 21, (r"ensembles?", r"sub[-_ ]?polic(?:y|ies)")),
)
MAP_EXEMPT = {"MADDPG", "COMA"}  # notebook 00 introduces the course's two subjects

NUM = r"(?:[0-2]\d)"
# "notebook 10", "notebooks 10 and 11", "notebooks 06, 07 and 08", "notebooks 17 to 21", "capstones 22 and 23"
LIST = rf"{NUM}(?:(?:\s*,\s*{NUM})*\s*,?\s*(?:and|or|to|through|-|–)\s*{NUM})?"  # "04, 10 updates" reads 04
NAMED_REF = re.compile(rf"\b(notebooks?|capstones?)\s+({LIST})(?![\d.,]\d)", re.IGNORECASE)
POSSESSIVE_REF = re.compile(rf"(?<![\w.,$\\/-])({NUM})'s\b")
LINK = re.compile(r"(!?)\[([^\]\n]*)\]\(\s*([^)\s]+?)\s*(?:\s\"[^\"]*\")?\)")
NOTEBOOK_LINK = re.compile(r"(?:^|/)(\d\d)_[\w.-]*?\.ipynb(?:#|$)")
FIGURE = re.compile(
    r"(?<![\w.])\d+\.\d+(?![\w.])"  # 8.0, 0.43
    r"|(?<![\w.])\d{1,3}(?:,\d{3})+(?![\d])"  # 1,152
    r"|(?<![\w.,])\d+\s*(?:s|sec|seconds?|min|minutes?|%|episodes?|networks?)(?![\w-])"  # 37 s, 1800 episodes
    r"|\(\d{1,2}\)"  # (4): a count in parentheses
    r"|(?<![\w.])\d+ of \d+(?![\w.])"  # 3 of 5
)
ABBREVIATIONS = ("e.g.", "i.e.", "vs.", "cf.", "al.", "etc.", "Fig.", "approx.")


def spelling_pattern(spelling: str) -> re.Pattern:
    return re.compile(spelling, re.IGNORECASE)


def _whole_word(text: str, start: int, end: int) -> bool:
    """A match from start to end is a name, not part of a longer word: a letter may touch it only at a CamelCase join
    (lowercase then an uppercase start, or an uppercase end then an uppercase letter) or as a plural s."""
    before = text[start - 1] if start > 0 else " "
    after = text[end] if end < len(text) else " "
    if before.isalpha() and not (before.islower() and text[start].isupper()):
        return False
    if after.isalpha():
        plural = after == "s" and not (text[end + 1:end + 2].isalpha())
        camel = after.isupper() and text[end - 1].isupper()
        return plural or camel
    return True


def find_methods(text: str, methods=METHODS) -> list[tuple[Method, str]]:
    """Every (method, the words found) that ``text`` names, in the order they appear."""
    return [(method, word) for _, method, word in find_methods_at(text, methods)]


def find_methods_at(text: str, methods=METHODS) -> list[tuple[int, Method, str]]:
    """Every (where, method, the words found) that ``text`` names, in the order they appear."""
    found = []
    for method in methods:
        for spelling in method.spellings:
            for match in spelling_pattern(spelling).finditer(text):
                if _whole_word(text, match.start(), match.end()):
                    found.append((match.start(), match.end(), method, match.group(0)))
    # a match inside a longer one is not a name of its own ("continuous MADDPG" names notebook 17, not also MADDPG)
    return [(start, method, word) for start, end, method, word in sorted(found, key=lambda item: item[:2])
            if not any(s <= start and end <= e and (s, e) != (start, end) for s, e, _, _ in found)]


def referenced_numbers(text: str) -> list[int]:
    """Every notebook number ``text`` names: notebook(s)/capstone(s) NN (a range gives both ends), NN's, and links."""
    numbers = []
    for match in NAMED_REF.finditer(text):
        numbers += [int(n) for n in re.findall(NUM, match.group(2))]
    numbers += [int(n) for n in POSSESSIVE_REF.findall(text)]
    for match in LINK.finditer(text):
        link = NOTEBOOK_LINK.search(match.group(3))
        if link:
            numbers.append(int(link.group(1)))
    return numbers


def strip_link_targets(text: str) -> str:
    """``text`` with each Markdown link's target dropped (its text kept): a path is not a name."""
    return LINK.sub(lambda m: f"{m.group(1)}[{m.group(2)}]()", text)


def figures(unit: str) -> list[str]:
    """The figures a sentence reports: what FIGURE finds once math, references, links and section numbers are out."""
    text = strip_link_targets(unit)
    text = re.sub(r"\$\$.+?\$\$|\$[^$]+\$", " ", text)
    text = NAMED_REF.sub(" ", text)
    text = POSSESSIVE_REF.sub(" ", text)
    text = re.sub(r"\b[Ss]ections?\s+[\d.]+(?:\s*(?:,|and|to)\s*[\d.]+)*", " ", text)
    text = re.sub(r"TD\(\d+(?:\.\d+)?\)", " ", text)
    return [match.group(0) for match in FIGURE.finditer(text)]


def split_fenced(markdown: str) -> tuple[str, list[str]]:
    """A Markdown cell's text without its fenced code blocks, and those blocks (which are read as code)."""
    blocks = re.findall(r"```.*?```", markdown, flags=re.S)
    return re.sub(r"```.*?```", "\n\n", markdown, flags=re.S), blocks


def units(markdown: str) -> list[str]:
    """The sentences of a Markdown text: each table row, heading and list item is one, and a paragraph splits at a
    full stop, question or exclamation mark followed by a space and a capital (not after e.g., i.e., et al.)."""
    blocks = []
    for paragraph in re.split(r"\n\s*\n", markdown):
        current: list[str] = []
        for line in paragraph.splitlines():
            stripped = line.strip()
            starts = stripped.startswith(("|", "#")) or re.match(r"([-*+]|\d+\.)\s", stripped)
            if starts and current:
                blocks.append(" ".join(current))
                current = []
            current.append(stripped)
            if stripped.startswith(("|", "#")):
                blocks.append(" ".join(current))
                current = []
        if current:
            blocks.append(" ".join(current))
    sentences = []
    for block in blocks:
        if block.startswith("|"):
            sentences.append(block)
            continue
        start = 0
        for match in re.finditer(r"[.!?][)*_\"']*\s+(?=[A-Z(\[*_`$→])", block):
            words = block[start:match.start() + 1].split()
            if words and words[-1].endswith(ABBREVIATIONS):
                continue
            sentences.append(block[start:match.end()].strip())
            start = match.end()
        sentences.append(block[start:].strip())
    return [sentence for sentence in sentences if sentence]


def cell_outputs_text(cell: dict) -> list[tuple[str, str]]:
    """(kind, text) of every text output of a code cell: streams, text/plain, text/markdown, text/html, errors."""
    texts = []
    for output in cell.get("outputs", []):
        if "text" in output:
            texts.append(("output", "".join(output["text"])))
        for mime, data in output.get("data", {}).items():
            if mime.startswith("text/") or mime == "application/json":
                texts.append((f"output {mime}", data if isinstance(data, str) else "".join(data)))
        if output.get("output_type") == "error":
            texts.append(("output (error)", "\n".join(output.get("traceback", []))))
    return texts


def excerpt(text: str, word: str, width: int = 90, at: int | None = None) -> str:
    """About ``width`` characters of ``text`` around ``word`` (its first occurrence, or the one at ``at``)."""
    at = max(text.find(word), 0) if at is None else at
    start, end = max(0, at - width // 2), min(len(text), at + len(word) + width // 2)
    snippet = re.sub(r"\s+", " ", text[start:end]).strip()
    return ("..." if start else "") + snippet + ("..." if end < len(text) else "")


def name_violations(number: int, cells: list[dict], methods=METHODS) -> list[str]:
    """Messages for every name in notebook ``number``'s cells that comes before the notebook teaching it."""
    later = [method for method in methods if method.first > number
             and not (number == 0 and method.name in MAP_EXEMPT)]
    wrong = []

    def taught(method: Method) -> str:
        where = f"notebook {method.first:02d}" if method.first == method.last else \
            f"notebooks {method.first:02d}-{method.last:02d}"
        return f"{method.name} is taught in {where}"

    def strict(index: int, kind: str, text: str) -> None:
        for at, method, word in find_methods_at(text, later):
            wrong.append(f"cell {index} ({kind}): \"{word}\": {taught(method)}; {kind} before it may not name it: "
                         f"\"{excerpt(text, word, at=at)}\"")

    for index, cell in enumerate(cells):
        source = "".join(cell["source"])
        if cell["cell_type"] == "code":
            strict(index, "code", source)
            for kind, text in cell_outputs_text(cell):
                strict(index, kind, text)
        elif cell["cell_type"] == "markdown":
            prose, fenced = split_fenced(source)
            for block in fenced:
                strict(index, "fenced code in Markdown", block)
            for unit in units(prose):
                named = find_methods(strip_link_targets(unit), later)
                if not named:
                    continue
                refs = referenced_numbers(unit)
                reported = figures(unit)
                for method, word in named:
                    pointer = any(ref >= method.first for ref in refs)
                    if pointer and not reported:
                        continue
                    why = (f"a forward pointer reports no figure, and this sentence reports {reported}" if pointer
                           else f"name it only in a sentence that also names notebook {method.first:02d}")
                    wrong.append(f"cell {index} (Markdown): \"{word}\": {taught(method)}; {why}: \"{unit[:300]}\"")
    return wrong


def read_cells(path: pathlib.Path) -> list[dict]:
    return json.loads(path.read_text())["cells"]


@pytest.mark.parametrize("path", NUMBERED, ids=lambda path: path.stem)
def test_no_learner_is_named_before_the_notebook_that_teaches_it(path):
    wrong = name_violations(notebook_number(path), read_cells(path))
    assert not wrong, f"{path.name}: {len(wrong)} name(s) before their notebook:\n" + "\n".join(wrong)


def test_the_methods_table_names_teaching_notebooks_that_exist():
    existing = {notebook_number(path) for path in NUMBERED}
    missing = [f"{method.name}: {n:02d}" for method in METHODS
               for n in range(method.first, method.last + 1) if n not in existing]
    assert not missing, "the teaching notebooks of METHODS do not exist: " + ", ".join(missing)


# --------------------------------------------------------------------------------------------------------------------
# 2. Symbols: the ones a regular expression finds reliably in LaTeX, by the name the report uses.
# --------------------------------------------------------------------------------------------------------------------

SYMBOLS = {
    r"\psi": r"\\psi(?![A-Za-z])",
    r"\phi": r"\\phi(?![A-Za-z])",
    r"\lambda": r"\\lambda(?![A-Za-z])",
    r"\epsilon": r"\\epsilon(?![A-Za-z])",
    r"\kappa": r"\\kappa(?![A-Za-z])",
    r"\tau": r"\\tau(?![A-Za-z])",
    r"\gamma": r"\\gamma(?![A-Za-z])",
    r"\beta": r"\\beta(?![A-Za-z])",
    r"\rho": r"\\rho(?![A-Za-z])",
    r"\omega": r"\\omega(?![A-Za-z])",
    r"\xi": r"\\xi(?![A-Za-z])",
    r"\alpha": r"\\alpha(?![A-Za-z])",
    r"\delta": r"\\delta(?![A-Za-z])",
    r"\sigma": r"\\sigma(?![A-Za-z])",
    r"\theta": r"\\theta(?![A-Za-z])",
    r"\mathcal{H}": r"\\mathcal\s*\{?\s*H\b",
    r"\mathcal{D}": r"\\mathcal\s*\{?\s*D\b",
    r"\mathcal{L}": r"\\mathcal\s*\{?\s*L\b",
    r"\bar Q": r"\\bar\s*\{?\s*Q",
    r"\hat\mu": r"\\hat\s*\{?\s*\\mu(?![A-Za-z])",
    r"\hat\sigma": r"\\hat\s*\{?\s*\\sigma(?![A-Za-z])",
    r"\mu^{(m)}": r"\\mu\s*(?:_\{?[^}^]*\}?)?\s*\^\s*\{\s*\(m\)",
    r"Q_{tot}": r"Q_\{\s*(?:\\(?:text|mathrm)\{\s*)?tot",
    r"\mathrm{Adv}": r"\\mathrm\{Adv\}(?!\s*\^)",
    r"\mathrm{Adv}^{GAE}": r"\\mathrm\{Adv\}\s*\^\s*\{?\s*(?:\\(?:text|mathrm)\{\s*)?GAE",
    r"\mathrm{Adv}^{QV}": r"\\mathrm\{Adv\}\s*\^\s*\{?\s*(?:\\(?:text|mathrm)\{\s*)?QV",
    r"\pi_{old}": r"\\pi_\{?\s*\\(?:text|mathrm)\{\s*old",
    r"c_{clip}": r"c_\{?\s*\\(?:text|mathrm)\{\s*clip",
    r"c_{reg}": r"c_\{?\s*\\(?:text|mathrm)\{\s*reg",
    r"\mathrm{dist}": r"\\mathrm\{dist\}",
    r"R^{(n)}": r"R\s*\^\s*\{\s*\(n\)",
    r"\tilde a": r"\\tilde\s*\{?\s*a(?![A-Za-z])",
    r"T_{\max}": r"T_\{?\s*\\max",
    r"\mathbf{x}": r"\\mathbf\{x\}",
    r"\mathbf{a}_{-i}": r"\\mathbf\{a\}_\{\s*-\s*i",
    r"\mathbf{q}": r"\\mathbf\{q\}",
    r"W_1": r"(?<![A-Za-z\\])W_\{?1",
    r"\mathbf{w}_2": r"\\mathbf\{w\}_\{?2",
    r"\mathbf{v}_1": r"\\mathbf\{v\}_\{?1",
}
TRANSLATION = re.compile(r"paper writes|translates", re.IGNORECASE)  # as tests/test_notation.py


def latex_spans(markdown: str) -> list[str]:
    """The LaTeX of every $...$ and $$...$$ in ``markdown``, outside code, without the lines that translate a paper's
    notation."""
    markdown = re.sub(r"```.*?```", " ", markdown, flags=re.S)
    markdown = re.sub(r"`[^`\n]*`", " ", markdown)
    markdown = "\n".join(line for line in markdown.splitlines() if not TRANSLATION.search(line))
    markdown = markdown.replace(r"\$", " ")
    return [a or b for a, b in re.findall(r"\$\$(.+?)\$\$|\$([^$]+?)\$", markdown, flags=re.S)]


def table_cells(row: str) -> list[str]:
    return [cell.strip() for cell in re.split(r"\s\|\s", " " + row.strip().strip("|") + " ")]


def symbol_rows(cells: list[dict]) -> list[tuple[str, str]]:
    """(symbol cell, first cell) of every row of the cheat sheet's symbol table: the tables of its section 1 whose
    last column is "first"."""
    markdown = ""
    for cell in cells:
        source = "".join(cell["source"])
        if cell["cell_type"] != "markdown":
            continue
        if re.search(r"^## 1\.", source, flags=re.M):
            markdown = source
            break
    rows, in_table = [], False
    for line in markdown.splitlines():
        if not line.startswith("|"):
            in_table = False
            continue
        cells_ = table_cells(line)
        if not in_table:
            in_table = cells_[-1] == "first"
            continue
        if set(line) <= set("|-: "):
            continue
        rows.append((cells_[0], cells_[-1]))
    return rows


def first_appearances(rows: list[tuple[str, str]]) -> dict[str, int]:
    """For each symbol of SYMBOLS that the table holds, the smallest notebook number in the "first" cell of any row
    whose symbol cell holds it."""
    first = {}
    for name, pattern in SYMBOLS.items():
        numbers = [int(n) for symbol, where in rows if re.search(pattern, symbol)
                   for n in re.findall(r"(?<![\d.])\d\d(?![\d.])", where)]
        if numbers:
            first[name] = min(numbers)
    return first


def symbol_violations(number: int, cells: list[dict], first: dict[str, int]) -> list[str]:
    wrong = []
    for index, cell in enumerate(cells):
        texts = []
        if cell["cell_type"] == "markdown":
            texts.append(("Markdown", "".join(cell["source"])))
        elif cell["cell_type"] == "code":
            texts += [(kind, text) for kind, text in cell_outputs_text(cell) if kind == "output text/markdown"]
        for kind, text in texts:
            for span in latex_spans(text):
                for name, pattern in SYMBOLS.items():
                    if name in first and first[name] > number and re.search(pattern, span):
                        wrong.append(f"cell {index} ({kind}): ${name}$ first appears in notebook {first[name]:02d} by "
                                     f"the cheat sheet's symbol table (drop it here, or make the table's first "
                                     f"column say {number:02d}): ${span.strip()[:160]}$")
    return wrong


@pytest.fixture(scope="module")
def first_appearance():
    return first_appearances(symbol_rows(read_cells(CHEAT_SHEET)))


def test_the_symbol_table_is_read():
    rows = symbol_rows(read_cells(CHEAT_SHEET))
    # the table holds about 80 rows today; each symbol's row gives a notebook number where it first appears
    assert len(rows) >= 40, rows
    assert not [symbol for symbol, first in rows if "$" in symbol and not re.search(r"\d\d", first)]


def test_every_symbol_read_is_in_the_cheat_sheets_table(first_appearance):
    # without a row, a symbol would never be checked: the test would pass by reading nothing
    missing = sorted(set(SYMBOLS) - set(first_appearance))
    assert not missing, f"no row of the cheat sheet's symbol table (with a 'first' notebook) holds: {missing}"


@pytest.mark.parametrize("path", NUMBERED, ids=lambda path: path.stem)
def test_no_symbol_is_used_before_its_first_notebook(path, first_appearance):
    wrong = symbol_violations(notebook_number(path), read_cells(path), first_appearance)
    assert not wrong, f"{path.name}: {len(wrong)} symbol(s) before the notebook the table gives:\n" + "\n".join(wrong)


# --------------------------------------------------------------------------------------------------------------------
# 3. References: notebooks, sections, links.
# --------------------------------------------------------------------------------------------------------------------

SECTION = re.compile(r"\b[Ss]ections?\s+(\d+(?:\s*(?:,|and|or|to|-|–)\s*\d+)*)(?![\d]|\.\d)")
# what may own a section, named before it: a notebook, the cheat sheet, or something not read (a paper, the README,
# "its": a document named earlier; a year: a citation, "Foerster et al. 2018, section 6")
OWNER_BEFORE = re.compile(
    rf"\b(?:notebook|capstone)\s+({NUM})(?![\d.,]\d)|(?<![\w.,$\\/-])({NUM})(?:'s|\s*\((?=[^()]*$))|(cheat[ _]sheet)"
    r"|(\bpaper|README|\bits\b|\b(?:19|20)\d\d\b)", re.IGNORECASE)
OWNER_AFTER = re.compile(
    rf"^\s+(?:of|in)\s+(?:(?:notebook|capstone)\s+({NUM})\b|the (cheat sheet)|(the paper|the README))", re.IGNORECASE)


def headings(cells: list[dict]) -> set[int]:
    """The numbers of a notebook's "## N." headings."""
    found = set()
    for cell in cells:
        if cell["cell_type"] == "markdown":
            found |= {int(n) for n in re.findall(r"^##\s+(\d+)\.\s", "".join(cell["source"]), flags=re.M)}
    return found


def heading_anchors(cells: list[dict]) -> set[str]:
    anchors = set()
    for cell in cells:
        if cell["cell_type"] == "markdown":
            for title in re.findall(r"^#+\s+(.+?)\s*$", "".join(cell["source"]), flags=re.M):
                anchors.add(re.sub(r"[^a-z0-9]", "", title.lower()))
    return anchors


@dataclass
class Course:
    """What references are checked against: the notebooks by number (and their names), each one's section numbers
    and heading anchors, the cheat sheet's sections."""
    files: dict[int, str]
    sections: dict[int | str, set[int]]
    anchors: dict[str, set[str]]


def course_on_disk() -> Course:
    files = {notebook_number(path): path.name for path in NUMBERED}
    sections: dict[int | str, set[int]] = {notebook_number(path): headings(read_cells(path)) for path in NUMBERED}
    sections["cheat sheet"] = headings(read_cells(CHEAT_SHEET))
    anchors = {path.name: heading_anchors(read_cells(path)) for path in ALL_NOTEBOOKS}
    return Course(files, sections, anchors)


def range_ends(text: str) -> list[int]:
    return [int(n) for n in re.findall(r"\d+", text)]


def links_as_names(text: str) -> str:
    """``text`` with each link to a notebook written as what it names: "[notebook 08](08_coma_training.ipynb)'s
    section 1" reads "notebook 08's section 1", "[cheat sheet](cheat_sheet.ipynb) (section 2)" "cheat sheet (section
    2)"."""
    def name(match: re.Match) -> str:
        target = match.group(3)
        number = NOTEBOOK_LINK.search(target.partition("#")[0] + "#")
        if number:
            return f"notebook {number.group(1)}"
        if re.search(r"(?:^|/)cheat_sheet\.ipynb(?:#|$)", target):
            return "cheat sheet"
        return match.group(0)
    return LINK.sub(name, text)


def section_owner(text: str, match: re.Match, own: int | str | None, code: bool = False) -> int | str | None:
    """The notebook (its number), "cheat sheet", or None (a paper's, the README's, not read) that a "section N" found
    by ``match`` in ``text`` belongs to: the document named after it ("section 3 of notebook 06"), else the last one
    named in its clause at most 40 characters before it ("notebook 06, section 3", "06's section 3", "notebook 05
    (section 2)", "Foerster et al. 2018, section 6"), else ``own``. In code a clause ends with its line."""
    stops = (".\n", ". ", "\n\n", "|") + (("\n",) if code else ())
    clause_start = max(text.rfind(stop, 0, match.start()) for stop in stops)
    before = text[max(clause_start + 1, match.start() - 80):match.start()]
    after = OWNER_AFTER.match(text[match.end():match.end() + 60])
    if after:
        return int(after.group(1)) if after.group(1) else ("cheat sheet" if after.group(2) else None)
    mentions = list(OWNER_BEFORE.finditer(before))
    # the gap may hold words and commas, and one opening parenthesis just before the section ("notebook 05 (section 2)")
    if mentions and re.fullmatch(r"[^.;()\[\]]{0,40}(?:\(\s*)?", before[mentions[-1].end():]):
        last = mentions[-1]
        number = last.group(1) or last.group(2)
        return int(number) if number else ("cheat sheet" if last.group(3) else None)
    return own


def reference_problems(text: str, course: Course, own: int | str | None, where: str, relative_to: str = "",
                       code: bool = False) -> list[str]:
    """Every reference in ``text`` (one cell, or the README) that does not resolve. ``own``: the notebook a bare
    "section N" belongs to (None: the README, where a bare section is not read); ``code``: ``text`` is a code cell's."""
    wrong = []
    for match in NAMED_REF.finditer(text):
        for n in re.findall(NUM, match.group(2)):
            if int(n) not in course.files:
                wrong.append(f"{where}: \"{match.group(0)}\": there is no notebooks/{n}_*.ipynb")
            elif match.group(1).lower().startswith("capstone") and "capstone" not in course.files[int(n)]:
                wrong.append(f"{where}: \"{match.group(0)}\": {course.files[int(n)]} is not a capstone")
    for match in POSSESSIVE_REF.finditer(text):
        if int(match.group(1)) not in course.files:
            wrong.append(f"{where}: \"{match.group(0)}\": there is no notebooks/{match.group(1)}_*.ipynb")
    named = links_as_names(text)
    for match in SECTION.finditer(named):
        owner = section_owner(named, match, own, code)
        if owner is None:
            continue
        if owner not in course.sections:
            continue  # the notebook itself is missing: reported above
        name = "the cheat sheet" if owner == "cheat sheet" else f"notebook {owner:02d}"
        for n in range_ends(match.group(1)):
            if n not in course.sections[owner]:
                context = excerpt(named[max(0, match.start() - 60):], match.group(0))
                wrong.append(f"{where}: \"{match.group(0)}\" ({name}): {name} has no \"## {n}.\" heading (it has "
                             f"{sorted(course.sections[owner])}): \"{context}\"")
    for match in LINK.finditer(text):
        target = match.group(3)
        if ".ipynb" not in target:
            continue
        path_part, _, anchor = target.partition("#")
        colab = re.search(r"/notebooks/([\w.-]+\.ipynb)$", path_part)
        if colab:
            name = colab.group(1)
        elif "://" in path_part:
            continue
        else:
            resolved = (ROOT / relative_to / path_part).resolve()
            if resolved.parent != NOTEBOOK_DIR.resolve():
                wrong.append(f"{where}: link \"{match.group(0)}\" does not point into notebooks/")
                continue
            name = resolved.name
        if name not in course.anchors:
            wrong.append(f"{where}: link \"{match.group(0)}\": notebooks/{name} does not exist")
            continue
        if anchor and re.sub(r"[^a-z0-9]", "", anchor.lower()) not in course.anchors[name]:
            wrong.append(f"{where}: link \"{match.group(0)}\": {name} has no heading for #{anchor}")
        label = re.match(r"\W*(?:notebook\s+|capstone\s+)?(\d\d)\b", match.group(2), flags=re.IGNORECASE)
        number = re.match(r"(\d\d)_", name)
        if label and number and label.group(1) != number.group(1):
            wrong.append(f"{where}: link \"{match.group(0)}\": its text says {label.group(1)}, the file is {name}")
    return wrong


@pytest.fixture(scope="module")
def course():
    return course_on_disk()


@pytest.mark.parametrize("path", ALL_NOTEBOOKS, ids=lambda path: path.stem)
def test_each_notebooks_sections_are_numbered_once_each_in_order(path):
    # a "section N" can only name one heading if the numbers run 1, 2, 3, ... (a capstone's part 0 first), each once
    numbers = [int(n) for cell in read_cells(path) if cell["cell_type"] == "markdown"
               for n in re.findall(r"^##\s+(\d+)\.\s", "".join(cell["source"]), flags=re.M)]
    assert numbers in ([], list(range(1, len(numbers) + 1)), list(range(len(numbers)))), \
        f"{path.name}: its '## N.' headings run {numbers}"


@pytest.mark.parametrize("path", NUMBERED, ids=lambda path: path.stem)
def test_each_notebooks_title_carries_its_own_number(path):
    # the title a learner reads first and the file's name agree ("# 14 · ..." in 14_comparison_switch2.ipynb): a
    # renumbering that moves the file and leaves the title is caught here, as no reference check reads titles
    title = "".join(read_cells(path)[0]["source"]).split("\n", 1)[0]
    assert re.match(rf"# {path.name[:2]} · \S", title), f"{path.name} opens with {title!r}"


@pytest.mark.parametrize("path", ALL_NOTEBOOKS, ids=lambda path: path.stem)
def test_every_reference_in_a_notebook_resolves(path, course):
    own = notebook_number(path) if path != CHEAT_SHEET else "cheat sheet"
    wrong = []
    for index, cell in enumerate(read_cells(path)):
        if cell["cell_type"] in ("markdown", "code"):
            wrong += reference_problems("".join(cell["source"]), course, own, f"cell {index}", "notebooks",
                                        code=cell["cell_type"] == "code")
    assert not wrong, f"{path.name}: {len(wrong)} reference(s) that do not resolve:\n" + "\n".join(wrong)


def test_every_reference_in_the_readme_resolves(course):
    wrong = reference_problems(README.read_text(), course, None, "README.md")
    assert not wrong, f"README.md: {len(wrong)} reference(s) that do not resolve:\n" + "\n".join(wrong)


# a notebook's first cell: "**Time:** about 40 minutes"; the README's row of it: "... | 40 min |"
STATED_TIME = re.compile(r"\*\*Time:\*\*\s*(?:about\s+)?(\d+)\s+minutes")
LISTED_TIME = re.compile(r"\|\s*(\d+) min(?:,[^|]*)?\s*\|\s*$")


def test_the_readmes_times_are_the_notebooks_own():
    # the README lists each notebook with the time its first cell states; a notebook that grows or shrinks says so
    # there first, and the list follows
    listed = {}
    for line in README.read_text().splitlines():
        link = re.search(r"\]\(notebooks/([\w.]+\.ipynb)\)", line)
        if line.startswith("|") and link:
            minutes = LISTED_TIME.search(line)
            assert minutes, f"README.md lists {link.group(1)} without its time ('| N min |'): {line[:80]}"
            listed[link.group(1)] = int(minutes.group(1))
    assert set(listed) == {path.name for path in ALL_NOTEBOOKS}
    for path in ALL_NOTEBOOKS:
        first = " ".join("".join(json.loads(path.read_text())["cells"][0]["source"]).split())
        stated = STATED_TIME.findall(first)
        assert len(stated) == 1, f"{path.name}: its first cell states no '**Time:** about N minutes'"
        assert listed[path.name] == int(stated[0]), f"README.md lists {path.name} at {listed[path.name]} min, " \
            f"its first cell says {stated[0]}"
    # notebook 00 states the whole course's time: the README's minutes added up, to the nearest hour
    first_cell = json.loads((NOTEBOOK_DIR / "00_overview.ipynb").read_text())["cells"][0]["source"]
    overview = " ".join("".join(first_cell).split())
    hours = re.search(r"the whole course: about (\d+) hours", overview)
    assert hours and int(hours.group(1)) == round(sum(listed.values()) / 60), (hours, sum(listed.values()))


# --------------------------------------------------------------------------------------------------------------------
# Self-tests: each rule on small synthetic notebooks.
# --------------------------------------------------------------------------------------------------------------------


def markdown(text: str) -> dict:
    return {"cell_type": "markdown", "source": [text], "metadata": {}}


def code(text: str, output: str = "") -> dict:
    outputs = [{"output_type": "stream", "name": "stdout", "text": [output]}] if output else []
    return {"cell_type": "code", "source": [text], "metadata": {}, "outputs": outputs, "execution_count": 1}


def words_found(messages: list[str]) -> list[str]:
    return [re.search(r'\): "([^"]*)"', message).group(1) for message in messages]


def test_a_later_learner_named_in_prose_code_or_output_is_caught():
    cells = [markdown("## 1. Start\n\nVDN learns one utility per agent."),
             code("from marl_edu.learners.value_decomposition import QMIX\nagent = QMIX()"),
             code("print(1)", output="central_v solved 3 seeds\n")]
    messages = name_violations(4, cells)
    assert words_found(messages) == ["VDN", "QMIX", "QMIX", "central_v"]
    assert "cell 0 (Markdown)" in messages[0] and "notebook 10" in messages[0]
    assert "cell 1 (code)" in messages[1] and "cell 2 (output)" in messages[3]


def test_a_forward_pointer_is_allowed_and_one_that_reports_is_not():
    allowed = [markdown("IQL, VDN and QMIX (notebook 10) learn one utility per agent. Central-V is in "
                        "[14](14_comparison_switch2.ipynb). Notebooks 17 to 21 go further: forces, ensembles."),
               markdown("| method | where |\n|---|---|\n| MAPPO | notebook 12 |")]
    assert name_violations(4, allowed) == []
    reporting = [markdown("VDN solves Switch2 in 15 s (notebook 10)."),
                 markdown("QMIX adds a mixing network and its target (4). See notebook 10."),
                 markdown("MAPPO (notebook 09) is fast.")]  # points at the wrong notebook
    messages = name_violations(4, reporting)
    assert words_found(messages) == ["VDN", "QMIX", "MAPPO"]
    assert "reports ['15 s']" in messages[0]
    # a forward pointer in code is no pointer: code never names a later learner
    assert words_found(name_violations(4, [code("# notebook 10 teaches vdn\nx = 1")])) == ["vdn"]


def test_names_are_matched_as_whole_words_with_their_case_and_hyphen_variants():
    found = lambda text: [(method.name, word) for method, word in find_methods(text)]  # noqa: E731
    assert found("central-V, CentralV, central_v and central-QV; IAC-V, iac; IDDPG, independent DDPG") == [
        ("central-V", "central-V"), ("central-V", "CentralV"), ("central-V", "central_v"),
        ("central-QV", "central-QV"), ("IAC (IAC-V)", "IAC-V"), ("IAC (IAC-V)", "iac"),
        ("independent DDPG", "IDDPG"), ("independent DDPG", "independent DDPG")]
    assert found("MAPPOConfig and ippo, VDNs") == [("MAPPO", "MAPPO"), ("IPPO", "ippo"), ("VDN", "VDN")]
    assert found("oppose, maniacs, algae, comma, reinforces, assemble, central value, it forces the agents") == []
    assert found("random forces, a force in [-1, 1]") == [("continuous MADDPG / forces", "forces"),
                                                         ("continuous MADDPG / forces", "force")]
    assert found("cooperative navigation with discrete actions, simple_spread_v3_discrete") == []
    assert found("cooperative navigation, simple_spread_v3") == [
        ("continuous MADDPG / forces", "cooperative navigation"), ("continuous MADDPG / forces", "simple_spread")]
    assert found("[the map](11_ppo.ipynb)") != [] and find_methods(strip_link_targets("[the map](11_ppo.ipynb)")) == []


def test_the_map_may_introduce_maddpg_and_coma_but_not_count_the_others():
    cells = [markdown("Implement **MADDPG** and **COMA** yourself: MADDPG builds $4N$ networks."),
             markdown("| learner | networks |\n|---|---|\n| VDN | 2 |\n"
                      "| [10 value decomposition](10_value_decomposition.ipynb) | IQL, VDN, QMIX |")]
    assert words_found(name_violations(0, cells)) == ["VDN"]
    assert words_found(name_violations(1, cells[:1])) == ["MADDPG", "COMA", "MADDPG"]


def test_units_split_sentences_rows_and_items_but_not_abbreviations():
    assert units("A first, e.g. this. Then VDN (notebook 09).\n- an item\n| a | b |\n# Head") == [
        "A first, e.g. this.", "Then VDN (notebook 09).", "- an item", "| a | b |", "# Head"]


def test_referenced_numbers_read_every_form():
    text = ("notebook 03, notebooks 04 and 05, notebooks 06, 07 and 08, notebooks 13 to 16, 09's table, capstone 17,"
            " [x](10_ppo.ipynb#sec), Notebook 11, 5 seeds, 2017")
    assert referenced_numbers(text) == [3, 4, 5, 6, 7, 8, 13, 16, 17, 11, 9, 10]
    assert referenced_numbers("notebook 04, 10 updates later; notebooks 06, 07") == [4, 6]


SYNTHETIC_TABLE = [markdown("## 1. The symbol table\n\n| symbol | meaning | first |\n|---|---|---|\n"
                            "| $\\psi_i$, $\\psi$ | a critic's parameters | 03 ($\\theta_i$) |\n"
                            "| $\\lambda$ | TD($\\lambda$) | 06 |\n| $\\mathrm{Adv}_{i,t}$ | advantage | 00 |\n"
                            "| $\\mathrm{Adv}^{\\text{GAE}}_{i,t}$ | GAE | 10 |\n\n## 2. Next")]


def test_a_symbol_before_its_first_notebook_is_caught_and_translations_are_not():
    first = first_appearances(symbol_rows(SYNTHETIC_TABLE))
    assert first == {r"\psi": 3, r"\lambda": 6, r"\mathrm{Adv}": 0, r"\mathrm{Adv}^{GAE}": 10}
    cells = [markdown("The critic $Q_{\\psi}$ and TD($\\lambda$), then $\\mathrm{Adv}_{i,t}$ and "
                      "$\\mathrm{Adv}^{\\text{GAE}}_{i,t}$.\nThe paper writes $\\lambda_i$ here."),
             code("x = 1  # $\\lambda$ in code is not read")]
    messages = symbol_violations(2, cells, first)
    assert [re.search(r"\$(.*?)\$ first", message).group(1) for message in messages] == [
        r"\psi", r"\lambda", r"\mathrm{Adv}^{GAE}"]
    assert symbol_violations(10, cells, first) == []


SYNTHETIC_COURSE = Course(files={3: "03_maddpg_critic.ipynb", 6: "06_coma_critic.ipynb",
                                 17: "17_capstone_maddpg.ipynb"},
                          sections={3: {1, 2}, 6: {1, 2, 3}, 17: {0, 1}, "cheat sheet": {1, 2, 3, 4}},
                          anchors={"03_maddpg_critic.ipynb": {"1thecritic"}, "06_coma_critic.ipynb": set(),
                                   "17_capstone_maddpg.ipynb": set(), "cheat_sheet.ipynb": set()})


def problems(text: str, own=3) -> list[str]:
    return reference_problems(text, SYNTHETIC_COURSE, own, "cell 0", "notebooks")


def test_references_that_resolve_pass():
    text = ("As notebook 06, section 3 shows (and 06's section 2, section 3 of notebook 06, notebook 03's section 1),"
            " section 2 here, sections 1 and 2, the cheat sheet's section 4, the paper's section 7, its section 4.3,"
            " capstone 17, notebooks 03 and 06, [critic](03_maddpg_critic.ipynb#1.-The-critic), "
            "[06 COMA](06_coma_critic.ipynb), [Colab](https://colab.research.google.com/github/x/y/blob/main/"
            "notebooks/03_maddpg_critic.ipynb), the MADDPG paper (Lowe et al., 2017), 5 seeds.")
    assert problems(text) == []
    assert problems("| **bootstrap** | Complete a target. | 03 (section 2), 06 (section 3) |") == []


@pytest.mark.parametrize("text, problem", [
    ('notebook 05 trains it', '"notebook 05": there is no notebooks/05_*.ipynb'),
    ('notebooks 03 to 12', '"notebooks 03 to 12": there is no notebooks/12_*.ipynb'),
    ("as 09's table", '"09\'s": there is no notebooks/09_*.ipynb'),
    ('capstone 06', '"capstone 06": 06_coma_critic.ipynb is not a capstone'),
    ('section 5 shows', '"section 5" (notebook 03): notebook 03 has no "## 5." heading'),
    ('(notebook 06, the pitfall of section 4)', '"section 4" (notebook 06): notebook 06 has no "## 4." heading'),
    ('section 9 of notebook 06', '"section 9" (notebook 06): notebook 06 has no "## 9." heading'),
    ("the cheat sheet's section 7", '"section 7" (the cheat sheet): the cheat sheet has no "## 7." heading'),
    ("the [cheat sheet](cheat_sheet.ipynb) lists them (section 7)", '"section 7" (the cheat sheet)'),
    ("[notebook 06](06_coma_critic.ipynb)'s section 5", '"section 5" (notebook 06)'),
    ("Notebook 06 (section 8) measures it", '"section 8" (notebook 06)'),
    ("| 06 (section 4), 03 |", '"section 4" (notebook 06)'),
    ("Notebook 06 trains it; section 4 here", '"section 4" (notebook 03)'),
    ("[x](12_value_decomposition.ipynb)", "notebooks/12_value_decomposition.ipynb does not exist"),
    ("[x](03_maddpg_critic.ipynb#nowhere)", "03_maddpg_critic.ipynb has no heading for #nowhere"),
    ("[05 COMA critic](06_coma_critic.ipynb)", "its text says 05, the file is 06_coma_critic.ipynb"),
])
def test_a_reference_that_does_not_resolve_is_caught(text, problem):
    found = problems(text)
    assert len(found) == 1 and problem in found[0], found


def test_a_section_in_code_belongs_to_its_own_line_and_a_papers_is_not_read():
    code = "x = 1  # notebook 06, section 3\ny = 2  # section 3: the runs"
    assert len(reference_problems(code, SYNTHETIC_COURSE, 3, "cell 0", "notebooks", code=True)) == 1
    assert len(reference_problems(code, SYNTHETIC_COURSE, 3, "cell 0", "notebooks", code=False)) == 0
    assert problems("as the COMA paper ran them (Foerster et al. 2018, section 6)") == []


def test_a_bare_section_in_the_readme_is_not_read():
    assert problems("section 9 of the README; notebook 03, section 2", own=None) == []
    assert len(problems("notebook 03, section 9", own=None)) == 1
