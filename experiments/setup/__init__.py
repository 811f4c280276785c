"""Host set-up: the air-gapped GPU host's wheel set and its offline install."""
