"""The shared engine of every search: lattice, frequency table, evaluator, roll-up."""
