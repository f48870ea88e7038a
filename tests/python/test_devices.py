# SPDX-License-Identifier: Apache-2.0
"""Devices as PyTorch takes them: None and "cuda" (the current one), an int, "cuda:N", or a
torch.device-like object; anything else is refused."""


def test_device_forms(run_python):
    r = run_python("""
        import cudasnap, driver

        class Device:  # what torch.device offers: .type and .index
            def __init__(self, type, index=None):
                self.type, self.index = type, index

        driver.use_device(0)
        a = driver.alloc(2 << 20)
        driver.use_device(1)
        b = driver.alloc(6 << 20)  # device 1 stays current
        forms = {"None": None, "cuda": "cuda", "0": 0, "1": 1, "cuda:0": "cuda:0", "cuda:1": "cuda:1",
                 "Device(cuda,0)": Device("cuda", 0), "Device(cuda)": Device("cuda")}
        answers = {name: [cudasnap.memory_allocated(d), cudasnap.memory_stats(d)["allocated_bytes.all.current"],
                          cudasnap.memory_summary(d).splitlines()[1].split()[-2]]
                   for name, d in forms.items()}
        refused = {}
        for bad in (-1, -2, "cpu", "cuda:x", "cuda:-1", True, 1.5, 64, 10 ** 6, Device("cpu", 0), object(),
                    # beyond the 2 devices of the fake driver, and beyond C's int (issue 46: ctypes
                    # took 4294967296 as device 0)
                    2, "cuda:2", Device("cuda", 2), 2 ** 31 - 1, 2 ** 31, 2 ** 32, "cuda:4294967296",
                    Device("cuda", 2 ** 32), "cuda:\u00b2"):
            try:
                cudasnap.memory_allocated(bad)
                refused[repr(bad)] = None
            except ValueError as err:
                refused[repr(bad)] = str(err)
        driver.report(answers=answers, refused=refused)
    """).result
    a = r["answers"]
    dev0, dev1 = [2 << 20, 2 << 20, "0"], [6 << 20, 6 << 20, "1"]
    assert a["0"] == a["cuda:0"] == a["Device(cuda,0)"] == dev0
    assert a["1"] == a["cuda:1"] == dev1
    assert a["None"] == a["cuda"] == a["Device(cuda)"] == dev1  # the current device
    for bad, message in r["refused"].items():
        assert message and message.startswith("cudasnap: "), bad
    for bad in ("2", "'cuda:2'", "2147483647"):
        assert "the program sees 2 CUDA devices" in r["refused"][bad], r["refused"][bad]
    for bad in ("2147483648", "4294967296", "'cuda:4294967296'"):
        assert r["refused"][bad] == "cudasnap: invalid device ordinal %s" % bad.strip("'cuda:"), r["refused"][bad]


def test_device_count(run_python):
    """Ordinals are checked against the devices the driver sees once the program started CUDA
    (FAKE_CUDA_DEVICES=4 here); before that the count is not known and the library's limit holds,
    but C's int always does. The device count is the driver's, never a load of it."""
    r = run_python("""
        import cudasnap, driver

        def answer(device):
            try:
                return cudasnap.memory_allocated(device)
            except ValueError as err:
                return str(err)

        before = [answer(d) for d in (3, 5, 2 ** 32)]
        driver.use_device(3)
        keep = driver.alloc(1 << 20)
        after = [answer(d) for d in (3, "cuda:3", 4, "cuda:4", 2 ** 32)]
        driver.report(before=before, after=after)
    """, env={"FAKE_CUDA_DEVICES": "4"}).result
    assert r["before"] == [0, 0, "cudasnap: invalid device ordinal 4294967296"]
    assert r["after"][:2] == [1 << 20, 1 << 20]
    assert r["after"][2] == r["after"][3] == "cudasnap: invalid device ordinal 4: the program sees 4 CUDA devices"
    assert r["after"][4] == "cudasnap: invalid device ordinal 4294967296"
