"""What the notebooks show: pictures and widgets (each leaves a PNG in a stored notebook), the
trace of a forward pass, the Explorer and its JavaScript (static/). Imports the core only."""
