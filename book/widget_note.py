"""A Sphinx extension: where a notebook's committed output is a slider panel (an ipywidgets view), the page shows a
note that the panel runs in JupyterLab or Colab, with this notebook's Colab link, instead of the panel's dead state.

A panel needs a running kernel: a static page can show at most its last drawn state, whose sliders would move nothing.
myst-nb renders such an output as a <script type="application/vnd.jupyter.widget-view+json"> element; this replaces
each one. Every other output is shown as committed.
"""

from docutils import nodes
from sphinx.transforms.post_transforms import SphinxPostTransform

WIDGET_VIEW = '<script type="application/vnd.jupyter.widget-view+json">'
COLAB = "https://colab.research.google.com/github/{repository}/blob/{branch}/{docname}.ipynb"


def colab_url(repository_url: str, branch: str, docname: str) -> str:
    """The Colab address of the notebook ``docname`` (its path in the repository, without .ipynb)."""
    repository = repository_url.removeprefix("https://github.com/").strip("/")
    return COLAB.format(repository=repository, branch=branch, docname=docname)


class WidgetNote(SphinxPostTransform):
    default_priority = 200
    formats = ("html",)

    def run(self, **kwargs) -> None:
        options = self.config.html_theme_options
        url = colab_url(options["repository_url"], options["repository_branch"], self.env.docname)
        for raw in list(self.document.findall(nodes.raw)):
            if not raw.astext().startswith(WIDGET_VIEW):
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
