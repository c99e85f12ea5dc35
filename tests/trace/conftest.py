from tests.e2e.tier_kit import backend, launch  # noqa: F401 - the tier stories' fixtures
