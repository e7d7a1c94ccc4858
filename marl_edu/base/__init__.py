"""The lowest layer: argument checks and limits, atomic files, shapes, schedules, torch threads, pictures."""
