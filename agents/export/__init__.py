"""Export: a trained policy as one file (ONNX, TorchScript), runnable without torch, and RL Zoo hyper-parameter files."""
