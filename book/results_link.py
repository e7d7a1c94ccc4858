"""A Sphinx extension: a notebook's link to the committed results page (results/README.md, one page in the repository)
leads, on the website, to the results section's first page (results/index), which holds the same tables in one page
per family of tasks (tools/site.py)."""

import posixpath

from sphinx import addnodes
from sphinx.transforms.post_transforms import SphinxPostTransform

RESULTS_PAGE = "results/README.md"
ON_THE_SITE = "results/index"


class ResultsLink(SphinxPostTransform):
    default_priority = 8  # before myst-parser's resolver of Markdown links (9)

    def run(self, **kwargs) -> None:
        folder = posixpath.dirname(self.env.docname)
        for node in self.document.findall(addnodes.pending_xref):
            if node.get("reftype") != "myst":
                continue
            if posixpath.normpath(posixpath.join(folder, node["reftarget"])) == RESULTS_PAGE:
                node["refdomain"], node["reftarget"], node["reftargetid"] = "doc", ON_THE_SITE, None


def setup(app):
    app.add_post_transform(ResultsLink)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
