"""Placeholder replaced below."""
PRESETS = {}
