"""What a run ran on: NVML sampling, GPM busy shares, the host fingerprint, the environment record (env.json),
interconnect bandwidth."""
