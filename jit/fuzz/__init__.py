"""Generators of random kernels for differential testing (compiled vs interpreted) and frontend fuzzing."""
