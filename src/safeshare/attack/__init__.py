"""Re-identification attacks on a written release (issue 34): the release is read as its recipient
reads it, attacked with an identified frame, and the attacks are scored against the custodian's
input.

* :mod:`~safeshare.attack.view`: the release's labels and which records are consistent with them;
* :mod:`~safeshare.attack.truth`: which input record each released row is (the custodian's side);
* :mod:`~safeshare.attack.exact`: exact matching on the generalized QIs (its expectation is B);
* :mod:`~safeshare.attack.linkage`: Gower distance, one-to-one assignment, blocked and bounded;
* :mod:`~safeshare.attack.residual`: singling out, linkability, inference over a control set;
* :mod:`~safeshare.attack.stats`: Wilson intervals and residual risks;
* :mod:`~safeshare.attack.result`: the one result object (report.json, report.html, terminal).

The use case is :func:`safeshare.workflows.attack.attack` (``safeshare attack``, ``api.attack``).
"""
