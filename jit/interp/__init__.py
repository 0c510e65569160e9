"""The numpy interpreter of the tile IR (see jit.interpreter for the entry points)."""
