"""The methods around overinterpretation as tensors-in, tensors-out functions (Shared Interest, input
reduction, Bayes-TrEx): a model and images in, tensors out; no artifact store, no run context."""
