#!/usr/bin/env python3
"""Makes the bundled example: a tiny seeded CNN (Conv-BN-ReLU, MaxPool, residual block,
Conv-HardSwish, GlobalAveragePool, Linear, Softmax) exported to ONNX opset 17, and one input.
Run with Debian's /usr/bin/python3 (python3-torch). The outputs are committed; rerun only to
change the example."""
import os
import sys

import numpy as np
import torch
from torch import nn


class TinyCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU())
        self.pool = nn.MaxPool2d(2)
        self.block = nn.Sequential(nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 16, 3, padding=1))
        self.head = nn.Sequential(nn.Conv2d(16, 32, 1), nn.Hardswish(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))

    def forward(self, x):
        x = self.pool(self.stem(x))
        x = torch.relu(x + self.block(x))
        return torch.softmax(self.head(x), dim=1)


def main(out_dir):
    torch.manual_seed(0)
    model = TinyCNN().eval()
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
    x = torch.rand(1, 3, 32, 32)
    torch.onnx.export(model, x, os.path.join(out_dir, "tiny_cnn.onnx"), opset_version=17,
                      input_names=["input"], output_names=["probabilities"],
                      dynamic_axes={"input": {0: "batch"}, "probabilities": {0: "batch"}})
    np.save(os.path.join(out_dir, "tiny_cnn_input.npy"), x.numpy())
    with torch.no_grad():
        np.save(os.path.join(out_dir, "tiny_cnn_expected.npy"), model(x).numpy())


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__)))
