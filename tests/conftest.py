import matplotlib

matplotlib.use("Agg")  # unit tests draw figures without a screen (notebooks keep their inline backend)
