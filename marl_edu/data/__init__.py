"""Rollouts and replays: what a learner's batches are made of, each batch contract checked once."""
