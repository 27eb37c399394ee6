"""The backward-selection engine (paper 3.3, S5): :mod:`.backselect` (BackSelect: exact, gradient and
pruned, CPU and GPU, log-odds), :mod:`.sis` (FindSIS, pixel subsets) and :mod:`.runner` (resumable,
sharded runs in the artifact store). Model + images in, tensors out; imports the zoo for models only."""
