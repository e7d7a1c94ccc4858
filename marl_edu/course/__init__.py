"""What the learner touches: the command line, widgets, exercise checkers, capstones, the answer key."""
