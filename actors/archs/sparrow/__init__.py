"""Sparrow and Hawk, live: node monitors, distributed and central schedulers."""
