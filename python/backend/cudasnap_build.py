# SPDX-License-Identifier: Apache-2.0
"""The build backend of the cudasnap Python package (PEP 517, PEP 660), in the standard library
alone: `pip install ./python` needs no setuptools, no `wheel` and no package index, so it works
on a machine without network (docs/python.md, "Installing"). The package is pure Python; a wheel
is a zip of its files and a dist-info folder (the wheel format, PEP 427)."""

import base64
import hashlib
import io
import os
import re
import tarfile
import time
import zipfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # python/
PACKAGE = "cudasnap"
TAG = "py3-none-any"


def _project():
    """name, version, description and requires-python from pyproject.toml's [project] table (a
    few flat string keys: read without a TOML parser, which Python has only from 3.11)."""
    with open(os.path.join(HERE, "pyproject.toml"), encoding="utf-8") as f:
        text = f.read()
    table = re.search(r"^\[project\]\s*$(.*?)(?=^\[|\Z)", text, re.S | re.M).group(1)
    return dict(re.findall(r'^([A-Za-z-]+)\s*=\s*"([^"]*)"\s*$', table, re.M))


def _metadata(project):
    lines = ["Metadata-Version: 2.1", "Name: " + project["name"], "Version: " + project["version"],
             "Summary: " + project.get("description", ""), "Requires-Python: " + project.get("requires-python", "")]
    return ("\n".join(lines) + "\n").encode()


def _dist_info(project):
    return "%s-%s.dist-info" % (project["name"], project["version"])


def _package_files():
    """(path in the wheel, bytes) of every module of the package, in a fixed order."""
    root = os.path.join(HERE, PACKAGE)
    out = []
    for name in sorted(os.listdir(root)):
        if name.endswith(".py"):
            with open(os.path.join(root, name), "rb") as f:
                out.append(("%s/%s" % (PACKAGE, name), f.read()))
    return out


def _record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (path, digest, len(data))


def _write_wheel(directory, files):
    project = _project()
    name = "%s-%s-%s.whl" % (project["name"], project["version"], TAG)
    info = _dist_info(project)
    wheel_text = "Wheel-Version: 1.0\nGenerator: cudasnap_build\nRoot-Is-Purelib: true\nTag: %s\n" % TAG
    files = list(files) + [(info + "/METADATA", _metadata(project)), (info + "/WHEEL", wheel_text.encode()),
                           (info + "/top_level.txt", (PACKAGE + "\n").encode())]
    record = "".join(_record_line(p, d) + "\n" for p, d in files) + info + "/RECORD,,\n"
    files.append((info + "/RECORD", record.encode()))
    with zipfile.ZipFile(os.path.join(directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in files:
            entry = zipfile.ZipInfo(path, date_time=(2020, 1, 1, 0, 0, 0))
            entry.external_attr = 0o644 << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(entry, data)
    return name


# ---- PEP 517 ----

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory, _package_files())


def build_sdist(sdist_directory, config_settings=None):
    project = _project()
    base = "%s-%s" % (project["name"], project["version"])
    name = base + ".tar.gz"
    paths = ["pyproject.toml", "backend/cudasnap_build.py"] + [p for p, _ in _package_files()]
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for path in paths:
            tar.add(os.path.join(HERE, path), arcname="%s/%s" % (base, path))
        info = tarfile.TarInfo("%s/PKG-INFO" % base)
        data = _metadata(project)
        info.size, info.mtime, info.mode = len(data), int(time.time()), 0o644
        tar.addfile(info, io.BytesIO(data))
    return name


# ---- PEP 660: `pip install -e ./python` (the package is imported from this folder) ----

def get_requires_for_build_editable(config_settings=None):
    return []


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory, [(PACKAGE + ".pth", (HERE + "\n").encode())])
