"""L5: the tracer: proxy tensors, the TorchFunctionMode, handlers and graph building."""
