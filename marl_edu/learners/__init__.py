"""One family of learners per module, each reading like its paper, and ``table``: the one table of them."""
