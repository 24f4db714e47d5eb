"""The JSON Schemas of evaltape's file formats (data files only; read by ``evaltape.grader.formats``)."""
