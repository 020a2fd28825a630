#!/usr/bin/env python3
"""The pytest suite's model: a small seeded CNN with the seed's input size (224 x 224 x 3:
Conv-BN-ReLU stride 2, Conv-ReLU stride 2, a residual Conv block, GlobalAveragePool, Linear),
exported to ONNX opset 17 with input "input" [1, 3, 224, 224]. Run with Debian's
/usr/bin/python3 (python3-torch); a subprocess of the suite, so that torch's protobuf never
shares a process with the bindings.

    make_model.py OUT.onnx
"""
import sys

import torch
from torch import nn


class SmallCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1, bias=False),
                                  nn.BatchNorm2d(8), nn.ReLU())
        self.down = nn.Sequential(nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.ReLU())
        self.block = nn.Conv2d(16, 16, 3, padding=1)
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.down(self.stem(x))
        x = torch.relu(x + self.block(x))
        return self.head(x)


def main(out: str) -> None:
    torch.manual_seed(0)
    model = SmallCNN().eval()
    with torch.no_grad():
        bn = model.stem[1]
        bn.running_mean.uniform_(-0.2, 0.2)
        bn.running_var.uniform_(0.5, 2.0)
    torch.onnx.export(model, torch.rand(1, 3, 224, 224), out, opset_version=17,
                      input_names=["input"], output_names=["output"])


if __name__ == "__main__":
    main(sys.argv[1])
