"""Book machinery: building the book (:mod:`.build`), what chapters call (:mod:`.chapter`), the figures
(:mod:`.plots` and the ``*_plots`` modules), the report page (``report*``), the human-benchmark quiz
(:mod:`.quiz`), benchmark readers (:mod:`.speed`, :mod:`.instructors`, :mod:`.scale`) and exercises."""
