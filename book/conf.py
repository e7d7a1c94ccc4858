"""Sphinx's settings for the course's website (`make site`; tools/site.py lays out its source and runs Sphinx).

The source Sphinx reads is laid out by tools/site.py in _site/source/ as the repository is: notebooks/ holds copies
of the committed notebooks, media/ is a link to the committed folder, results/ holds the pages generated from the
committed runs beside links to their folders. So a notebook's `../media/x.gif` resolves, and every page's path is its path in the repository, which the
Colab button needs. The notebooks are shown with their committed outputs, never executed here (nbval checks them).
"""

import pathlib
import sys
import tomllib

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))  # this folder's extensions
REPOSITORY = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]["Repository"]

project = "marl-edu"
author = "the marl-edu authors"
copyright = "the marl-edu authors; text and media CC BY 4.0, code MIT"

extensions = ["myst_nb", "widget_note", "results_link"]  # the last two: book/*.py
root_doc = "index"
# (results/*/**.md and .ipynb: a note a benchmark leaves beside its runs is no page; the results pages are
# results/*.md. Only pages: Sphinx applies these patterns to html_extra_path too, and a pattern that matched every file
# under results/*/ left out the GIFs that notebooks 15 and 16 show with <img>, which the browser test caught)
exclude_patterns = ["**/.ipynb_checkpoints", "_assets", "_extra", "results/*/**.md", "results/*/**.ipynb"]

# myst-nb: the committed outputs as they are; $...$ and $$...$$ math as the notebooks write it (rendered by MathJax).
nb_execution_mode = "off"
myst_enable_extensions = ["dollarmath", "amsmath"]
nb_ipywidgets_js = {}  # no ipywidgets JavaScript from a CDN: book/widget_note.py puts a note where a panel was
suppress_warnings = ["misc.highlighting_failure"]  # 24's pseudocode in python blocks

html_theme = "sphinx_book_theme"
html_title = "marl-edu: cooperative multi-agent RL, hands on"
html_copy_source = True      # the download button serves each page's source: for a notebook, the committed file
html_sourcelink_suffix = ""  # ... under its own name (notebooks/05_maddpg_training.ipynb), not .ipynb.txt
html_last_updated_fmt = None
html_theme_options = {
    "repository_url": REPOSITORY,
    "repository_branch": "main",
    "path_to_docs": "",
    "use_repository_button": True,
    "use_download_button": True,
    "launch_buttons": {"colab_url": "https://colab.research.google.com"},
    "show_toc_level": 2,
    "home_page_in_toc": True,
}

# Math: MathJax 3 from the site itself (the django-static-mathjax package ships MathJax's files and needs no Django;
# tools/site.py links them into _site/source/_assets/mathjax/), so pages typeset their math with no request to a CDN,
# offline too. Loaded on every page: the sidebar's titles hold math (06's TD(lambda)).
html_static_path = [str(ROOT / "_site" / "source" / "_assets")]
mathjax_path = "mathjax/tex-chtml.js"
html_extra_path = [str(ROOT / "_site" / "source" / "_extra")]  # the images of the notebooks' HTML <img> tags
html_context = {"default_mode": "light"}  # the theme's light mode (with none set it logs an error in the console)


def setup(app):
    app.set_html_assets_policy("always")
