"""What is shown or exported: plotly figures (compute returns data, plot draws it), the offline HTML
report, safe CSV and PNG exports. Builds on every layer below ``cli``.
"""
