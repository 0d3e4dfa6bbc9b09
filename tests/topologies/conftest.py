"""Topologies the suite does not start itself: each test skips unless its script made it."""
