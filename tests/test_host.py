"""experiments/record/host.py: host fingerprint (fake /proc + /etc tree, fake NVML) and the host-speed probe on the
CPU."""
import hashlib
import time
from pathlib import Path
from types import SimpleNamespace

from fake_nvml import FakeNVML

from experiments.record import gpu, host

CPUINFO = """processor\t: 0
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 143
model name\t: Intel(R) Xeon(R) Processor
stepping\t: 8
cpu MHz\t\t: 2000.000
flags\t\t: sse fpu hypervisor avx

processor\t: 1
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 143
model name\t: Intel(R) Xeon(R) Processor
stepping\t: 8
cpu MHz\t\t: 2601.000
flags\t\t: avx fpu sse hypervisor
"""


def sha12(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def fake_root(tmp_path: Path, machine_id="0123abcd", boot_id="boot-1", cpuinfo=CPUINFO, dbus=False) -> Path:
    root = tmp_path / "root"
    files = {"proc/cpuinfo": cpuinfo, "proc/meminfo": "MemTotal:        3145728 kB\nMemFree:  1 kB\n",
             "proc/sys/kernel/osrelease": "6.1.0-test\n", "proc/sys/kernel/random/boot_id": f"{boot_id}\n"}
    if machine_id:
        files["var/lib/dbus/machine-id" if dbus else "etc/machine-id"] = f"{machine_id}\n"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


class PciNVML(FakeNVML):
    """FakeNVML plus PCI bus ids, max clocks and persistence mode; UUIDs can be replaced per index."""

    def __init__(self, count=2, uuids=None):
        super().__init__(count=count)
        self.uuids = uuids or {}

    def nvmlDeviceGetUUID(self, h):
        return self.uuids.get(h, super().nvmlDeviceGetUUID(h).decode()).encode()

    def nvmlDeviceGetPciInfo(self, h):
        return SimpleNamespace(busId=f"00000000:{0x19 + h:02X}:00.0".encode())

    def nvmlDeviceGetClockInfo(self, h, kind):
        return 345 if kind == self.NVML_CLOCK_SM else 3201

    def nvmlDeviceGetMaxClockInfo(self, h, kind):
        return 1980 if kind == self.NVML_CLOCK_SM else 3201

    def nvmlDeviceGetPersistenceMode(self, h):
        return 1


class NoGPU(FakeNVML):
    def nvmlDeviceGetCount(self):
        return 0


class BrokenNVML(FakeNVML):
    """Every per-device call fails (a driver that answers nothing)."""

    def __getattribute__(self, name):
        if name.startswith("nvmlDevice") and name not in ("nvmlDeviceGetCount", "nvmlDeviceGetHandleByIndex"):
            def fail(*a):
                raise RuntimeError("NVML_ERROR_UNKNOWN")
            return fail
        return super().__getattribute__(name)


def test_fake_cpuinfo_parsed(tmp_path):
    c = host.fingerprint(NoGPU(), fake_root(tmp_path))["cpu"]
    assert c["model_name"] == "Intel(R) Xeon(R) Processor" and c["vendor"] == "GenuineIntel"
    assert (c["family"], c["model"], c["stepping"]) == ("6", "143", "8")
    assert (c["mhz_mean"], c["mhz_min"], c["mhz_max"], c["mhz_from"]) == (2300.5, 2000.0, 2601.0, "cpuinfo")
    assert c["flags_sha"] == sha12("avx fpu hypervisor sse") and c["flags_count"] == 4 and c["hypervisor"] is True
    assert c["logical_cpus"] == 2 and c["ram_total_gib"] == 3.0 and c["kernel"] == "6.1.0-test"
    assert c["affinity_cpus"] >= 1


def test_flags_hash_ignores_order_and_duplicates():
    expect = sha12("avx fpu sse")
    assert host.flags_hash(["sse", "avx", "fpu", "avx"]) == host.flags_hash(["fpu", "sse", "avx"]) == expect
    assert host.flags_hash(["avx", "fpu"]) != host.flags_hash(["avx", "fpu", "sse"]) and host.flags_hash([]) is None


def test_arm_cpuinfo_and_missing_files(tmp_path):
    arm = ("processor\t: 0\nBogoMIPS\t: 2000.00\nFeatures\t: fp asimd sve\nCPU implementer\t: 0x41\n"
           "CPU architecture: 8\nCPU variant\t: 0x0\nCPU part\t: 0xd4f\nCPU revision\t: 0\n")
    root = fake_root(tmp_path, cpuinfo=arm)
    for i, khz in enumerate((3_100_000, 3_300_000)):
        f = root / f"sys/devices/system/cpu/cpu{i}/cpufreq/scaling_cur_freq"
        f.parent.mkdir(parents=True)
        f.write_text(f"{khz}\n")
    c = host.cpu(root)
    assert (c["vendor"], c["family"], c["model"], c["stepping"]) == ("0x41", "8", "0xd4f", "0")
    assert c["flags_sha"] == sha12("asimd fp sve") and c["hypervisor"] is False
    assert (c["mhz_mean"], c["mhz_min"], c["mhz_max"], c["mhz_from"]) == (3200.0, 3100.0, 3300.0, "cpufreq")
    # An empty tree: every field None (no exception), the host id too.
    empty = tmp_path / "empty"
    empty.mkdir()
    fp = host.fingerprint(NoGPU(), empty)
    assert fp["host_id"] is None and fp["host_id_from"] == [] and fp["gpus"] == []
    assert all(fp["cpu"][k] is None for k in ("model_name", "vendor", "flags_sha", "mhz_mean", "ram_total_gib",
                                               "kernel", "logical_cpus"))


def test_host_id_is_a_hash_of_machine_boot_and_gpus(tmp_path, monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    u0, u1 = "GPU-00000000-aaaa-bbbb-cccc-dddddddddddd", "GPU-00000001-aaaa-bbbb-cccc-dddddddddddd"
    expect = sha12(f"machine-id=0123abcd\nboot-id=boot-1\ngpu={u0},00000000:19:00.0\ngpu={u1},00000000:1A:00.0")
    fp = host.fingerprint(PciNVML(), fake_root(tmp_path / "a"))
    assert fp["host_id"] == expect
    assert fp["host_id_from"] == ["/etc/machine-id", "/proc/sys/kernel/random/boot_id", "nvml:gpu_uuid x2",
                                  "nvml:pci_bus_id x2"]
    # Stable: the same inputs (another tree, another NVML object) give the same id.
    assert host.fingerprint(PciNVML(), fake_root(tmp_path / "b"))["host_id"] == expect
    # The dbus copy of machine-id stands in for /etc's.
    fp_dbus = host.fingerprint(PciNVML(), fake_root(tmp_path / "c", dbus=True))
    assert fp_dbus["host_id"] == expect and fp_dbus["host_id_from"][0] == "/var/lib/dbus/machine-id"
    # Another boot, or another GPU in the box: another id.
    rebooted = host.fingerprint(PciNVML(), fake_root(tmp_path / "d", boot_id="boot-2"))["host_id"]
    assert rebooted == sha12(f"machine-id=0123abcd\nboot-id=boot-2\ngpu={u0},00000000:19:00.0\n"
                             f"gpu={u1},00000000:1A:00.0") != expect
    swapped = host.fingerprint(PciNVML(uuids={1: "GPU-ffffffff"}), fake_root(tmp_path / "e"))["host_id"]
    assert swapped == sha12(f"machine-id=0123abcd\nboot-id=boot-1\ngpu={u0},00000000:19:00.0\n"
                            "gpu=GPU-ffffffff,00000000:1A:00.0") != expect
    # No machine-id (a bare container): boot id and GPUs only.
    fp_none = host.fingerprint(NoGPU(), fake_root(tmp_path / "f", machine_id=None))
    assert fp_none["host_id"] == sha12("boot-id=boot-1")
    assert fp_none["host_id_from"] == ["/proc/sys/kernel/random/boot_id"]


def test_gpu_fields_and_visible_devices(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    fp = host.fingerprint(PciNVML(count=2), fake_root(tmp_path))
    assert fp["gpu_count_host"] == 2 and fp["gpus"] == [{
        "index": 1, "uuid": "GPU-00000001-aaaa-bbbb-cccc-dddddddddddd", "pci_bus_id": "00000000:1A:00.0",
        "sm_clock_mhz": 345, "sm_clock_max_mhz": 1980, "mem_clock_mhz": 3201, "mem_clock_max_mhz": 3201,
        "power_limit_w": 700.0, "persistence_mode": True}]
    assert "nvml:gpu_uuid x2" in fp["host_id_from"]  # the id covers the whole box, not only this run's GPU
    # The plain fake has no PCI info, max clocks or persistence mode: None, and the id from UUIDs alone.
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    (g,) = host.fingerprint(FakeNVML(), fake_root(tmp_path / "p"))["gpus"]
    assert g["pci_bus_id"] is None and g["sm_clock_max_mhz"] is None and g["persistence_mode"] is None
    assert g["sm_clock_mhz"] == 1980 and g["power_limit_w"] == 700.0
    # A driver whose device calls all fail: no exception, every field None.
    (b,) = host.fingerprint(BrokenNVML(), fake_root(tmp_path / "q"))["gpus"]
    assert b == {"index": 0, **{k: None for k in g if k != "index"}}


def test_probe_on_cpu_gives_positive_numbers_within_budget():
    budget = 15.0
    p = host.probe("cpu", budget_s=budget)
    assert p["device"] == "cpu" and p["truncated"] is False and 0 < p["seconds"] <= budget + 1
    loop, disp, lora = p["python_loop"], p["dispatch"], p["lora_step"]
    assert (loop["unit"], disp["unit"], lora["unit"]) == ("ns/iter", "us/op", "ms/iter")
    assert loop["reps"] == 3 and disp["reps"] == 3 and lora["iters"] == 20 and lora["warmup"] == 3
    assert (lora["in"], lora["out"], lora["rank"], lora["tokens"], lora["dtype"]) == (512, 512, 8, 128, "float32")
    assert 1 < loop["value"] < 10_000 and 0 < disp["value"] < 10_000 and 0 < lora["value"] < 10_000
    # The total covers what was measured: 3 loop reps of at least the best time, 3 x 2000 ops, 20 LoRA steps
    # of which at least half took the median or longer.
    floor_s = (3 * loop["value"] * 2_000_000 / 1e9 + 3 * 2000 * disp["value"] / 1e6 + 10 * lora["value"] / 1e3)
    assert p["seconds"] >= floor_s * 0.99


def test_probe_truncated_by_a_tiny_budget():
    t = time.perf_counter()
    p = host.probe("cpu", budget_s=0.0)
    assert time.perf_counter() - t < 0.5 and p["truncated"] is True and p["seconds"] < 0.5
    assert all(p[k]["value"] is None and p[k]["reason"] == "budget spent" for k in ("python_loop", "dispatch",
                                                                                    "lora_step"))
    # A budget one loop repetition overruns: that repetition finishes, nothing else starts.
    p = host.probe("cpu", budget_s=0.01)
    assert p["truncated"] is True and p["python_loop"]["reps"] == 1 and p["python_loop"]["value"] > 0
    assert p["dispatch"]["value"] is None and p["lora_step"]["value"] is None
    assert p["seconds"] < 0.01 + 1.0


def test_probe_in_a_child_process():
    p = host.probe_in_child("cpu", budget_s=0.0)  # budget 0: the child never imports torch (fast)
    assert p["process"] == "child" and p["truncated"] is True and p["python_loop"]["reason"] == "budget spent"


def test_record_routes_the_probe(tmp_path, monkeypatch):
    root = fake_root(tmp_path)
    calls = []
    monkeypatch.setattr(host, "probe", lambda device, budget_s: calls.append(("in", device)) or {"p": 1})
    monkeypatch.setattr(host, "probe_in_child", lambda device, budget_s: calls.append(("child", device)) or {"c": 1})
    monkeypatch.setattr(host, "_cuda_in_child", lambda: True)
    assert host.record("h200", lib=NoGPU(), root=root)["probe"] == {"c": 1}
    assert host.record("cpu", lib=NoGPU(), root=root)["probe"] == {"p": 1}
    monkeypatch.setattr(host, "_cuda_in_child", lambda: False)  # no GPU torch can see: measured in-process
    assert host.record("h200", lib=NoGPU(), root=root)["probe"] == {"p": 1}
    r = host.record("h200", lib=NoGPU(), root=root, run_probe=False)
    assert r["probe"] is None and r["fingerprint"]["host_id"] == sha12("machine-id=0123abcd\nboot-id=boot-1")
    assert calls == [("child", "cuda"), ("in", "cpu"), ("in", "cuda")]


def test_environment_has_the_host_record(monkeypatch):
    monkeypatch.delenv("SWIFTBENCH_HOST_PROBE", raising=False)
    env = gpu.environment("cpu", lib=NoGPU())
    assert env["hw"] == "cpu" and set(env["host"]) == {"fingerprint", "probe"}
    fp, p = env["host"]["fingerprint"], env["host"]["probe"]
    assert fp == {**host.fingerprint(NoGPU()), "cpu": fp["cpu"]} and fp["cpu"]["flags_sha"] == host.cpu()["flags_sha"]
    mid, boot = (Path(f) for f in ("/etc/machine-id", "/proc/sys/kernel/random/boot_id"))
    if mid.is_file() and boot.is_file():  # this machine's id, by hand
        assert fp["host_id"] == sha12(f"machine-id={mid.read_text().strip()}\nboot-id={boot.read_text().strip()}")
    assert p["device"] == "cpu" and p["python_loop"]["value"] > 0 and p["lora_step"]["value"] > 0
    # On a GPU label the probe is off with SWIFTBENCH_HOST_PROBE=0; the fingerprint lists the fake's GPU.
    monkeypatch.setenv("SWIFTBENCH_HOST_PROBE", "0")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    env = gpu.environment("h200", lib=PciNVML(count=1))
    assert env["host"]["probe"] is None and env["gpu_name"] == "NVIDIA H200"
    assert env["host"]["fingerprint"]["gpus"][0]["pci_bus_id"] == "00000000:19:00.0"
