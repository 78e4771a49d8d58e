"""Reproductions of the thesis experiments (figures), built on the workflows."""
