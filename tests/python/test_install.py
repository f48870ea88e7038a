# SPDX-License-Identifier: Apache-2.0
"""Installing the package: the wheel its build backend makes is valid (checked here by reading it,
as any installer would), and `pip install ./python` works without setuptools, `wheel` or an index,
where this interpreter has pip."""

import base64
import hashlib
import importlib.util
import os
import subprocess
import sys
import zipfile

import pytest

from conftest import SOURCE

PACKAGE_DIR = os.path.join(SOURCE, "python")


def backend():
    spec = importlib.util.spec_from_file_location("cudasnap_build", os.path.join(PACKAGE_DIR, "backend", "cudasnap_build.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def project_version():
    with open(os.path.join(SOURCE, "CMakeLists.txt")) as f:
        for line in f:
            if line.startswith("project(cudasnap VERSION "):
                return line.split()[2]
    raise AssertionError("no project version in CMakeLists.txt")


def test_versions_agree():
    sys.path.insert(0, PACKAGE_DIR)
    import cudasnap
    assert backend()._project()["version"] == cudasnap.__version__ == project_version()


def test_the_wheel_is_complete_and_its_record_true(tmp_path):
    name = backend().build_wheel(str(tmp_path))
    assert name == "cudasnap-%s-py3-none-any.whl" % project_version()
    with zipfile.ZipFile(str(tmp_path / name)) as wheel:
        names = wheel.namelist()
        modules = sorted(n for n in os.listdir(os.path.join(PACKAGE_DIR, "cudasnap")) if n.endswith(".py"))
        assert sorted(n for n in names if n.startswith("cudasnap/")) == ["cudasnap/" + m for m in modules]
        info = "cudasnap-%s.dist-info/" % project_version()
        assert "Root-Is-Purelib: true" in wheel.read(info + "WHEEL").decode()
        metadata = wheel.read(info + "METADATA").decode()
        assert "Name: cudasnap\n" in metadata and "Version: %s\n" % project_version() in metadata
        record = [line.split(",") for line in wheel.read(info + "RECORD").decode().splitlines()]
        assert sorted(r[0] for r in record) == sorted(names)
        for path, digest, size in record:
            if path == info + "RECORD":
                assert digest == size == ""
                continue
            data = wheel.read(path)
            assert digest == "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            assert int(size) == len(data)


def test_the_sdist_builds_again(tmp_path):
    import tarfile
    name = backend().build_sdist(str(tmp_path))
    with tarfile.open(str(tmp_path / name)) as sdist:
        sdist.extractall(str(tmp_path / "unpacked"))
    root = tmp_path / "unpacked" / name[:-len(".tar.gz")]
    assert (root / "PKG-INFO").exists() and (root / "pyproject.toml").exists()
    out = subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, 'backend'); import cudasnap_build; "
                          "print(cudasnap_build.build_wheel(sys.argv[1]))", str(tmp_path)],
                         cwd=str(root), stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout
    assert out.strip().endswith("-py3-none-any.whl")


def has_pip():
    return subprocess.run([sys.executable, "-m", "pip", "--version"], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode == 0


@pytest.mark.skipif(not has_pip(), reason="this Python has no pip (Debian: python3-pip)")
@pytest.mark.parametrize("isolation", ["isolated", "no-build-isolation"])
def test_pip_install_without_an_index(run_python, tmp_path, isolation):
    target = tmp_path / "site"
    command = [sys.executable, "-m", "pip", "install", "--no-index", "--no-cache-dir", "--disable-pip-version-check",
               "--target", str(target), PACKAGE_DIR]
    if isolation == "no-build-isolation":
        command.insert(4, "--no-build-isolation")
    env = dict(os.environ, PIP_FIND_LINKS="", PIP_NO_INPUT="1")
    proc = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, env=env)
    assert proc.returncode == 0, proc.stdout
    assert (target / "cudasnap" / "memory.py").exists()
    r = run_python("""
        import cudasnap, driver
        keep = driver.alloc(3 << 20)
        driver.report(file=cudasnap.__file__, allocated=cudasnap.memory_allocated())
    """, env={"PYTHONPATH": os.pathsep.join([str(target), os.path.dirname(__file__)])}).result
    assert r["file"].startswith(str(target))
    assert r["allocated"] == 4 << 20
