"""The paper's experiments and the related methods' as cached runs for the chapters: each function
takes a :class:`overinterp.config.context.Run`, computes what is missing and keeps it in the artifact
store, so chapters (and the command line) share models and backward selections. :mod:`.runs` holds
the zoo's runs (models, selections, backward selections, subsets, retraining); the others, one
chapter's experiments each."""
