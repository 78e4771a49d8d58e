"""The generalization lattice and predictive tagging."""

from safeshare.lattice.lattice import FAILED, SATISFIED, UNKNOWN, Lattice, Node, TagStore

__all__ = ["FAILED", "SATISFIED", "UNKNOWN", "Lattice", "Node", "TagStore"]
