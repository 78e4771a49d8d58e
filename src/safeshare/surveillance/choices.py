"""The fixed sets of values of the ``safeshare surveil`` options, declared once.

The command line shows them as choices (``--layout <long|jhu>``) and the use cases of
:mod:`safeshare.workflows.surveil` take them as the same ``Literal`` types; the run-time checks
(a Python caller may pass any text) read the values from here too. Import-light: the command
line imports this module before anything heavy.
"""

from __future__ import annotations

from typing import Literal, get_args

#: The case series layouts: ``long`` (region,date,cases) or ``jhu`` (a JHU CSSE time series table).
Layout = Literal["long", "jhu"]
#: The risk a policy is searched for: PK_k of one window of cases, or the marketer risk of all the
#: records released so far (the paper's supplement).
RiskName = Literal["pk", "marketer"]
#: How ``surveil select`` chooses: ``window`` (PK of each lagging window, from the forecast) or
#: ``cumulative`` (the supplement's marketer approach).
Approach = Literal["window", "cumulative"]
#: Lagging windows of no cases in the weekly minimum of daily releases: dropped (the paper's code) or kept.
ZeroWindows = Literal["drop", "keep"]
#: The engines that read and write the case records of ``surveil release``.
ReleaseEngine = Literal["memory", "duckdb"]
#: The file format of the released periods.
ReleaseFormat = Literal["csv", "parquet"]

LAYOUTS: tuple[str, ...] = get_args(Layout)
RISKS: tuple[str, ...] = get_args(RiskName)
APPROACHES: tuple[str, ...] = get_args(Approach)
ZERO_WINDOWS: tuple[str, ...] = get_args(ZeroWindows)
RELEASE_ENGINES: tuple[str, ...] = get_args(ReleaseEngine)
RELEASE_FORMATS: tuple[str, ...] = get_args(ReleaseFormat)
