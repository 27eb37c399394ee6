"""The chapter book/13_speed's former display module: now :mod:`overinterp.pages.speed` itself (an alias)."""
import sys

from overinterp.pages import speed

sys.modules[__name__] = speed
