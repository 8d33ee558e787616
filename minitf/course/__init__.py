"""The course: its exercises, the feedback that names a learner's mistake, the reference
solutions, the learner's saved pieces and the model assembled from them. Imports the core only."""
