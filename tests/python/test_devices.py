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
        for bad in (-1, -2, "cpu", "cuda:x", "cuda:-1", True, 1.5, 64, 10 ** 6, Device("cpu", 0), object()):
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
