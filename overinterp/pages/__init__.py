"""What a reader sees: each experiment's tables and glued values in a module named after it (:mod:`.subsets`,
:mod:`.runs`, ...), the figures (:mod:`.plots` and the ``*_plots`` modules), what chapters call (:mod:`.chapter`),
the report page (``report*``), the quiz, benchmark readers, exercises, and building the book (:mod:`.build`)."""
