"""Experiments that reproduce published papers' results: the Omega paper's
CSS comparison (``css_compare``) and the findings the reproduction suite
checks (``findings``, ``findings_sampling``). They name the architectures
the papers studied, as a paper does; the generic code they run on
(``schedlab.api``, the sweep, the summary) names none."""
