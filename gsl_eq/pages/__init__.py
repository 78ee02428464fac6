"""Pages: self-contained HTML reports of what gsl_eq did, with drawings and charts as inline SVG.

- :func:`result_page`: one optimization (``OptimizeResult.to_html``, ``gsl-eq optimize --html``);
- :func:`summary_page`: many runs, one row each (a sweep's summary; rows from :func:`summary_row`);
- :func:`orderings_page`: greedy mode's rule orderings against saturation
  (``OrderingComparison.to_html``, ``gsl-eq orderings --html``).

Each returns a :class:`Page`; ``page.write(path)`` saves it. A page loads nothing from
the network and needs no script: hover texts are SVG titles.
"""

from .html import Page
from .result import MAX_NODES, op_costs, result_page
from .summary import COLUMNS, orderings_page, summary_page, summary_row

__all__ = ["COLUMNS", "MAX_NODES", "Page", "op_costs", "orderings_page", "result_page", "summary_page", "summary_row"]
