"""The Transformer library: bytes as tokens, the model and its pieces, data, training, evaluation,
generation, checkpoints and Origami. It imports nothing else of minitf, so it can be read, tested
and reused on its own."""
