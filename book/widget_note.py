"""A Sphinx extension: where a notebook's committed output is a slider panel (an ipywidgets view), the page shows a
note that the panel runs in JupyterLab or Colab, with this notebook's Colab link, instead of the panel's dead state.
A progress bar (tqdm's, an ipywidgets view too, under every cell that trains) is not a panel: it becomes one quiet
line saying so, as the cell's own printout below it gives the result.

A panel needs a running kernel: a static page can show at most its last drawn state, whose sliders would move nothing.
myst-nb renders such an output as a <script type="application/vnd.jupyter.widget-view+json"> element; this replaces
each one. Every other output is shown as committed.
"""

import json
import pathlib

from docutils import nodes
from sphinx.transforms.post_transforms import SphinxPostTransform

WIDGET_VIEW = '<script type="application/vnd.jupyter.widget-view+json">'
COLAB = "https://colab.research.google.com/github/{repository}/blob/{branch}/{docname}.ipynb"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
PROGRESS_MODELS = {"FloatProgressModel", "IntProgressModel"}  # what a tqdm bar is made of (HBox: label, bar, counts)


def colab_url(repository_url: str, branch: str, docname: str) -> str:
    """The Colab address of the notebook ``docname`` (its path in the repository, without .ipynb)."""
    repository = repository_url.removeprefix("https://github.com/").strip("/")
    return COLAB.format(repository=repository, branch=branch, docname=docname)


def progress_bars(notebook: dict) -> set[str]:
    """The model ids of ``notebook``'s widget views that are progress bars: a model whose children hold a progress
    model (the widget state nbconvert saves in the notebook's metadata; none saved: none found)."""
    state = notebook.get("metadata", {}).get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    names = {model_id: model.get("model_name") for model_id, model in state.items()}
    return {model_id for model_id, model in state.items()
            if any(names.get(str(child).removeprefix("IPY_MODEL_")) in PROGRESS_MODELS
                   for child in model.get("state", {}).get("children", []))}


def model_id(raw_text: str) -> str | None:
    """The model id of a widget view's script element (None if it has none)."""
    try:
        return json.loads(raw_text[len(WIDGET_VIEW):].rsplit("</script>", 1)[0]).get("model_id")
    except ValueError:
        return None


class WidgetNote(SphinxPostTransform):
    default_priority = 200
    formats = ("html",)

    def run(self, **kwargs) -> None:
        options = self.config.html_theme_options
        url = colab_url(options["repository_url"], options["repository_branch"], self.env.docname)
        source = pathlib.Path(self.env.doc2path(self.env.docname))
        bars = progress_bars(json.loads(source.read_text())) if str(source).endswith(".ipynb") else set()
        for raw in list(self.document.findall(nodes.raw)):
            if not raw.astext().startswith(WIDGET_VIEW):
                continue
            if model_id(raw.astext()) in bars:
                line = nodes.paragraph(classes=["widget-progress"])
                line += nodes.emphasis(text="(a progress bar, shown while the cell runs)")
                raw.replace_self(line)
                continue
            note = nodes.admonition(classes=["note", "widget-note"])
            note += nodes.title(text="A panel runs here in JupyterLab or Colab")
            paragraph = nodes.paragraph()
            paragraph += nodes.Text("This cell draws a slider panel (ipywidgets), which needs a running notebook: run it "
                                    "in JupyterLab (make lab) or ")
            paragraph += nodes.reference(text="open this notebook in Colab", refuri=url,
                                         classes=["widget-note-colab"])
            paragraph += nodes.Text(". A web page cannot run it, so it is not shown here.")
            note += paragraph
            raw.replace_self(note)


def setup(app):
    app.add_post_transform(WidgetNote)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
