#!/usr/bin/env python3
"""Writes tests/fixtures/distill_kl.safetensors: distillation's loss and gradients on a tiny
case, computed by PyTorch's own kl_div and cross_entropy with autograd, so the C++ test checks
lmforge's fused head (kernels/lm_head_loss.h, SoftTargets) against an independent reference.

  x (N, C), wte (V, C): the student's head input and tied embedding
  targets (N) int32; teacher_logits (N, V); teacher_logp (N, V) = log_softmax(teacher / T)
  params: temperature, task_weight, kl_weight, dloss
  ce (N), kl (N) = T^2 * KL(p_teacher || softmax(z / T)) per row
  dx, dwte: gradients of dloss * sum(task_weight * ce + kl_weight * kl)

    pip install torch==2.13.0 safetensors && python3 tools/make_distill_fixture.py
"""
import os

import torch
import torch.nn.functional as F
from safetensors.torch import save_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
N, C, V = 5, 7, 19
TEMPERATURE, TASK_WEIGHT, KL_WEIGHT, DLOSS = 2.0, 0.5, 0.7, 0.25


def main():
    torch.manual_seed(12)
    # Inputs drawn in float32 and widened, so the test's float32 copies are exactly these.
    x = torch.randn(N, C).double().requires_grad_()
    wte = torch.randn(V, C).double().requires_grad_()
    targets = torch.randint(0, V, (N,))
    teacher = (2.0 * torch.randn(N, V)).double()
    teacher_logp = F.log_softmax(teacher / TEMPERATURE, dim=-1)
    z = x @ wte.T
    ce = F.cross_entropy(z, targets, reduction="none")
    student_logq = F.log_softmax(z / TEMPERATURE, dim=-1)
    kl = TEMPERATURE ** 2 * F.kl_div(student_logq, teacher_logp, log_target=True, reduction="none").sum(-1)
    (DLOSS * (TASK_WEIGHT * ce + KL_WEIGHT * kl).sum()).backward()
    f32 = lambda t: t.detach().to(torch.float32).contiguous()
    tensors = {"x": f32(x), "wte": f32(wte), "targets": targets.to(torch.int32), "teacher_logits": f32(teacher),
               "teacher_logp": f32(teacher_logp), "ce": f32(ce), "kl": f32(kl), "dx": f32(x.grad),
               "dwte": f32(wte.grad),
               "params": torch.tensor([TEMPERATURE, TASK_WEIGHT, KL_WEIGHT, DLOSS], dtype=torch.float32)}
    out = os.path.join(ROOT, "tests", "fixtures", "distill_kl.safetensors")
    save_file(tensors, out)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
