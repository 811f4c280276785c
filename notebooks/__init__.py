"""The report notebook (report.ipynb, written by make_report_notebook.py) that analysis.present.report executes."""
