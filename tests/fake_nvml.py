"""A stand-in for the pynvml module with one scripted GPU, for testing the GPU-only paths on a CPU."""
from types import SimpleNamespace


class FakeNVML:
    NVML_CLOCK_SM = 1
    NVML_CLOCK_MEM = 2
    NVML_TEMPERATURE_GPU = 0
    nvmlClocksThrottleReasonGpuIdle = 0x1
    nvmlClocksThrottleReasonSwPowerCap = 0x4
    nvmlClocksThrottleReasonHwSlowdown = 0x8
    nvmlClocksThrottleReasonAll = 0xFF

    def __init__(self, name="NVIDIA H200", count=1, energy_step_mj=150_000, power_mw=150_000, has_energy=True):
        self.name, self.count = name, count
        self.energy_mj = {}  # per GPU handle: millijoules since "driver load"
        self.energy_step_mj, self.power_mw, self.has_energy = energy_step_mj, power_mw, has_energy
        self.calls = 0

    def nvmlInit(self):
        pass

    def nvmlDeviceGetCount(self):
        return self.count

    def nvmlDeviceGetHandleByIndex(self, i):
        return i

    def nvmlDeviceGetUUID(self, h):
        return f"GPU-0000000{h}-aaaa-bbbb-cccc-dddddddddddd".encode()

    def nvmlDeviceGetName(self, h):
        return self.name.encode()

    def nvmlDeviceGetMemoryInfo(self, h):
        return SimpleNamespace(total=143771 * 2**20, used=18000 * 2**20, free=0)

    def nvmlDeviceGetEnforcedPowerLimit(self, h):
        return 700_000

    def nvmlSystemGetDriverVersion(self):
        return "580.159.04"

    def nvmlSystemGetCudaDriverVersion(self):
        return 13000

    def nvmlDeviceGetUtilizationRates(self, h):
        return SimpleNamespace(gpu=17, memory=5)

    def nvmlDeviceGetPowerUsage(self, h):
        return self.power_mw

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, h):
        return 0x1 | 0x4

    def nvmlDeviceGetTotalEnergyConsumption(self, h):
        if not self.has_energy:
            raise RuntimeError("NVML_ERROR_NOT_SUPPORTED")
        self.energy_mj[h] = self.energy_mj.get(h, 1_000_000) + self.energy_step_mj
        return self.energy_mj[h]

    def nvmlDeviceGetClockInfo(self, h, kind):
        return 1980 if kind == self.NVML_CLOCK_SM else 3201

    def nvmlDeviceGetTemperature(self, h, kind):
        return 41
