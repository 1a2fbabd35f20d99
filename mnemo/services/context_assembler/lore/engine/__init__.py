"""SillyTavern World Info activation: compiled keys, scanning, groups, timed effects, placement. Pure."""
