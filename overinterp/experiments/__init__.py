"""The paper's experiments and related methods as cached runs: each function takes a
:class:`overinterp.config.context.Run` and computes what the artifact store lacks, so chapters and the command
line share models and selections. :mod:`.runs` holds the zoo's runs; the others, one chapter each."""
