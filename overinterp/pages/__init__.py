"""Book machinery: building the book (:mod:`.build`), what a chapter's cells call around the library
(:mod:`.chapter`: the opening box, glue, figures), the figures (:mod:`.plots`, :mod:`.factor_plots`,
:mod:`.sis_size_plots`, :mod:`.imagenet_plots`, :mod:`.related_plots`),
the human-benchmark quiz (:mod:`.quiz`), the benchmark readers (:mod:`.speed`, :mod:`.instructors`), the
values the exercises paste (:mod:`.exercises`) and the audit of the rendered pages (:mod:`.audit`)."""
