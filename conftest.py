"""pytest set-up shared by the unit tests and the notebook run (`pytest --nbval notebooks`).

Notebook 08 builds a model from the pieces a learner saved in my_parts/. Under test it must build
the same model on every machine, so the kernels nbval starts (they inherit this environment) see an
empty folder of their own instead of the learner's.
"""
import os
import tempfile

os.environ["MINITF_MY_PARTS"] = tempfile.mkdtemp(prefix="minitf-my-parts-")
