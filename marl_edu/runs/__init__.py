"""One seed of any learner with its figures and files, and run folders."""
