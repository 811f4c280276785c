"""Stage 6, presentation: tables, figures and the report page; formatting of what lower stages return, no statistics."""
