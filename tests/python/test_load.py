# SPDX-License-Identifier: Apache-2.0
"""cudasnap.load: a snapshot file as the Python objects pickle.load gives for PyTorch's own file,
JSON or pickle alike, and never code from a pickle."""

import io
import json
import os
import pickle
import sys

import pytest

from conftest import SOURCE

sys.path.insert(0, os.path.join(SOURCE, "python"))
import cudasnap  # noqa: E402 - from this checkout, as the programs the tests run import it

TRACES = os.path.join(SOURCE, "tests", "data", "traces")


class Reference(pickle.Unpickler):
    """What pickle.load gives for a snapshot, without running a global (tests/data/traces/README.md)."""

    def find_class(self, module, name):
        raise AssertionError("a snapshot names no global: %s.%s" % (module, name))


def reference(path):
    with open(path, "rb") as f:
        return Reference(f).load()


def lists(value):
    """The JSON form of a value: tuples are lists."""
    if isinstance(value, dict):
        return {k: lists(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [lists(v) for v in value]
    return value


def has_tuple(value):
    if isinstance(value, tuple):
        return True
    if isinstance(value, dict):
        return any(has_tuple(v) for v in value.values())
    if isinstance(value, list):
        return any(has_tuple(v) for v in value)
    return False


@pytest.mark.parametrize("name", ["cs336-MAGMA27_memory_snapshot_pythononly.pickle",
                                  "ftcourse-cranberrii_memory_snapshot.pickle"])
def test_pytorchs_pickle_loads_as_pickle_load_gives_it(name):
    original = os.path.join(TRACES, name)
    loaded = cudasnap.load(original)
    assert loaded == reference(original) and type(loaded) is dict
    assert has_tuple(loaded)  # segment_pool_id: kept a tuple, as pickle.load gives it


def test_a_convert_pair_loads_equal(tool, tmp_path):
    original = os.path.join(TRACES, "cs336-MAGMA27_memory_snapshot_pythononly.pickle")
    expected = reference(original)
    as_json = tmp_path / "converted.json"
    tool("convert", original, as_json)
    from_json = cudasnap.load(as_json)
    with open(as_json, "rb") as f:
        assert from_json == json.load(f)
    assert from_json == lists(expected)  # equal, but for JSON's lists where the pickle has tuples
    back = tmp_path / "back.pickle"
    tool("convert", as_json, back)
    assert cudasnap.load(back) == reference(back)
    assert lists(cudasnap.load(back)) == from_json  # the pickle writer makes segment_pool_id a tuple again


def test_cudasnaps_own_snapshot_in_both_formats(run_python, tool, tmp_path):
    run_python("""
        import cudasnap, driver
        with cudasnap.phase("load test"):
            keep = [driver.alloc(n) for n in (4096, 3 << 20)]
        cudasnap.dump_snapshot("own.json")
        cudasnap.dump_snapshot("own.pickle")
    """)
    own_json, own_pickle = tmp_path / "own.json", tmp_path / "own.pickle"
    from_json, from_pickle = cudasnap.load(own_json), cudasnap.load(own_pickle)
    assert from_pickle == reference(own_pickle)
    with open(own_json, "rb") as f:
        assert from_json == json.load(f)
    assert [a["name"] for a in from_json["external_annotations"]] == ["load test", "load test"]
    assert from_json["segments"] == lists(from_pickle["segments"])
    # the second dump's history has one entry more: the `snapshot` entry the first one left
    events = [e for e in from_pickle["device_traces"][0] if e["action"] != "snapshot"]
    assert from_json["device_traces"][0] == lists(events)
    for ours, theirs in ((own_json, tmp_path / "own-converted.pickle"), (own_pickle, tmp_path / "own-converted.json")):
        tool("convert", ours, theirs)
        assert lists(cudasnap.load(theirs)) == lists(cudasnap.load(ours))


def test_file_objects_and_streams(tmp_path):
    original = os.path.join(TRACES, "cs336-MAGMA27_memory_snapshot_pythononly.pickle")
    expected = reference(original)
    with open(original, "rb") as f:
        assert cudasnap.load(f) == expected
    with open(original, "rb") as f:
        data = f.read()
    r, w = os.pipe()  # a stream that cannot seek
    pid = os.fork()
    if pid == 0:
        os.close(r)
        with os.fdopen(w, "wb") as out:
            out.write(data)
        os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as stream:
        assert cudasnap.load(stream) == expected
    os.waitpid(pid, 0)
    assert cudasnap.load(io.BytesIO(b' {"segments": [], "device_traces": []}')) == {"segments": [], "device_traces": []}


class Payload:
    def __reduce__(self):
        return (os.mkdir, (self.path,))


def test_a_pickle_that_would_run_code_is_refused(tmp_path):
    payload = Payload()
    payload.path = str(tmp_path / "ran")
    evil = tmp_path / "evil.pickle"
    evil.write_bytes(pickle.dumps({"segments": [payload]}, protocol=4))
    with pytest.raises(pickle.UnpicklingError, match="refers to posix.mkdir"):
        cudasnap.load(evil)
    assert not os.path.exists(payload.path)


def test_not_a_snapshot(tmp_path):
    empty, text = tmp_path / "empty", tmp_path / "text"
    empty.write_bytes(b"")
    text.write_bytes(b"hello")
    with pytest.raises(ValueError, match="is empty"):
        cudasnap.load(empty)
    with pytest.raises(ValueError, match="neither a pickle nor JSON"):
        cudasnap.load(text)
