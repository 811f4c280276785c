"""Other machines: SkyPilot fleet jobs and the device-call scripts that batch runs on a lent GPU."""
