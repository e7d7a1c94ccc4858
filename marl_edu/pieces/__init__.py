"""Networks and targets the learners are built from."""
