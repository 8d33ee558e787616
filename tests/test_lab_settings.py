"""`make lab`'s JupyterLab setting (tools/lab_settings.py): windowing mode `none`, as an override
inside the virtual environment, read by JupyterLab's own settings code."""
import json
import re
import sys
from pathlib import Path

from support import ROOT, script

lab_settings = script("tools/lab_settings.py")

SCHEMAS = Path(sys.prefix) / "share" / "jupyter" / "lab" / "schemas"


def effective(prefix: Path, user_settings: Path) -> dict:
    """The notebook plugin's settings as JupyterLab computes them for an app in `prefix`."""
    from jupyterlab_server.settings_utils import get_settings  # imported when used: 0.4 s for every worker otherwise

    app_settings = lab_settings.overrides_path(prefix).parent
    found, _ = get_settings(str(app_settings), str(SCHEMAS), str(user_settings),
                            schema_name=lab_settings.PLUGIN)
    return found


def test_jupyterlab_reads_windowing_mode_none_from_the_venv(tmp_path):
    before = effective(tmp_path, tmp_path / "user")
    assert before["schema"]["properties"]["windowingMode"]["default"] != "none"  # what the fix changes
    path = lab_settings.write(tmp_path)
    assert path == tmp_path / "share/jupyter/lab/settings/overrides.json"
    after = effective(tmp_path, tmp_path / "user")
    assert after["schema"]["properties"]["windowingMode"]["default"] == "none"


def test_other_overrides_are_kept_and_a_second_run_changes_nothing(tmp_path):
    path = lab_settings.overrides_path(tmp_path)
    path.parent.mkdir(parents=True)
    theme = {"@jupyterlab/apputils-extension:themes": {"theme": "JupyterLab Dark"}}
    path.write_text(json.dumps(theme))
    lab_settings.write(tmp_path)
    first = path.read_text()
    lab_settings.write(tmp_path)
    assert path.read_text() == first
    assert json.loads(first) == {**theme, lab_settings.PLUGIN: {"windowingMode": "none"}}


def test_make_lab_writes_it_into_the_venv():
    make = (ROOT / "Makefile").read_text()
    assert re.search(r"^lab: .*\blab-settings\b", make, flags=re.M)
    assert re.search(r"^lab-settings: .*\n\t\$\(PY\) tools/lab_settings\.py", make, flags=re.M)
    assert "windowingMode" in (ROOT / "docs" / "troubleshooting.md").read_text()
